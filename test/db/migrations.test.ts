import path from 'node:path';
import { expect } from 'chai';
import { openDatabase } from '../../src/db/knex.js';
import { dialectOf } from '../../src/db/dialect.js';
import { migrateToLatest, migrationConfig } from '../../src/db/migrate.js';
import { createHarness, tempDir } from '../helpers/harness.js';
import { createTestInstall, itOnlyOn, stored, tableNames } from '../helpers/databases.js';
import { entriesFixture } from '../helpers/entries-fixture.js';

describe('migrations', () => {
  it('run all the way up and all the way down on a fresh database, twice', async () => {
    const install = await createTestInstall(tempDir());
    const db = install.open();
    try {
      const tables = () => tableNames(db);
      for (let round = 0; round < 2; round++) {
        await migrateToLatest(db);
        expect(await tables()).to.include.members([
          'organizations',
          'api_keys',
          'scribes',
          'requests',
          'attachments',
          'tasks',
          'users',
          'entry_types',
          'entry_type_fields',
          'entries',
          'entry_values',
          'entry_links',
        ]);
        const [, pending] = await db.migrate.list(migrationConfig());
        expect(pending).to.deep.equal([]);
        await db.migrate.rollback(migrationConfig(), true);
        expect(await tables()).to.deep.equal([]);
      }
    } finally {
      await db.destroy();
      await install.drop();
    }
  });

  it('give existing entries their search postings, counts and trigram index when moving to postings (20261121001200)', async () => {
    const h = await createHarness({ options: { dispatchOnAccept: false } });
    try {
      const t = await h.tenant();
      const fx = await entriesFixture(h, t);
      const acme = await fx.company({ Name: 'Acme', City: 'Zurich', Employees: 5 });
      const ada = await fx.contact({ Name: 'Ada', Company: [acme.id], Score: 2 }, { draft: true });
      await fx.company({ Name: 'Globex', City: 'Geneva' }, { archived: true });
      // Back to 1200, later migrations first, then below it.
      const latest = async () => {
        const [last] = (await h.db.migrate.list(migrationConfig()))[0].slice(-1);
        return String(last.name ?? last.file ?? last);
      };
      while (!/20261121001200_entry_search_postings/.test(await latest())) await h.db.migrate.down(migrationConfig());
      await h.db.migrate.down(migrationConfig());
      expect(await h.db.schema.hasColumn('entry_values', 'entry_created_at')).to.equal(false);
      expect(await h.db.schema.hasColumn('entry_types', 'entry_count')).to.equal(false);
      // The older trigram index (with positions) still follows writes after the way down.
      await h.db.raw(`insert into entry_values (entry_id, field_id, text_folded) values (?, ?, 'zurich west')`, [
        ada.id,
        fx.contacts.fields.find((f) => f.name === 'Job Title')!.id,
      ]);

      await migrateToLatest(h.db);
      expect(await h.db('entry_values').where({ entry_id: ada.id }).whereNotNull('number_value').first('entry_created_at', 'entry_draft', 'entry_archived')).to.deep.equal({
        entry_created_at: ada.created_at,
        entry_draft: stored(true),
        entry_archived: stored(false),
      });
      expect(await h.db('entry_links').where({ entry_id: ada.id }).first('entry_created_at', 'entry_draft')).to.deep.equal({
        entry_created_at: ada.created_at,
        entry_draft: stored(true),
      });
      expect((await h.db('entry_types').where({ id: fx.companies.id }).first('entry_count')).entry_count).to.equal(2);
      expect((await h.db('entry_types').where({ id: fx.contacts.id }).first('entry_count')).entry_count).to.equal(1);
      const search = async (typeId: string, q: string) =>
        (await h.api.get(`/api/v1/entry_types/${typeId}/entries?q=${encodeURIComponent(q)}&include_drafts=1&include_archived=1`).set(t.headers)).body.data.map(
          (e: { id: string }) => e.id,
        );
      expect(await search(fx.contacts.id, 'relationship:acme && Score:2')).to.deep.equal([ada.id]);
      expect(await search(fx.contacts.id, 'Job Title:zurich')).to.deep.equal([ada.id]);
      expect(await search(fx.companies.id, 'zurich')).to.deep.equal([acme.id]);
    } finally {
      await h.close();
    }
  });

  it('keep the rows of older tables on the way down (no table is rebuilt under its foreign keys)', async () => {
    const h = await createHarness({ options: { dispatchOnAccept: false } });
    try {
      const t = await h.tenant();
      const submitted = await h.api
        .post(`/api/v1/scribes/${t.scribe.slug}/requests`)
        .set(t.headers)
        .send({ task: { summary: 'Keep me' } });
      expect(submitted.status).to.equal(202);
      // Down to the migration that made requests: every later one undone.
      while (!(await h.db.migrate.currentVersion(migrationConfig())).startsWith('20261121000300')) await h.db.migrate.down(migrationConfig());
      expect(await h.db('requests').pluck('summary')).to.deep.equal(['Keep me']);
      expect(await h.db('scribes').pluck('id')).to.deep.equal([t.scribe.id]);
      await migrateToLatest(h.db);
      expect(await h.db('requests').pluck('summary')).to.deep.equal(['Keep me']);
    } finally {
      await h.close();
    }
  });

  it('give scribes their runs in flight and turns from the work claimed and waiting when run slots arrive (20261130000100)', async () => {
    const h = await createHarness({ options: { dispatchOnAccept: false, runOnNewWork: false } });
    try {
      const t = await h.tenant();
      const idle = await h.services.scribes.create({ organizationId: t.organizationId, slug: 'idle', name: 'Idle' });
      while ((await h.db.migrate.currentVersion(migrationConfig())) >= '20261130000100') await h.db.migrate.down(migrationConfig());
      const session = (id: string, at: string, extra: object) => ({
        id,
        organization_id: t.organizationId,
        scribe_id: t.scribe.id,
        state: 'queued',
        reply_due: true,
        attempts: 0,
        created_at: at,
        updated_at: at,
        ...extra,
      });
      await h.db('sessions').insert([
        session('01935f00-0000-7000-8000-000000000a01', '2026-11-20T10:00:00.000Z', {
          state: 'running',
          claim_token: '01935f00-0000-7000-8000-000000000b01',
          lease_until: '2026-11-20T10:01:00.000Z',
        }),
        session('01935f00-0000-7000-8000-000000000a02', '2026-11-20T11:00:00.000Z', {}),
        session('01935f00-0000-7000-8000-000000000a03', '2026-11-20T09:00:00.000Z', { state: 'waiting', reply_due: false }),
      ]);
      await h.db('tasks').insert({
        id: '01935f00-0000-7000-8000-000000000a04',
        organization_id: t.organizationId,
        scribe_id: t.scribe.id,
        status: 'open',
        title: 'T',
        summary: 'S',
        created_at: '2026-11-20T10:30:00.000Z',
        updated_at: '2026-11-20T10:30:00.000Z',
      });
      await migrateToLatest(h.db);
      expect(await h.db('scribes').orderBy('slug').select('slug', 'runs_in_flight', 'run_turn_at', 'max_concurrency')).to.deep.equal([
        { slug: 'atlas', runs_in_flight: 1, run_turn_at: '2026-11-20T10:30:00.000Z', max_concurrency: null },
        { slug: idle.slug, runs_in_flight: 0, run_turn_at: null, max_concurrency: null },
      ]);
    } finally {
      await h.close();
    }
  });

  it('record names without extension, so the compiled server accepts a database migrated from sources', async () => {
    const install = await createTestInstall(tempDir());
    const db = install.open();
    try {
      await migrateToLatest(db);
      const names = (await db('knex_migrations').select('name')).map((r) => r.name as string);
      expect(names.length).to.be.greaterThan(0);
      expect(names.every((name) => !/\.(ts|js)$/.test(name))).to.equal(true);
    } finally {
      await db.destroy();
      await install.drop();
    }
  });

  itOnlyOn('sqlite')('keep temporary files on disk while migrating, and in memory again after', async () => {
    const db = openDatabase(path.join(tempDir(), 'm.sqlite'));
    try {
      const tempStore = async () => (await db.raw('pragma temp_store'))[0].temp_store as number;
      expect(await dialectOf(db).withMigrationLock(db, tempStore)).to.equal(0);
      expect(await tempStore()).to.equal(2);
      const failed = await dialectOf(db)
        .withMigrationLock(db, async () => {
          throw new Error('a migration failed');
        })
        .then(
          () => expect.fail('the failure was swallowed'),
          (err: Error) => err.message,
        );
      expect(failed).to.equal('a migration failed');
      expect(await tempStore(), 'after a failed migration').to.equal(2);
    } finally {
      await db.destroy();
    }
  });

  itOnlyOn('sqlite')('set WAL, foreign keys, a busy timeout, NORMAL sync and temporary files in memory on the SQLite connection', async () => {
    const db = openDatabase(path.join(tempDir(), 'p.sqlite'));
    try {
      expect((await db.raw('pragma journal_mode'))[0].journal_mode).to.equal('wal');
      expect((await db.raw('pragma foreign_keys'))[0].foreign_keys).to.equal(1);
      expect((await db.raw('pragma busy_timeout'))[0].timeout).to.equal(5000);
      expect((await db.raw('pragma synchronous'))[0].synchronous).to.equal(1);
      expect((await db.raw('pragma temp_store'))[0].temp_store).to.equal(2);
    } finally {
      await db.destroy();
    }
  });
});
