import type { Db } from '../db/knex.js';
import { renewLeases, type LeaseTerms } from '../db/claims.js';
import { dialectOf } from '../db/dialect.js';
import { caseById } from '../db/rows.js';
import { holdInOrder, runEnded } from '../scribes/queries.js';
import { claimSessions, type SessionRow, sessionsWaiting } from '../sessions/queries.js';
import { claimTasks, tasksWaiting, type WorkedTaskRow } from '../tasks/queries.js';

/** A claim: exclusive until `leaseUntil` unless renewed, after which another worker may take the work over. */
export type ClaimTerms = LeaseTerms;

/** One piece of agent work claimed: a session to answer or a task to work. */
export type Run = { kind: 'session'; row: SessionRow } | { kind: 'task'; row: WorkedTaskRow };

/** A scribe whose turn has come, as its row is while the claim holds it; `room`: runs it may still start (Infinity: no cap). */
export interface Turn {
  id: string;
  max_concurrency: number | null;
  runs_in_flight: number;
  room: number;
}

/** How many runs each scribe whose turn it is (each with room) gets from the claim's slots. */
export type ShareOut = (turns: readonly Turn[]) => Array<[scribeId: string, count: number]>;

export interface ClaimedRuns {
  runs: Run[];
  /** Scribes whose turn the claim passed on: another claim may find more whose turn has come. */
  passed: number;
  /** Scribes whose turn had come but that another claim held: their work may be due still. */
  skipped: number;
  /** Scribes that got their whole share and keep a turn: they may have more due than the claim took. */
  more: number;
}

/*
 * Slots and turns. Free slots go to scribes in turn, so that no scribe's backlog holds up
 * another's work, and no scribe has more runs in flight than its `max_concurrency`, across
 * every process on the database (scribes/queries.ts keeps `runs_in_flight` and brings turns
 * forward). One claim, in one transaction:
 *
 * 1. takes over runs whose lease ran out (a dead process's), oldest lease first, from the
 *    indexes of claimed rows by lease end; they are counted in flight already (those of a
 *    scribe powered off meanwhile are let go, to wait unclaimed). Leases run out only when
 *    a process dies, so the runtime asks for this step now and then (`lapsed`), not at
 *    every claim;
 * 2. reads the scribes that have a turn (`run_turn_at`), those with nothing in flight first,
 *    then the rest, each longest waiting first, and locks them, passing over those another
 *    transaction holds (waiting for the first when all are held); with the rows locked (on
 *    SQLite, with the one write lock) it reads how many runs each may still start;
 * 3. shares the free slots among them (`shareOut`), and claims each one's share of its
 *    oldest unclaimed sessions, then tasks (of a kind any wait for), from the indexes that
 *    hold only unclaimed due rows: no claim reads past work in flight or finished work;
 * 4. counts what each scribe got into `runs_in_flight`, and passes its turn on: to the back of
 *    the line (now) when it got its whole share; null when it got less (nothing of it is
 *    waiting: new work brings the turn back), when it is at its cap (a run that ends brings
 *    it back) or powered off (powering on does). A scribe left without a share for want of
 *    slots keeps its turn.
 *
 * Each step is a few index seeks per scribe served, however many runs are in flight and
 * however long any backlog is.
 */

/** One claim of up to `slots` runs (see "Slots and turns"); `lapsed: false` leaves out step 1. */
export async function claimRuns(db: Db, terms: ClaimTerms & { slots: number; lapsed?: boolean }, shareOut: ShareOut): Promise<ClaimedRuns> {
  return db.transaction(async (trx) => {
    const dialect = dialectOf(trx);
    await dialect.writeFirst(trx, 'scribes', 'run_turn_at');
    const runs: Run[] = [];
    const add = (kind: Run['kind'], rows: Array<SessionRow | WorkedTaskRow>) => runs.push(...rows.map((row) => ({ kind, row }) as Run));
    /** Whether this claim already holds a scribe's row (one it let go of a run of). */
    let holdsScribes = false;
    if (terms.lapsed !== false) {
      add('session', await claimSessions(trx, terms, { lapsed: terms.slots }));
      add('task', await claimTasks(trx, terms, { lapsed: terms.slots - runs.length }));
      if (runs.length > 0) holdsScribes = await letGoOfPoweredOff(trx, runs, terms);
    }
    const free = terms.slots - runs.length;
    if (free <= 0) return { runs, passed: 0, skipped: 0, more: 0 };

    const due = await turnsDue(trx, free);
    const held = new Set(await dialect.holdRows(trx, 'scribes', due, { skipLocked: true }));
    // All held by others (a busy scribe's runs finishing, each a short write to its row): wait
    // for the first rather than find nothing. Only while this claim holds no other scribe: then
    // it is in no lock cycle with one that holds it.
    if (held.size === 0 && due.length > 0 && !holdsScribes) for (const id of await dialect.holdRows(trx, 'scribes', due.slice(0, 1))) held.add(id);
    const rows: Array<{ id: string; state: string; max_concurrency: number | null; runs_in_flight: number }> =
      held.size > 0
        ? await trx('scribes')
            .whereIn('id', [...held])
            .select('id', 'state', 'max_concurrency', 'runs_in_flight')
        : [];
    const byId = new Map(rows.map((row) => [row.id, row]));
    const turns: Turn[] = due
      .filter((id) => byId.has(id))
      .map((id) => {
        const row = byId.get(id)!;
        const room = row.state !== 'active' ? 0 : row.max_concurrency === null ? Infinity : row.max_concurrency - row.runs_in_flight;
        return { id, max_concurrency: row.max_concurrency, runs_in_flight: row.runs_in_flight, room };
      });
    const shares = new Map(shareOut(turns.filter((turn) => turn.room > 0)));
    const waiting = shares.size > 0 ? await kindsWaiting(trx, terms.now) : { sessions: false, tasks: false };
    const sessions = waiting.sessions ? await claimSessions(trx, terms, { shares: [...shares] }) : [];
    const got = countBy(sessions);
    const tasksLeft = [...shares].map(([id, share]) => [id, share - (got.get(id) ?? 0)] as const).filter(([, left]) => left > 0);
    const tasks = waiting.tasks ? await claimTasks(trx, terms, { shares: tasksLeft }) : [];
    for (const [id, n] of countBy(tasks)) got.set(id, (got.get(id) ?? 0) + n);
    add('session', sessions);
    add('task', tasks);

    const passes: Array<{ id: string; n: number; next: string | null }> = [];
    for (const turn of turns) {
      const share = shares.get(turn.id);
      if (turn.room > 0 && share === undefined) continue;
      const n = got.get(turn.id) ?? 0;
      const atCap = turn.max_concurrency !== null && turn.runs_in_flight + n >= turn.max_concurrency;
      passes.push({ id: turn.id, n, next: share === undefined || n < share || atCap ? null : terms.now });
    }
    await passTurns(trx, passes);
    return { runs, passed: passes.length, skipped: due.length - held.size, more: passes.filter((pass) => pass.next !== null).length };
  });
}

/**
 * Up to `n` scribes whose turn has come, in turn: first those with nothing in flight
 * (scribes_idle_turns), then any (scribes_run_turns). Work is due from the moment it exists,
 * so a turn is never for later: one set by another process's clock, a little ahead, counts at once.
 */
async function turnsDue(trx: Db, n: number): Promise<string[]> {
  const inTurn = (index: string) => dialectOf(trx).fromIndex(trx, 'scribes', index).whereNotNull('run_turn_at').orderBy(['run_turn_at', 'id']).limit(n);
  // A literal, as the index's own condition: SQLite reads a partial index only for a query that implies it.
  const idle: string[] = await inTurn('scribes_idle_turns').whereRaw('runs_in_flight = 0').pluck('id');
  if (idle.length === n) return idle;
  const any: string[] = await inTurn('scribes_run_turns').pluck('id');
  return [...new Set([...idle, ...any])].slice(0, n);
}

/**
 * Whether any session and any task waits unclaimed, in one statement of an index seek each:
 * a claim by shares costs a seek per scribe, and a kind of work that none waits for is
 * spared it (an install that only chats, or only works tasks).
 */
async function kindsWaiting(trx: Db, now: string): Promise<{ sessions: boolean; tasks: boolean }> {
  const row = await trx.first(trx.raw('exists ? as sessions', [sessionsWaiting(trx, now)]), trx.raw('exists ? as tasks', [tasksWaiting(trx, now)]));
  return { sessions: Boolean(row.sessions), tasks: Boolean(row.tasks) };
}

/** Counts what each scribe got (`n`) into its runs in flight and sets its next turn, for all of them in one statement. */
async function passTurns(trx: Db, passes: ReadonlyArray<{ id: string; n: number; next: string | null }>): Promise<void> {
  if (passes.length === 0) return;
  const byId = new Map(passes.map((pass) => [pass.id, pass]));
  const ids = [...byId.keys()];
  await trx('scribes')
    .whereIn('id', ids)
    .update({
      runs_in_flight: trx.raw('runs_in_flight + ?', [caseById(trx, ids, 'integer', (id) => byId.get(id)!.n)]),
      run_turn_at: caseById(trx, ids, 'varchar(24)', (id) => byId.get(id)!.next),
    });
}

/**
 * Of lapsed runs just taken over, lets go of those whose scribe was powered off meanwhile
 * (removing them from `runs`): they wait unclaimed, as handed-back work does, until the
 * scribe is powered on. Taking them over first keeps them from piling up where every
 * claim looks for lapsed leases. Those scribes' rows are locked in order of id before any is
 * written, as every write to several of them is (scribes/queries.ts, `holdInOrder`): one at a
 * time in the runs' order could wait for a batch of runs' ends that waits for this claim.
 * Whether it let go of any (and so holds their scribes' rows).
 */
async function letGoOfPoweredOff(trx: Db, runs: Run[], terms: ClaimTerms): Promise<boolean> {
  const off = new Set<string>(
    await trx('scribes')
      .whereIn('id', [...new Set(runs.map((run) => run.row.scribe_id))])
      .whereNot('state', 'active')
      .pluck('id'),
  );
  if (off.size === 0) return false;
  await holdInOrder(trx, [...off]);
  for (const run of runs.filter((r) => off.has(r.row.scribe_id))) {
    // This claim was no attempt at the work: the attempt the dead process made stays counted.
    await clearClaim(trx, run.kind === 'session' ? 'sessions' : 'tasks', { id: run.row.id, token: terms.token }, terms.now, { attempts: trx.raw('attempts - 1') });
    runs.splice(runs.indexOf(run), 1);
  }
  return true;
}

/**
 * The agent runtime's work, unclaimed or not: sessions owing an answer and tasks open or in
 * progress (as `w`, with their scribe as `s`), of active scribes, or of scribes not active,
 * whose work waits until they are powered on. The dashboard and the metrics count it.
 */
export function agentWork(db: Db, table: 'sessions' | 'tasks', { active }: { active: boolean }) {
  const query = db(`${table} as w`)
    .join('scribes as s', 's.id', 'w.scribe_id')
    .where('s.state', active ? '=' : '<>', 'active');
  return table === 'sessions' ? query.whereRaw('w.reply_due') : query.whereIn('w.status', ['open', 'in_progress']);
}

/** How many of the rows are of each scribe. */
function countBy(rows: ReadonlyArray<{ scribe_id: string }>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const row of rows) counts.set(row.scribe_id, (counts.get(row.scribe_id) ?? 0) + 1);
  return counts;
}

/** Extends the lease of work still claimed by `token`; false when the claim was taken over. */
export async function renewWorkLease(db: Db, table: 'sessions' | 'tasks', claim: { id: string; token: string }, leaseUntil: string): Promise<boolean> {
  return (await renewLeases(db, { table, leaseColumn: 'lease_until' }, { ids: [claim.id], token: claim.token }, leaseUntil)) === 1;
}

/** Where each kind of work keeps the answer under way: its one partial row. */
const drafts = { sessions: ['session_messages', 'session_id'], tasks: ['task_events', 'task_id'] } as const;

/** Gives claimed work back at `at` (the process is stopping), so that another process takes it up at once, afresh. */
export async function releaseClaim(db: Db, table: 'sessions' | 'tasks', claim: { id: string; token: string }, at: string): Promise<void> {
  // A hand-back (a shutdown) is no attempt at the work: only runs that failed or whose process died count towards giving up.
  await db.transaction((trx) => clearClaim(trx, table, claim, at, { attempts: trx.raw('attempts - 1') }, { handedBack: true }));
}

/**
 * Clears a claim still held by `token` (with `columns` more), one run fewer in flight for its
 * scribe; what the run had written of its answer goes, so the next run writes it afresh.
 */
async function clearClaim(
  trx: Db,
  table: 'sessions' | 'tasks',
  claim: { id: string; token: string },
  at: string,
  columns: Record<string, unknown>,
  ended: { handedBack?: boolean } = {},
): Promise<void> {
  const [row] = await trx(table)
    .where({ id: claim.id, claim_token: claim.token })
    .update({ claim_token: null, lease_until: null, ...columns })
    .returning(['scribe_id']);
  if (!row) return;
  const [drafted, of] = drafts[table];
  await trx(drafted)
    .where({ [of]: claim.id, partial: true })
    .delete();
  await runEnded(trx, row.scribe_id, at, ended);
}

/** Which of the ids are of work cancelled meanwhile: a task `cancelled`, a session `cancelled`. */
export async function findCancelled(db: Db, ids: { sessions: readonly string[]; tasks: readonly string[] }): Promise<string[]> {
  const [sessions, tasks] = await Promise.all([
    ids.sessions.length > 0 ? db('sessions').whereIn('id', ids.sessions).where({ state: 'cancelled' }).pluck('id') : [],
    ids.tasks.length > 0 ? db('tasks').whereIn('id', ids.tasks).where({ status: 'cancelled' }).pluck('id') : [],
  ]);
  return [...sessions, ...tasks] as string[];
}

/**
 * Each scribe's runs in flight as counted (`runs_in_flight`) and as its claimed tasks and
 * sessions are (tests and the operator's check that the two agree).
 */
export async function countRunsInFlight(db: Db, scribeIds: readonly string[]): Promise<Array<{ id: string; counted: number; claimed: number }>> {
  const claimed = (table: string) => db(table).count('*').whereRaw('??.scribe_id = scribes.id', [table]).whereNotNull(`${table}.claim_token`);
  const rows: Array<{ id: string; counted: number; tasks: number | string; sessions: number | string }> = await db('scribes')
    .whereIn('id', scribeIds)
    .orderBy('id')
    .select('id', 'runs_in_flight as counted', claimed('tasks').as('tasks'), claimed('sessions').as('sessions'));
  return rows.map((row) => ({ id: row.id, counted: Number(row.counted), claimed: Number(row.tasks) + Number(row.sessions) }));
}
