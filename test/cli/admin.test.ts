import { expect } from 'chai';
import { cliInstall, runAdmin, runAdminProcess } from '../helpers/cli.js';
import { installEnv, openInstall } from '../helpers/databases.js';
import { tempDir } from '../helpers/harness.js';
import { verifyPassword } from '../../src/users/passwords.js';
import { tokenHash } from '../../src/lib/token-hash.js';
import { openSecretBox } from '../../src/secrets/keys.js';

describe('the admin CLI', function () {
  this.timeout(60_000);
  const cli = cliInstall();
  const { admin, json, dir, withInput, expectJson } = cli;
  let orgId: string;

  it('org create prints {id, name}', async () => {
    const org = await json('org', 'create', '--name', 'Acme');
    expect(Object.keys(org)).to.deep.equal(['id', 'name']);
    expect(org.name).to.equal('Acme');
    orgId = org.id;
  });

  it('key create prints {id, key} and stores only the hash; key revoke prints {id, revoked: true}', async () => {
    const key = await json('key', 'create', '--org', orgId, '--name', 'CI');
    expect(Object.keys(key)).to.deep.equal(['id', 'key']);
    const db = await openInstall(dir);
    try {
      const row = await db('api_keys').where({ id: key.id }).first();
      expect(row).to.include({ key_hash: tokenHash(key.key), name: 'CI', revoked_at: null });
      expect(await json('key', 'revoke', '--id', key.id)).to.deep.equal({ id: key.id, revoked: true });
      expect((await db('api_keys').where({ id: key.id }).first()).revoked_at).to.be.a('string');
    } finally {
      await db.destroy();
    }
  });

  it('scribe create defaults to active; scribe set-state changes it', async () => {
    const scribe = await json('scribe', 'create', '--org', orgId, '--slug', 'atlas', '--name', 'Atlas');
    expect(scribe).to.include({ slug: 'atlas', state: 'active' });
    expect(Object.keys(scribe)).to.deep.equal(['id', 'slug', 'state']);
    const off = await json('scribe', 'set-state', '--org', orgId, '--slug', 'atlas', '--state', 'powered_off');
    expect(off).to.deep.equal({ id: scribe.id, slug: 'atlas', state: 'powered_off' });
    const un = await json('scribe', 'create', '--org', orgId, '--slug', 'nova', '--name', 'Nova', '--state', 'unprovisioned');
    expect(un.state).to.equal('unprovisioned');
  });

  it('scribe rename gives a scribe a new name and keeps its slug, audited as the operator', async () => {
    const org = await json('org', 'create', '--name', 'Renames');
    const scribe = await json('scribe', 'create', '--org', org.id, '--slug', 'renamed', '--name', 'Before');
    expect(await json('scribe', 'rename', '--org', org.id, '--slug', 'renamed', '--name', '  After all  ')).to.deep.equal({ id: scribe.id, slug: 'renamed', name: 'After all' });
    const db = await openInstall(dir);
    try {
      expect(await db('scribes').where({ id: scribe.id }).first('slug', 'name')).to.deep.equal({ slug: 'renamed', name: 'After all' });
      expect(await db('audit_events').where({ subject_id: scribe.id, action: 'scribe.rename' }).pluck('detail')).to.deep.equal(['After all']);
    } finally {
      await db.destroy();
    }
    const tooLong = await admin('scribe', 'rename', '--org', org.id, '--slug', 'renamed', '--name', 'x'.repeat(201));
    expect([tooLong.code, tooLong.stdout, tooLong.stderr]).to.deep.equal([1, '', 'error: Name must be at most 200 characters\n']);
    const blank = await admin('scribe', 'rename', '--org', org.id, '--slug', 'renamed', '--name', '   ');
    expect([blank.code, blank.stdout, blank.stderr.split('\n')[0]]).to.deep.equal([2, '', 'error: --name is required']);
  });

  it('org list, key list and scribe list show what exists, and never a key', async () => {
    const { key } = await json('key', 'create', '--org', orgId, '--name', 'Listed');
    const orgs = await json('org', 'list');
    expect(orgs.organizations.map((o: { id: string; name: string }) => [o.id, o.name])).to.deep.include([orgId, 'Acme']);
    const keys = await json('key', 'list', '--org', orgId);
    const listed = keys.keys.find((k: { name: string }) => k.name === 'Listed');
    expect(Object.keys(listed)).to.deep.equal(['id', 'name', 'prefix', 'created_at', 'last_used_at', 'revoked_at']);
    expect(key.startsWith(listed.prefix)).to.equal(true);
    expect(JSON.stringify(keys)).not.to.include(key);
    const scribes = await json('scribe', 'list', '--org', orgId);
    expect(scribes.scribes.map((x: { slug: string; state: string }) => [x.slug, x.state])).to.deep.equal([
      ['atlas', 'powered_off'],
      ['nova', 'unprovisioned'],
    ]);
    const missing = await admin('scribe', 'list', '--org', '01935f00-0000-7000-8000-000000000000');
    expect([missing.code, missing.stderr.trim()]).to.deep.equal([1, 'error: Organization not found']);
  });

  it('prints help: --help lists every command, a word lists its commands, and a command shows its own flags (exit 0)', async () => {
    const all = await admin('--help');
    expect(all.code).to.equal(0);
    expect(all.stdout).to.include('  org list\n').and.include('  webhook create --org ORG_ID --url URL').and.include('`<command> --help` shows its flags');
    const schedule = await admin('schedule', '--help');
    expect(schedule.code).to.equal(0);
    const lines = schedule.stdout.split('\n').filter((l) => l.startsWith('  '));
    expect(lines.length).to.be.greaterThan(3);
    expect(lines.every((l) => l.startsWith('  schedule '))).to.equal(true);
    const one = await admin('webhook', 'create', '-h');
    expect(one.code).to.equal(0);
    expect(one.stdout.trim()).to.match(/^usage: npm run --silent admin -- webhook create --org ORG_ID --url URL/);
    expect(one.stderr).to.equal('');
  });

  it('scribe create takes --agent and --instructions; scribe set-agent changes them', async () => {
    const scribe = await json('scribe', 'create', '--org', orgId, '--slug', 'oracle', '--name', 'Oracle', '--agent', 'openai', '--instructions', 'Be brief.');
    expect(Object.keys(scribe)).to.deep.equal(['id', 'slug', 'state']);
    const db = await openInstall(dir);
    try {
      expect(await db('scribes').where({ id: scribe.id }).first()).to.include({ agent: 'openai', instructions: 'Be brief.' });
      expect((await db('scribes').where({ slug: 'atlas' }).first()).agent).to.equal('builtin');
    } finally {
      await db.destroy();
    }
    expect(await json('scribe', 'set-agent', '--org', orgId, '--slug', 'oracle', '--agent', 'builtin')).to.deep.equal({
      id: scribe.id,
      slug: 'oracle',
      agent: 'builtin',
      instructions: 'Be brief.',
      model: null,
      base_url: null,
      api_key_set: false,
      vision: false,
      max_tool_rounds: null,
      token_budget: null,
      max_concurrency: null,
    });
    expect(await json('scribe', 'set-agent', '--org', orgId, '--slug', 'oracle', '--instructions', '')).to.include({ agent: 'builtin', instructions: '' });
  });

  it("scribe set-agent sets the openai agent's model settings for one scribe, shows whether a key is set but never the key, and resets them", async () => {
    const set = await json(
      'scribe',
      'set-agent',
      '--org',
      orgId,
      '--slug',
      'atlas',
      '--agent',
      'openai',
      '--model',
      'llama3.2',
      '--base-url',
      'https://models.example.com/v1',
      '--api-key',
      'sk-scribe-secret-1234',
      '--vision',
      'true',
      '--max-tool-rounds',
      '3',
      '--token-budget',
      '5000',
    );
    expect(set).to.deep.include({
      agent: 'openai',
      model: 'llama3.2',
      base_url: 'https://models.example.com/v1',
      api_key_set: true,
      vision: true,
      max_tool_rounds: 3,
      token_budget: 5000,
    });
    expect(JSON.stringify(set)).not.to.include('sk-scribe-secret-1234');
    const db = await openInstall(dir);
    try {
      const stored = (await db('scribes').where({ id: set.id }).first()).model_api_key as string;
      expect(stored)
        .to.match(/^sealed:v1:[0-9a-f]{8}:/)
        .and.not.include('sk-scribe-secret-1234');
      expect(openSecretBox({ dataDir: dir, secretsKey: undefined }).open(stored)).to.equal('sk-scribe-secret-1234');
    } finally {
      await db.destroy();
    }
    const reset = await json(
      'scribe',
      'set-agent',
      '--org',
      orgId,
      '--slug',
      'atlas',
      '--agent',
      'builtin',
      '--model',
      '',
      '--base-url',
      '',
      '--api-key',
      '',
      '--vision',
      'false',
      '--max-tool-rounds',
      '',
      '--token-budget',
      'none',
    );
    expect(reset).to.deep.include({ agent: 'builtin', model: null, base_url: null, api_key_set: false, vision: false, max_tool_rounds: null, token_budget: null });
    for (const [flag, value, message] of [
      ['--max-tool-rounds', '0', 'error: Tool rounds must be a whole number from 1 to 50'],
      ['--token-budget', '50', 'error: Token budget must be a whole number from 100 to 10000000'],
      ['--base-url', 'ftp://models', 'error: Base URL must be an http:// or https:// URL without credentials, at most 2000 characters'],
      ['--base-url', 'https://user:pass@models.example.com/v1', 'error: Base URL must be an http:// or https:// URL without credentials, at most 2000 characters'],
      ...[
        'http://169.254.169.254/latest/',
        'http://127.0.0.1:11434/v1',
        'http://127.1:8080/v1',
        'http://0x7f000001/v1',
        'http://[::1]/v1',
        'http://[::ffff:10.0.0.1]/v1',
        'http://10.1.2.3/v1',
        'http://192.168.0.10/v1',
        'http://0.0.0.0/v1',
      ].map((url) => ['--base-url', url, 'error: Base URL must not point at a private or local address (MODELS_ALLOW_PRIVATE=true allows it)']),
    ]) {
      const result = await admin('scribe', 'set-agent', '--org', orgId, '--slug', 'atlas', flag!, value!);
      expect(result.stderr.trim(), flag).to.equal(message);
      expect(result.code).to.equal(1);
    }
    const allowed = await runAdmin(['scribe', 'set-agent', '--org', orgId, '--slug', 'atlas', '--base-url', 'http://127.0.0.1:11434/v1'], {
      ...cli.env,
      MODELS_ALLOW_PRIVATE: 'true',
    });
    expect(JSON.parse(allowed.stdout)).to.include({ base_url: 'http://127.0.0.1:11434/v1' });
    const usage = await admin('scribe', 'set-agent', '--org', orgId, '--slug', 'atlas', '--vision', 'maybe');
    expect(usage.code).to.equal(2);
    expect(usage.stderr).to.include('--vision must be true or false');
  });

  it("scribe set-agent --max-concurrency caps a scribe's runs in flight, `none` lifts the cap, and scribe list shows it", async () => {
    expect(await json('scribe', 'set-agent', '--org', orgId, '--slug', 'atlas', '--max-concurrency', '25')).to.include({ slug: 'atlas', max_concurrency: 25 });
    expect((await json('scribe', 'list', '--org', orgId)).scribes.find((s: { slug: string }) => s.slug === 'atlas')).to.include({ max_concurrency: 25 });
    for (const [value, message] of [
      ['0', 'error: Max concurrency must be a whole number from 1 to 10000'],
      ['10001', 'error: Max concurrency must be a whole number from 1 to 10000'],
    ]) {
      const result = await admin('scribe', 'set-agent', '--org', orgId, '--slug', 'atlas', '--max-concurrency', value!);
      expect(result.stderr.trim(), value).to.equal(message);
      expect(result.code).to.equal(1);
    }
    const usage = await admin('scribe', 'set-agent', '--org', orgId, '--slug', 'atlas', '--max-concurrency', 'lots');
    expect(usage.code).to.equal(2);
    expect(usage.stderr).to.include('--max-concurrency must be a whole number');
    expect(await json('scribe', 'set-agent', '--org', orgId, '--slug', 'atlas', '--max-concurrency', 'none')).to.include({ max_concurrency: null });
    expect((await json('scribe', 'list', '--org', orgId)).scribes.find((s: { slug: string }) => s.slug === 'atlas')).to.include({ max_concurrency: null });
  });

  it('scribe add-mcp prints {id, url} and stores its headers; scribe remove-mcp prints {id, removed: true}', async () => {
    const added = await json(
      'scribe',
      'add-mcp',
      '--org',
      orgId,
      '--slug',
      'atlas',
      '--url',
      'https://tools.example.com/mcp',
      '--header',
      'Authorization: Bearer cli-secret',
      '--header',
      'X-Team: ops',
    );
    expect(Object.keys(added)).to.deep.equal(['id', 'url']);
    expect(added.url).to.equal('https://tools.example.com/mcp');
    const db = await openInstall(dir);
    try {
      const stored = (await db('mcp_servers').where({ id: added.id }).first()).headers as string;
      expect(stored)
        .to.match(/^sealed:v1:/)
        .and.not.include('cli-secret');
      expect(JSON.parse(openSecretBox({ dataDir: dir, secretsKey: undefined }).open(stored))).to.deep.equal({ Authorization: 'Bearer cli-secret', 'X-Team': 'ops' });
    } finally {
      await db.destroy();
    }
    expect(await json('scribe', 'remove-mcp', '--id', added.id)).to.deep.equal({ id: added.id, removed: true });
    const again = await admin('scribe', 'remove-mcp', '--id', added.id);
    expect(again.stderr.trim()).to.equal('error: MCP server not found');
    expect(again.code).to.equal(1);
    const local = await admin('scribe', 'add-mcp', '--org', orgId, '--slug', 'atlas', '--url', 'http://127.0.0.1:9000/mcp');
    expect(local.stderr.trim()).to.equal('error: MCP server URL must not point at a private or local address (ATTACHMENTS_ALLOW_PRIVATE=true allows it)');
  });

  it('session show prints a transcript; task show and task input follow a waiting task', async () => {
    const db = await openInstall(dir);
    try {
      const scribe = await db('scribes').where({ slug: 'oracle' }).first();
      const at = '2026-11-21T09:00:00.000Z';
      await db('sessions').insert({
        id: '01935f00-0000-7000-8000-0000000005e1',
        organization_id: orgId,
        scribe_id: scribe.id,
        state: 'waiting',
        reply_due: false,
        created_at: at,
        updated_at: at,
      });
      await db('session_messages').insert([
        { session_id: '01935f00-0000-7000-8000-0000000005e1', author: 'user', text: 'hi', created_at: at },
        { session_id: '01935f00-0000-7000-8000-0000000005e1', author: 'scribe', text: 'hello', created_at: at },
      ]);
      const call = {
        organization_id: orgId,
        scribe_id: scribe.id,
        session_id: '01935f00-0000-7000-8000-0000000005e1',
        run_id: '01935f00-0000-7000-8000-00000000a11e',
        created_at: at,
      };
      await db('agent_calls').insert([
        { ...call, position: 0, kind: 'model', name: 'llama3', duration_ms: 812, input_tokens: 300, output_tokens: 40 },
        { ...call, position: 1, kind: 'tool', name: 'search_entries', arguments: '{"query":"hi"}', result: '[]', duration_ms: 3 },
      ]);
      expect(await json('session', 'show', '--id', '01935f00-0000-7000-8000-0000000005e1')).to.deep.equal({
        id: '01935f00-0000-7000-8000-0000000005e1',
        state: 'waiting',
        error_message: null,
        messages: [
          { author: 'user', text: 'hi', partial: false, created_at: at },
          { author: 'scribe', text: 'hello', partial: false, created_at: at },
        ],
        usage: { input_tokens: 300, output_tokens: 40 },
        trace: [
          { kind: 'model', name: 'llama3', duration_ms: 812, error: null, input_tokens: 300, output_tokens: 40 },
          { kind: 'tool', name: 'search_entries', duration_ms: 3, error: null, arguments: '{"query":"hi"}', result: '[]' },
        ],
      });
      await db('tasks').insert({
        id: '01935f00-0000-7000-8000-0000000007a5',
        organization_id: orgId,
        scribe_id: scribe.id,
        status: 'waiting',
        title: 'T',
        summary: 'S?',
        created_at: at,
        updated_at: at,
      });
      expect(await json('task', 'input', '--id', '01935f00-0000-7000-8000-0000000007a5', '--text', 'Use the Q3 data')).to.deep.equal({
        id: '01935f00-0000-7000-8000-0000000007a5',
        status: 'open',
      });
      const shown = await json('task', 'show', '--id', '01935f00-0000-7000-8000-0000000007a5');
      expect(shown).to.include({ status: 'open', title: 'T', result: null, last_error: null });
      expect(shown).to.deep.include({ usage: { input_tokens: 0, output_tokens: 0 }, trace: [] });
      expect(shown.events).to.have.length(1);
      expect(shown.events[0]).to.include({ from: 'waiting', to: 'open', author: 'staff', text: 'Use the Q3 data', partial: false });
    } finally {
      await db.destroy();
    }
  });

  it('user create defaults to viewer, reads the password on standard input and hashes it with scrypt at its full cost', async () => {
    const user = expectJson(await withInput('correct horse\n', 'user', 'create', '--org', orgId, '--email', 'Staff@Example.com'), ['user', 'create']);
    expect(user).to.include({ email: 'staff@example.com', role: 'viewer' });
    expect(Object.keys(user)).to.deep.equal(['id', 'email', 'role']);
    const db = await openInstall(dir);
    try {
      const row = await db('users').where({ id: user.id }).first();
      // N=16384, r=8, p=1: the cost the product sets passwords at (tests' harnesses set a lower one).
      expect(row.password_hash).to.match(/^scrypt\$16384\$8\$1\$/);
      expect(await verifyPassword('correct horse', row.password_hash)).to.equal(true);
      expect(await verifyPassword('wrong', row.password_hash)).to.equal(false);
    } finally {
      await db.destroy();
    }
    const adminUser = expectJson(await withInput('password1', 'user', 'create', '--org', orgId, '--email', 'boss@example.com', '--role', 'admin'), ['user', 'create']);
    expect(adminUser.role).to.equal('admin');
  });

  it('entry-type create prints {id, name}; entry create prints {id}', async () => {
    const companies = await json('entry-type', 'create', '--org', orgId, '--name', 'Companies', '--fields', '[{"name":"Name","type":"text","primary":true}]');
    expect(Object.keys(companies)).to.deep.equal(['id', 'name']);
    const contacts = await json(
      'entry-type',
      'create',
      '--org',
      orgId,
      '--name',
      'Contacts',
      '--fields',
      JSON.stringify([
        { name: 'Name', type: 'text', primary: true },
        { name: 'Company', type: 'relationship', target: companies.id },
      ]),
    );
    const acme = await json('entry', 'create', '--type', companies.id, '--fields', '{"Name":"Acme"}');
    expect(Object.keys(acme)).to.deep.equal(['id']);
    const ada = await json('entry', 'create', '--type', contacts.id, '--fields', JSON.stringify({ Name: 'Ada', Company: [acme.id] }), '--draft', '--archived');
    const db = await openInstall(dir);
    try {
      const row = await db('entries').where({ id: ada.id }).first();
      expect(JSON.parse(row.fields)).to.deep.equal({ Name: 'Ada', Company: [acme.id] });
      expect(Boolean(row.draft)).to.equal(true);
      expect(row.archived_at).to.be.a('string');
    } finally {
      await db.destroy();
    }
    entryTypeId = companies.id;
  });
  let entryTypeId: string;

  const failures: Array<[string, string[], RegExp]> = [
    ['fields that are not JSON', ['entry-type', 'create', '--org', '__ORG__', '--name', 'Bad', '--fields', '[oops'], /--fields must be JSON/],
    [
      'an entry type without a primary field',
      ['entry-type', 'create', '--org', '__ORG__', '--name', 'NoPrimary', '--fields', '[{"name":"A","type":"text"}]'],
      /Exactly one field must be primary/,
    ],
    [
      'a field named __proto__',
      ['entry-type', 'create', '--org', '__ORG__', '--name', 'Proto', '--fields', '[{"name":"Name","type":"text","primary":true},{"name":"__proto__","type":"text"}]'],
      /^error: Field name "__proto__" is reserved\n$/,
    ],
    [
      'a field named constructor',
      ['entry-type', 'create', '--org', '__ORG__', '--name', 'Ctor', '--fields', '[{"name":"constructor","type":"text","primary":true}]'],
      /^error: Field name "constructor" is reserved\n$/,
    ],
    ['an entry of an unknown type', ['entry', 'create', '--type', '01900000-0000-7000-8000-000000000000', '--fields', '{}'], /Entry type not found/],
    ['an entry with a bad value', ['entry', 'create', '--type', '__TYPE__', '--fields', '{"Name":5}'], /Field "Name" must be a string/],
    ['a duplicate slug', ['scribe', 'create', '--org', '__ORG__', '--slug', 'atlas', '--name', 'Again'], /Slug is already used/],
    ['an unknown org', ['scribe', 'create', '--org', '00000000-0000-0000-0000-000000000000', '--slug', 'x', '--name', 'X'], /Organization not found/],
    ['a bad state', ['scribe', 'create', '--org', '__ORG__', '--slug', 'y', '--name', 'Y', '--state', 'asleep'], /State must be one of/],
    [
      'a bad slug',
      ['scribe', 'create', '--org', '__ORG__', '--slug', 'Bad Slug', '--name', 'Z'],
      /Slug must be 1 to 63 lowercase letters, digits and hyphens, starting with a letter or digit/,
    ],
    ['a bad agent', ['scribe', 'create', '--org', '__ORG__', '--slug', 'w', '--name', 'W', '--agent', 'gpt'], /Agent must be one of builtin, openai/],
    ['set-agent with a bad agent', ['scribe', 'set-agent', '--org', '__ORG__', '--slug', 'atlas', '--agent', 'gpt'], /Agent must be one of builtin, openai/],
    ['an unknown session', ['session', 'show', '--id', '01935f00-0000-7000-8000-000000000000'], /Session not found/],
    ['input to a task that is not waiting', ['task', 'input', '--id', '01935f00-0000-7000-8000-0000000007a5', '--text', 'again'], /Task is not waiting/],
    ['an unknown task', ['task', 'show', '--id', 'nope'], /Task not found/],
    ['set-state on an unknown scribe', ['scribe', 'set-state', '--org', '__ORG__', '--slug', 'nobody', '--state', 'active'], /Scribe not found/],
    ['rename of an unknown scribe', ['scribe', 'rename', '--org', '__ORG__', '--slug', 'nobody', '--name', 'Anybody'], /Scribe not found/],
    ['an organization name over 200 characters', ['org', 'create', '--name', 'o'.repeat(201)], /^error: Name must be at most 200 characters\n$/],
    ['a key name over 200 characters', ['key', 'create', '--org', '__ORG__', '--name', 'k'.repeat(201)], /^error: Name must be at most 200 characters\n$/],
    ['a duplicate email', ['user', 'create', '--org', '__ORG__', '--email', 'staff@example.com', '--password', 'whatever1'], /Email is already used/],
    ['a short password', ['user', 'create', '--org', '__ORG__', '--email', 'new@example.com', '--password', 'short'], /at least 8/],
    ['a bad role', ['user', 'create', '--org', '__ORG__', '--email', 'new@example.com', '--password', 'longenough', '--role', 'root'], /Role must be one of/],
    ['revoking an unknown key', ['key', 'revoke', '--id', 'nope'], /API key not found/],
    ['a key for an unknown org', ['key', 'create', '--org', 'nope'], /Organization not found/],
    ['a missing flag', ['org', 'create'], /--name is required/],
    ['an unknown flag', ['org', 'create', '--name', 'X', '--colour', 'red'], /Unknown option/],
    [
      'a flag of another command',
      ['scribe', 'create', '--org', '__ORG__', '--slug', 'hermes', '--name', 'Hermes', '--model', 'gpt-4o'],
      /^error: "scribe create" takes no --model\nusage: scribe create /,
    ],
    ['a flag no listing takes', ['org', 'list', '--org', '__ORG__'], /^error: "org list" takes no --org\nusage: org list\n$/],
    ['an unknown command', ['org', 'delete'], /unknown command/],
  ];
  for (const [what, args, message] of failures) {
    it(`fails with a message on stderr and a non-zero exit for ${what}`, async () => {
      const result = await admin(...args.map((a) => (a === '__ORG__' ? orgId : a === '__TYPE__' ? entryTypeId : a)));
      expect(result.code).to.not.equal(0);
      expect(result.stdout).to.equal('');
      expect(result.stderr).to.match(message);
    });
  }

  it('fails naming the variable when the configuration is bad', async () => {
    const result = await runAdmin(['org', 'create', '--name', 'X'], { ...(await installEnv(dir)), PORT: 'eighty' });
    expect(result.code).to.equal(1);
    expect(result.stderr).to.include('PORT');
  });

  it('can run several at once on a fresh database, as processes', async () => {
    const fresh = { ...(await installEnv(tempDir())) };
    const results = await Promise.all([1, 2, 3, 4].map((i) => runAdminProcess(['org', 'create', '--name', `Org ${i}`], fresh)));
    for (const r of results) {
      expect(r.stderr).to.equal('');
      expect(r.code).to.equal(0);
    }
  });
});
