import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { loadConfig } from '../../src/config.js';

const KEY = Buffer.alloc(32, 7).toString('base64');

describe('loadConfig()', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({});
    expect(config).to.deep.include({
      port: 3000,
      host: '127.0.0.1',
      dataDir: path.resolve('./data'),
      databaseUrl: path.resolve('./data/scribe.sqlite'),
      databaseKind: 'sqlite',
      databasePoolSize: 10,
      webConcurrency: 1,
      processRole: 'all',
      sessionSecret: undefined,
      secretsKey: undefined,
      attachmentsAllowPrivate: false,
      webhooksAllowPrivate: false,
      modelsAllowPrivate: false,
      rateLimitPerMinute: 600,
      metricsToken: undefined,
      trustProxy: false,
      publicUrl: undefined,
      logLevel: 'info',
      logFormat: 'json',
      cacheViews: true,
      openai: { baseUrl: 'https://api.openai.com/v1', apiKey: undefined, model: undefined, timeoutMs: 60_000, maxRetries: 2 },
      retention: { sessionDays: undefined, orphanFiles: false },
      http: { headersTimeoutMs: 20_000, requestTimeoutMs: 30_000 },
      shutdownTimeoutMs: 10_000,
      agentConcurrency: 100,
      smtp: undefined,
    });
    expect(Object.isFrozen(config)).to.equal(true);
  });

  it('reads every variable', () => {
    const config = loadConfig({
      PORT: '8080',
      HOST: '0.0.0.0',
      DATA_DIR: '/srv/scribe',
      DATABASE_URL: '/srv/db/s.sqlite',
      SESSION_SECRET: 'a-very-long-secret-value',
      SECRETS_KEY: KEY,
      MODELS_ALLOW_PRIVATE: 'true',
      SHUTDOWN_TIMEOUT_MS: '2500',
      ATTACHMENTS_ALLOW_PRIVATE: 'true',
      WEBHOOKS_ALLOW_PRIVATE: 'true',
      RATE_LIMIT_PER_MINUTE: '0',
      METRICS_TOKEN: 'tok',
      TRUST_PROXY: '1',
      LOG_LEVEL: 'debug',
      PUBLIC_URL: 'https://scribe.example.com/',
      OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1',
      OPENAI_API_KEY: 'sk-x',
      OPENAI_MODEL: 'llama3',
      OPENAI_TIMEOUT_MS: '5000',
      OPENAI_MAX_RETRIES: '0',
      RETENTION_SESSION_DAYS: '30',
      RETENTION_ORPHAN_FILES: 'true',
      LOG_FORMAT: 'pretty',
      READ_THREADS: '0',
      HTTP_HEADERS_TIMEOUT_MS: '5000',
      HTTP_REQUEST_TIMEOUT_MS: '15000',
      DATABASE_POOL_SIZE: '4',
      WEB_CONCURRENCY: '3',
      PROCESS_ROLE: 'worker',
      SMTP_PORT: '2525',
      SMTP_HOST: '0.0.0.0',
      SMTP_MAX_CONNECTIONS: '200',
      AGENT_CONCURRENCY: '400',
    });
    expect(config).to.deep.equal({
      port: 8080,
      host: '0.0.0.0',
      dataDir: '/srv/scribe',
      databaseUrl: '/srv/db/s.sqlite',
      databaseKind: 'sqlite',
      sessionSecret: 'a-very-long-secret-value',
      secretsKey: KEY,
      modelsAllowPrivate: true,
      shutdownTimeoutMs: 2500,
      agentConcurrency: 400,
      databasePoolSize: 4,
      webConcurrency: 3,
      processRole: 'worker',
      attachmentsAllowPrivate: true,
      webhooksAllowPrivate: true,
      rateLimitPerMinute: 0,
      metricsToken: 'tok',
      trustProxy: 1,
      publicUrl: 'https://scribe.example.com',
      logLevel: 'debug',
      logFormat: 'pretty',
      cacheViews: true,
      openai: { baseUrl: 'http://127.0.0.1:11434/v1', apiKey: 'sk-x', model: 'llama3', timeoutMs: 5000, maxRetries: 0 },
      retention: { sessionDays: 30, orphanFiles: true },
      readThreads: 0,
      http: { headersTimeoutMs: 5000, requestTimeoutMs: 15_000 },
      smtp: { port: 2525, host: '0.0.0.0', maxConnections: 200 },
    });
  });

  it("takes a postgres:// or postgresql:// DATABASE_URL as PostgreSQL, as given, and reads its pages in the server's thread", () => {
    for (const url of ['postgres://scribe@db.internal:5432/scribe', 'postgresql://scribe@db.internal/scribe?sslmode=require']) {
      const config = loadConfig({ DATABASE_URL: url, READ_THREADS: '3' });
      expect(config).to.deep.include({ databaseUrl: url, databaseKind: 'postgres', readThreads: 0 });
    }
  });

  it('refuses a DATABASE_URL with a scheme other than postgres:// or postgresql://, rather than making a SQLite file of that name', () => {
    for (const url of ['mysql://scribe@db.internal/scribe', 'file:/var/lib/scribe/scribe.sqlite', 'sqlite:scribe.sqlite', 'postgres:/scribe@db.internal/scribe', 'redis://cache']) {
      expect(() => loadConfig({ DATABASE_URL: url }), url).to.throw('Invalid configuration: DATABASE_URL must be a SQLite file path or a postgres:// URL');
    }
    // Paths, relative or absolute (a drive letter included), are SQLite files.
    for (const file of ['./data/other.sqlite', '/var/lib/scribe/scribe.sqlite', 'C:\\scribe\\scribe.sqlite', 'scribe.sqlite']) {
      expect(loadConfig({ DATABASE_URL: file }), file).to.include({ databaseKind: 'sqlite' });
    }
  });

  it('refuses a PROCESS_ROLE other than all, web or worker, and a WEB_CONCURRENCY below 1', () => {
    expect(() => loadConfig({ PROCESS_ROLE: 'cron' })).to.throw('Invalid configuration: PROCESS_ROLE must be one of all, web, worker');
    expect(() => loadConfig({ WEB_CONCURRENCY: '0' })).to.throw(/^Invalid configuration: WEB_CONCURRENCY /);
  });

  it('refuses a SECRETS_KEY that is not 32 bytes in base64', () => {
    for (const bad of [Buffer.alloc(16).toString('base64'), Buffer.alloc(33).toString('base64'), 'not base64 at all!', `${KEY}$`]) {
      expect(() => loadConfig({ SECRETS_KEY: bad }), bad).to.throw('Invalid configuration: SECRETS_KEY must be 32 bytes in base64 (openssl rand -base64 32)');
    }
    expect(loadConfig({ SECRETS_KEY: Buffer.alloc(32, 250).toString('base64url') }).secretsKey).to.equal(Buffer.alloc(32, 250).toString('base64url'));
  });

  it('keeps the headers timeout within the request timeout, as Node requires', () => {
    expect(loadConfig({ HTTP_HEADERS_TIMEOUT_MS: '60000', HTTP_REQUEST_TIMEOUT_MS: '1000' }).http).to.deep.equal({ headersTimeoutMs: 1000, requestTimeoutMs: 1000 });
  });

  it('reads entry pages in two to four threads unless READ_THREADS says otherwise', () => {
    const cores = os.availableParallelism();
    expect(loadConfig({}).readThreads).to.equal(Math.min(4, Math.max(2, cores - 1)));
    expect(loadConfig({ READ_THREADS: '3' }).readThreads).to.equal(3);
  });

  it('logs pretty and compiles views at every render under NODE_ENV=development, unless LOG_FORMAT says otherwise', () => {
    expect(loadConfig({ NODE_ENV: 'development' })).to.deep.include({ logFormat: 'pretty', cacheViews: false });
    expect(loadConfig({ NODE_ENV: 'production' })).to.deep.include({ logFormat: 'json', cacheViews: true });
    expect(loadConfig({ NODE_ENV: 'development', LOG_FORMAT: 'json' }).logFormat).to.equal('json');
    expect(loadConfig({ NODE_ENV: 'production' }).logFormat).to.equal('json');
  });

  it('treats empty values as unset', () => {
    expect(loadConfig({ PORT: '', METRICS_TOKEN: '' })).to.deep.include({ port: 3000, metricsToken: undefined });
  });

  it('keeps TRUST_PROXY lists and names as Express takes them, and refuses what Express would throw on', () => {
    expect(loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8' }).trustProxy).to.equal('loopback, 10.0.0.0/8');
    expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxy).to.equal(true);
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).to.equal(2);
    expect(loadConfig({ TRUST_PROXY: '::1,uniquelocal' }).trustProxy).to.equal('::1,uniquelocal');
    for (const value of ['bogus', 'TRUE', '10.0.0.0/33', 'loopback,,', '300.1.1.1']) {
      expect(() => loadConfig({ TRUST_PROXY: value }), value).to.throw(
        'Invalid configuration: TRUST_PROXY must be true, false, a number of hops, or addresses and subnets (loopback, 10.0.0.0/8, …) separated by commas',
      );
    }
  });

  it('reads numbers written as digits only: a blank, hexadecimal or exponent value is refused, not read as 0 or as a number', () => {
    for (const [name, value] of [
      ['PORT', ' '],
      ['PORT', '0x0BB8'],
      ['PORT', '1e3'],
      ['RATE_LIMIT_PER_MINUTE', ' '],
      ['SMTP_PORT', '\t'],
      ['SHUTDOWN_TIMEOUT_MS', ' '],
      ['AGENT_CONCURRENCY', '+5'],
    ] as const) {
      expect(() => loadConfig({ [name]: value }), `${name}=${JSON.stringify(value)}`).to.throw(new RegExp(`^Invalid configuration: ${name} must be a (port|whole) number`));
    }
    expect(loadConfig({ PORT: '08080', RATE_LIMIT_PER_MINUTE: '0', SHUTDOWN_TIMEOUT_MS: ' 2000 ' })).to.deep.include({
      port: 8080,
      rateLimitPerMinute: 0,
      shutdownTimeoutMs: 2000,
    });
  });

  it('takes AGENT_CONCURRENCY from 1 to 10000 runs in flight, and refuses others with the allowed range', () => {
    expect(loadConfig({ AGENT_CONCURRENCY: '1' }).agentConcurrency).to.equal(1);
    expect(loadConfig({ AGENT_CONCURRENCY: '10000' }).agentConcurrency).to.equal(10_000);
    for (const value of ['0', '10001', '-5']) expect(() => loadConfig({ AGENT_CONCURRENCY: value })).to.throw('Invalid configuration: AGENT_CONCURRENCY must be from 1 to 10000');
    for (const value of ['2.5', 'lots']) expect(() => loadConfig({ AGENT_CONCURRENCY: value })).to.throw('Invalid configuration: AGENT_CONCURRENCY must be a whole number');
  });

  const bad: Array<[string, string]> = [
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['ATTACHMENTS_ALLOW_PRIVATE', 'sometimes'],
    ['WEBHOOKS_ALLOW_PRIVATE', 'yes please'],
    ['RATE_LIMIT_PER_MINUTE', '1.5'],
    ['LOG_LEVEL', 'verbose'],
    ['SESSION_SECRET', 'short'],
    ['OPENAI_BASE_URL', 'ftp://models.local'],
    ['OPENAI_BASE_URL', 'not a url'],
    ['PUBLIC_URL', 'scribe.example.com'],
    ['PUBLIC_URL', 'ftp://scribe.example.com'],
    ['OPENAI_TIMEOUT_MS', 'soon'],
    ['OPENAI_MAX_RETRIES', '-1'],
    ['RETENTION_SESSION_DAYS', '0'],
    ['RETENTION_ORPHAN_FILES', 'maybe'],
    ['LOG_FORMAT', 'xml'],
    ['READ_THREADS', '-1'],
    ['READ_THREADS', '65'],
    ['READ_THREADS', 'many'],
    ['HTTP_HEADERS_TIMEOUT_MS', '50'],
    ['HTTP_REQUEST_TIMEOUT_MS', 'never'],
  ];
  for (const [name, value] of bad) {
    it(`rejects ${name}=${value}, naming the variable`, () => {
      expect(() => loadConfig({ [name]: value })).to.throw(new RegExp(`^Invalid configuration: ${name} `));
    });
  }
});
