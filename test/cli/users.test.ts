import { expect } from 'chai';
import { cliInstall, runAdmin, runAdminProcess } from '../helpers/cli.js';
import { openInstall } from '../helpers/databases.js';
import { verifyPassword } from '../../src/users/passwords.js';

describe('the admin CLI: users', function () {
  this.timeout(60_000);
  const cli = cliInstall({ scribe: 'atlas' });
  const { admin, json, withInput, expectJson } = cli;

  /** Reads the install's database for a moment. */
  async function inDatabase<T>(read: (db: Awaited<ReturnType<typeof openInstall>>) => Promise<T>): Promise<T> {
    const db = await openInstall(cli.dir);
    try {
      return await read(db);
    } finally {
      await db.destroy();
    }
  }

  let adminId: string;
  before(async () => {
    adminId = expectJson(await withInput('first admin password\n', 'user', 'create', '--org', cli.orgId, '--email', 'root@example.com', '--role', 'admin'), ['user', 'create']).id;
  });

  it('user invite prints {id, email, role, invite_url}: a path, since PUBLIC_URL is unset; viewer by default', async () => {
    const invited = await json('user', 'invite', '--org', cli.orgId, '--email', 'Invitee@Example.com');
    expect(Object.keys(invited)).to.deep.equal(['id', 'email', 'role', 'invite_url']);
    expect(invited).to.include({ email: 'invitee@example.com', role: 'viewer' });
    expect(invited.invite_url).to.match(/^\/invite\/[A-Za-z0-9_-]{43}$/);
    const asAdmin = await json('user', 'invite', '--org', cli.orgId, '--email', 'abs@example.com', '--role', 'admin');
    expect(asAdmin.role).to.equal('admin');
  });

  it('user invite makes an absolute link with PUBLIC_URL', async () => {
    const result = await runAdmin(['user', 'invite', '--org', cli.orgId, '--email', 'far@example.com'], { ...cli.env, PUBLIC_URL: 'https://scribe.example.com/team/' });
    expect(JSON.parse(result.stdout).invite_url).to.match(/^https:\/\/scribe\.example\.com\/team\/invite\/[A-Za-z0-9_-]{43}$/);
  });

  it('user list prints {users: [{id, email, role, disabled, last_sign_in_at}]}', async () => {
    const { users } = await json('user', 'list', '--org', cli.orgId);
    expect(users.map((u: { email: string }) => u.email)).to.deep.equal(['abs@example.com', 'far@example.com', 'invitee@example.com', 'root@example.com']);
    expect(users.find((u: { id: string }) => u.id === adminId)).to.deep.equal({ id: adminId, email: 'root@example.com', role: 'admin', disabled: false, last_sign_in_at: null });
    for (const user of users) expect(Object.keys(user)).to.deep.equal(['id', 'email', 'role', 'disabled', 'last_sign_in_at']);
  });

  it('user set-role prints {id, role}; user disable and enable print {id, disabled}', async () => {
    const viewer = expectJson(await withInput('viewer password', 'user', 'create', '--org', cli.orgId, '--email', 'v@example.com'), ['user', 'create']);
    expect(await json('user', 'set-role', '--id', viewer.id, '--role', 'admin')).to.deep.equal({ id: viewer.id, role: 'admin' });
    expect(await json('user', 'disable', '--id', viewer.id)).to.deep.equal({ id: viewer.id, disabled: true });
    expect((await json('user', 'list', '--org', cli.orgId)).users.find((u: { id: string }) => u.id === viewer.id).disabled).to.equal(true);
    expect(await json('user', 'enable', '--id', viewer.id)).to.deep.equal({ id: viewer.id, disabled: false });
    expect(await json('user', 'set-role', '--id', viewer.id, '--role', 'viewer')).to.deep.equal({ id: viewer.id, role: 'viewer' });
    const bad = await admin('user', 'set-role', '--id', viewer.id, '--role', 'root');
    expect([bad.code, bad.stderr.trim()]).to.deep.equal([1, 'error: Role must be one of admin, viewer']);
  });

  it('user reset prints {id, reset_url}; user delete prints {id, deleted: true}', async () => {
    const user = expectJson(await withInput('some password', 'user', 'create', '--org', cli.orgId, '--email', 'gone@example.com'), ['user', 'create']);
    const reset = await json('user', 'reset', '--id', user.id);
    expect(Object.keys(reset)).to.deep.equal(['id', 'reset_url']);
    expect(reset.id).to.equal(user.id);
    expect(reset.reset_url).to.match(/^\/invite\/[A-Za-z0-9_-]{43}$/);
    expect(await json('user', 'delete', '--id', user.id)).to.deep.equal({ id: user.id, deleted: true });
    const again = await admin('user', 'delete', '--id', user.id);
    expect([again.code, again.stderr.trim()]).to.deep.equal([1, 'error: User not found']);
  });

  it('refuses to take the last active admin away: "An organization needs an active admin"', async () => {
    for (const args of [
      ['set-role', '--id', adminId, '--role', 'viewer'],
      ['disable', '--id', adminId],
      ['delete', '--id', adminId],
    ]) {
      const result = await admin('user', ...args);
      expect([result.code, result.stdout, result.stderr.trim()], args[0]).to.deep.equal([1, '', 'error: An organization needs an active admin']);
    }
    expect((await json('user', 'list', '--org', cli.orgId)).users.find((u: { id: string }) => u.id === adminId)).to.include({ role: 'admin', disabled: false });
  });

  it('user set-password prints {id} and reads the password on standard input, never from the arguments', async () => {
    const result = await withInput('a new admin password\n', 'user', 'set-password', '--id', adminId);
    expect(expectJson(result, ['user', 'set-password'])).to.deep.equal({ id: adminId });
    const row = await inDatabase((db) => db('users').where({ id: adminId }).first());
    expect(await verifyPassword('a new admin password', row.password_hash)).to.equal(true);
    const empty = await withInput('', 'user', 'set-password', '--id', adminId);
    expect(empty.code).to.equal(2);
    expect(empty.stderr).to.include('error: A password is required');
    const short = await withInput('short\n', 'user', 'set-password', '--id', adminId);
    expect([short.code, short.stderr.trim()]).to.deep.equal([1, 'error: Password must be at least 8 characters']);
    const inArguments = await admin('user', 'set-password', '--id', adminId, '--password', 'in the arguments');
    expect(inArguments.code).to.equal(2);
    expect(inArguments.stderr).to.include('error: --password is not taken here: give the password on standard input');
  });

  it("user set-password withdraws the user's invitation not used yet: its link can no longer set the password", async () => {
    const invited = await json('user', 'invite', '--org', cli.orgId, '--email', 'pending@example.com');
    expect(await inDatabase((db) => db('password_links').where({ user_id: invited.id }).whereNull('used_at').pluck('purpose'))).to.deep.equal(['invite']);
    expectJson(await withInput('set by the operator\n', 'user', 'set-password', '--id', invited.id), ['user', 'set-password']);
    expect(await inDatabase((db) => db('password_links').where({ user_id: invited.id }).select('used_at'))).to.deep.equal([]);
  });

  it('user create still takes --password, with a warning on stderr', async () => {
    const result = await admin('user', 'create', '--org', cli.orgId, '--email', 'legacy@example.com', '--password', 'legacy password');
    expect(result.code).to.equal(0);
    expect(JSON.parse(result.stdout)).to.include({ email: 'legacy@example.com', role: 'viewer' });
    expect(result.stderr).to.equal('warning: --password puts the password in the shell history and the process list; give it on standard input instead\n');
  });

  it('audits every change as the admin CLI, with no password or token in the details', async () => {
    const { invite_url: url } = await json('user', 'invite', '--org', cli.orgId, '--email', 'audited@example.com');
    const events = await inDatabase((db) => db('audit_events').where({ subject_type: 'user' }).orderBy('id'));
    expect(new Set(events.map((e: { action: string }) => e.action))).to.deep.equal(
      new Set(['user.create', 'user.invite', 'user.role', 'user.disable', 'user.enable', 'user.reset', 'user.delete', 'user.password']),
    );
    expect(events.every((e: { actor_label: string }) => e.actor_label === 'admin CLI')).to.equal(true);
    const text = JSON.stringify(events);
    for (const secret of ['first admin password', 'viewer password', 'a new admin password', 'legacy password', url.split('/').pop()]) expect(text, secret).not.to.include(secret);
  });

  it('reads the password from a pipe in a real process', async () => {
    const result = await runAdminProcess(['user', 'create', '--org', cli.orgId, '--email', 'piped@example.com'], cli.env, { stdin: 'piped password\n' });
    expect(result.stderr).to.equal('');
    const created = JSON.parse(result.stdout);
    const row = await inDatabase((db) => db('users').where({ id: created.id }).first());
    expect(await verifyPassword('piped password', row.password_hash)).to.equal(true);
  });
});
