import type { Db } from '../db/knex.js';

/** An install-wide setting (table `settings`), or undefined when none is stored. */
export async function readSetting(db: Db, name: string): Promise<string | undefined> {
  const row = await db('settings').where({ name }).first('value');
  return row?.value as string | undefined;
}

/** Stores a setting unless one of that name is there already (the first process to start wins). */
export async function insertSettingIfAbsent(db: Db, name: string, value: string, at: string): Promise<void> {
  await db('settings').insert({ name, value, updated_at: at }).onConflict('name').ignore();
}
