import type { Knex } from 'knex';

/**
 * Work claimed or waiting before slots existed: each scribe counts its claimed tasks and
 * sessions, and a scribe with unclaimed due work has its turn at its oldest one's time.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    update scribes set runs_in_flight =
      (select count(*) from tasks t where t.scribe_id = scribes.id and t.claim_token is not null)
      + (select count(*) from sessions s where s.scribe_id = scribes.id and s.claim_token is not null)`);
  await knex.raw(`
    update scribes set run_turn_at = (
      select min(w.created_at) from (
        select t.created_at from tasks t where t.scribe_id = scribes.id and t.status in ('open', 'in_progress') and t.claim_token is null
        union all
        select s.created_at from sessions s where s.scribe_id = scribes.id and s.reply_due and s.claim_token is null) w)`);
}

/** Nothing: the columns go with the migration before. */
export async function down(): Promise<void> {}
