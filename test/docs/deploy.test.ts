import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { DRAIN_TIMEOUT_MS } from '../../src/server.js';
import { loadConfig } from '../../src/config.js';
import { onlyOn } from '../helpers/databases.js';
import { allBlocks, markedBlocks } from '../helpers/docs.js';
import { tempDir } from '../helpers/harness.js';

const run = promisify(execFile);
const DEPLOY = fileURLToPath(new URL('../../docs/deploy.md', import.meta.url));

/** `Key=Value` settings of a unit file, by key (the last one wins, as in systemd). */
function unitSettings(unit: string): Map<string, string> {
  return new Map([...unit.matchAll(/^(\w+)=(.*)$/gm)].map((m) => [m[1]!, m[2]!.trim()]));
}

/** A program's path, in the sbin folders too (they are not on every user's PATH). */
function binary(name: string): string {
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter), '/usr/sbin', '/sbin'];
  return dirs.map((dir) => path.join(dir, name)).find((file) => fs.existsSync(file)) ?? name;
}

// The files are the same whatever the database: one run checks them.
onlyOn('sqlite')('docs/deploy.md configuration files', function () {
  this.timeout(20_000);

  it('has a systemd unit that systemd-analyze verify accepts: Type=simple, restart on failure, the environment file, SIGTERM and a stop timeout above the drain', async () => {
    const [unit] = markedBlocks(DEPLOY, 'systemd-unit', 'ini');
    const settings = unitSettings(unit!);
    expect(Object.fromEntries(['Type', 'Restart', 'EnvironmentFile', 'KillSignal', 'ExecStart'].map((key) => [key, settings.get(key)]))).to.deep.equal({
      Type: 'simple',
      Restart: 'on-failure',
      EnvironmentFile: '/etc/scribe.env',
      KillSignal: 'SIGTERM',
      ExecStart: '/usr/bin/node dist/main.js',
    });
    // Requests and agent work in flight get their drains (at the same time); the database closes after them: systemd must not cut that short.
    expect(Number(settings.get('TimeoutStopSec')) * 1000).to.be.at.least(Math.max(DRAIN_TIMEOUT_MS, loadConfig({}).shutdownTimeoutMs) + 10_000);

    const dir = tempDir('scribe-unit-');
    const file = path.join(dir, 'scribe.service');
    // verify checks that ExecStart's program exists: the node running this, where Node lives elsewhere.
    fs.writeFileSync(file, fs.existsSync('/usr/bin/node') ? unit! : unit!.replace('/usr/bin/node ', `${process.execPath} `));
    // It exits 0 even for keys and values it ignores; those it names on stderr.
    const { stdout, stderr } = await run(binary('systemd-analyze'), ['verify', '--man=no', file], { cwd: dir });
    expect(stdout + stderr).to.equal('');
  });

  it('has nginx examples that nginx -t accepts, passing task and session event streams through unbuffered with a long read timeout', async () => {
    const sites = allBlocks(DEPLOY, 'nginx');
    expect(sites).to.have.length(2);
    const dir = tempDir('scribe-nginx-');
    // The certificates the examples name, made up for the check.
    const cert = path.join(dir, 'cert.pem');
    const key = path.join(dir, 'key.pem');
    await run('openssl', [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=scribe.example.com',
      '-keyout',
      key,
      '-out',
      cert,
    ]);

    for (const [i, site] of sites.entries()) {
      const streams = /location ~ \^\/api\/v1\/\(tasks\|sessions\)\/\[\^\/\]\+\/events\$ \{([^}]*)\}/.exec(site)?.[1];
      expect(streams, `example ${i + 1} has a location for event streams`).to.be.a('string');
      expect(streams)
        .to.match(/proxy_buffering off;/)
        .and.to.match(/proxy_read_timeout 1h;/);

      const siteFile = path.join(dir, `site-${i}.conf`);
      fs.writeFileSync(
        siteFile,
        site.replaceAll(/\/etc\/letsencrypt\/live\/scribe\.example\.com\/(fullchain|privkey)\.pem/g, (_, name: string) => (name === 'fullchain' ? cert : key)),
      );
      const main = path.join(dir, `nginx-${i}.conf`);
      fs.writeFileSync(main, `pid ${dir}/nginx.pid;\nevents {}\nhttp {\n  access_log off;\n  include ${siteFile};\n}\n`);
      const { stderr } = await run(binary('nginx'), ['-t', '-q', '-p', dir, '-e', 'stderr', '-c', main]).catch((err: { stderr: string; message: string }) => {
        throw new Error(`nginx -t refused example ${i + 1}: ${err.message}\n${err.stderr}`);
      });
      expect(stderr, `example ${i + 1}`).to.equal('');
    }
  });
});
