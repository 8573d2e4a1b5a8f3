import path from 'node:path';
import { expect } from 'chai';
import { loadConfig } from '../../src/config.js';

describe('loadConfig()', () => {
  it('applies the contract\'s defaults', () => {
    const config = loadConfig({});
    expect(config).to.deep.include({
      port: 3000,
      host: '127.0.0.1',
      dataDir: path.resolve('./data'),
      databaseFile: path.resolve('./data/scribe.sqlite'),
      sessionSecret: undefined,
      attachmentsAllowPrivate: false,
      rateLimitPerMinute: 600,
      metricsToken: undefined,
      trustProxy: false,
      logLevel: 'info',
    });
    expect(Object.isFrozen(config)).to.equal(true);
  });

  it('reads every variable', () => {
    const config = loadConfig({
      PORT: '8080', HOST: '0.0.0.0', DATA_DIR: '/srv/scribe', DATABASE_URL: '/srv/db/s.sqlite', SESSION_SECRET: 'a-very-long-secret-value',
      ATTACHMENTS_ALLOW_PRIVATE: 'true', RATE_LIMIT_PER_MINUTE: '0', METRICS_TOKEN: 'tok', TRUST_PROXY: '1', LOG_LEVEL: 'debug',
    });
    expect(config).to.deep.equal({
      port: 8080, host: '0.0.0.0', dataDir: '/srv/scribe', databaseFile: '/srv/db/s.sqlite', sessionSecret: 'a-very-long-secret-value',
      attachmentsAllowPrivate: true, rateLimitPerMinute: 0, metricsToken: 'tok', trustProxy: 1, logLevel: 'debug',
    });
  });

  it('treats empty values as unset', () => {
    expect(loadConfig({ PORT: '', METRICS_TOKEN: '' })).to.deep.include({ port: 3000, metricsToken: undefined });
  });

  it('keeps TRUST_PROXY lists and names as Express takes them', () => {
    expect(loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8' }).trustProxy).to.equal('loopback, 10.0.0.0/8');
    expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxy).to.equal(true);
  });

  const bad: Array<[string, string]> = [
    ['PORT', 'abc'], ['PORT', '70000'], ['ATTACHMENTS_ALLOW_PRIVATE', 'sometimes'], ['RATE_LIMIT_PER_MINUTE', '1.5'],
    ['LOG_LEVEL', 'verbose'], ['SESSION_SECRET', 'short'],
  ];
  for (const [name, value] of bad) {
    it(`rejects ${name}=${value}, naming the variable`, () => {
      expect(() => loadConfig({ [name]: value })).to.throw(new RegExp(`^Invalid configuration: ${name} `));
    });
  }
});
