import { randomUUID } from 'node:crypto';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../logger.js';
import type { WakeupChannel, Wakeups } from '../db/wakeups.js';
import { keepLeases } from '../db/claims.js';
import { settledWithin } from '../lib/settled-within.js';

/**
 * The work engine: every kind of background work (receipts to dispatch, schedules to fire,
 * webhook deliveries, maintenance jobs) is a queue, a short declaration that this engine
 * works. A queue says what is due (`claim`: one statement in its feature's queries module,
 * which takes due rows under a lease and a token), how to run one item (`run`), what its
 * finishing writes (`retry`, `giveUp`, `handBack`), and its options. Each declaration
 * lives next to its feature, as `queue.ts` in the feature's folder (requests/, webhooks/,
 * schedules/, jobs/), because it is made of that feature's rules and queries; this file
 * and background.ts hold everything that is the same for all of them.
 *
 * The engine alone:
 * - paces growth: with `growthPerSecond`, the units in flight grow no faster than that;
 * - claims into free slots: a claim takes up to as many items as slots are free (or, for a
 *   queue that works a batch in one slot, up to `batchSize`), passing over keys (an
 *   endpoint, an organization) that already have their cap of items running here (a queue
 *   that keeps its caps in the database, as the agent runtime does, declares none); claims
 *   follow while they find items and slots are free, and what they took starts together;
 *   a run that has only its record left to write may give its slot back (`released`), up to
 *   as many being written as there are slots;
 * - renews the leases of what runs, so that only a process that died loses its work;
 * - finishes: a run that fails is retried after its back-off, or given up after
 *   `maxAttempts`; work stopped by `stop()` is handed back and the other processes told;
 * - coalesces: one claim at a time; calls made while one runs share a single follow-up (one
 *   that refills slots freed by runs that ended starts no sooner than `claimGapMs` after it,
 *   and never in the same turn of the event loop as the claim before it).
 *   A claim that finds nothing is remembered (by what it passed over), so that a finished
 *   item refills its slot without asking again; a nudge or the poll clears that, and a
 *   claim that started before the nudge does not record its empty finding;
 * - tidies: once idle after a drain, lets the queue clear what the drain left in its tables;
 * - cancels one run by id, through its own AbortSignal; a queue whose items another process
 *   may cancel (`cancelled`) is asked every `cancelCheckMs` which of those running here were;
 * - stops: claiming ends at once, running work may finish for `drainMs`, then its signal
 *   aborts, and `stop()` waits for it (and a tidy under way) to end.
 * Wake-ups (NOTIFY, and the poll that backs them up) are background.ts's.
 */

export interface QueueOptions {
  /** Units worked at once in this process: an item each, or a claimed batch each (`batchSize`). */
  slots: number;
  /** When set, a claim takes up to this many items and works them in one slot, together (`runBatch`) or one after another. */
  batchSize?: number;
  /** How long a claim is exclusive unless renewed; a lapsed one is taken over (crash recovery). */
  leaseMs: number;
  /** How often running work renews its lease (a third of the lease unless given). */
  renewMs?: number;
  /** Claims of an item before a failure gives it up rather than retrying it. */
  maxAttempts?: number;
  /** The wait before the next try after a failure on try `attempt` (1-based). */
  backoffMs?: (attempt: number) => number;
  /** How often, while items run, the queue's `cancelled` is asked which of them were cancelled elsewhere. */
  cancelCheckMs?: number;
  /**
   * The least time from one claim's start to a claim that refills slots freed by runs that
   * ended: slots that free meanwhile are filled by one claim, not one claim each. For queues
   * of many runs, whose claims would otherwise each take one item. New work and the poll
   * claim at once, unless such a refill is waiting already: they join it. Never more than
   * a twentieth of what a unit typically takes (`gapWithin`).
   */
  claimGapMs?: number;
  /** Items claimed since the queue's last `tidy` before a drain calls it again (1,000 unless set). */
  tidyAfter?: number;
  /**
   * How fast the units in flight may grow: at most this many more a second (a slot freed by a
   * unit that ended refills at once all the same). Units started in one instant end in one
   * instant when their work takes the same time, and then wait on one another in this
   * process's loop at every round; started at this pace, they keep apart. Unlimited unless set.
   */
  growthPerSecond?: number;
}

/** What a claim is asked to take. */
export interface ClaimTerms {
  token: string;
  now: Date;
  leaseUntil: string;
  /** How many items to take at most. */
  limit: number;
  /** The slots free in this process now: `limit`, or more when the pace of growth asks for fewer. */
  open: number;
  /**
   * Nothing asked to look for due work since the last claim (no tick, poll, nudge or look
   * anew): this one only refills slots of units that ended, and may leave out what only the
   * passing of time makes due, such as leases that ran out (the poll looks every second).
   */
  refillOnly: boolean;
  /** By kind of key, those at their cap here: pass them over. */
  full: Readonly<Record<string, readonly string[]>>;
  /** How many more items with `key` (of `kind`) may start here now. */
  room(kind: string, key: string): number;
}

export interface ClaimRef {
  id: string;
  token: string;
}

/** What a claim found: its items, and whether finding none of them proves that nothing is due. */
export type Claimed<Item> =
  | Item[]
  | {
      items: Item[];
      /**
       * Due work may have been out of this claim's reach (another claim held it, or it gave
       * each key a share and some took all of theirs): an empty finding is not remembered,
       * and taking fewer items than asked for does not prove that nothing more is due.
       */
      inconclusive?: boolean;
      /** Of the slots the claim was asked to fill, how many it left free on purpose (a reserve): the claims that follow it in one round stop once no more are left. */
      kept?: number;
    };

/** What a run gets: its claim's token, and a signal that aborts when it is cancelled or the engine stops. */
export interface RunContext {
  token: string;
  signal: AbortSignal;
  /**
   * Says that the end of this run may make work due that earlier claims passed over (a
   * capped scribe's freed turn): the claim that refills its slot looks anew, rather than
   * trust an earlier claim that found nothing.
   */
  lookAnewAfter(): void;
  /**
   * Says that the run needs its slot no more: all that is left is to record what came of it.
   * The slot refills at once rather than after that write, so that writes may wait to share
   * a commit without holding up the next run; the engine still waits for the run to end.
   */
  released(): void;
}

/** What the engine gives each run of a unit besides its token and signal. */
type UnitContext = Pick<RunContext, 'lookAnewAfter' | 'released'>;

export interface Queue<Item extends { id: string }, Outcome extends string> {
  /** For logs. */
  name: string;
  /** Where other processes are told of work handed back (db/wakeups.ts). */
  channel?: WakeupChannel;
  options: QueueOptions;
  /** The outcomes `tick()` counts: what `run` answers, and `retried` / `failed` for the engine's retries and give-ups. */
  outcomes: readonly Outcome[];
  /** Caps by kind of key (e.g. `{ endpoint: 4 }`) of items running here at once. */
  caps?: Readonly<Record<string, number>>;
  /** The keys an item counts under, by kind. */
  keysOf?(item: Item): Record<string, string>;
  /** Takes due items under `terms.token` and a lease to `terms.leaseUntil`. */
  claim(terms: ClaimTerms): Promise<Claimed<Item>>;
  /** Works one claimed item; what came of it. Throwing is a failure (below). */
  run(item: Item, context: RunContext): Promise<Outcome | void>;
  /** Works a claimed batch in one go; when it throws, each item is run alone, so one bad item cannot hold up the rest. */
  runBatch?(items: readonly Item[], context: RunContext): Promise<Array<Outcome | void>>;
  /** Extends the lease of the items still held by the token. */
  renew?(claim: { ids: readonly string[]; token: string; items: readonly Item[] }, leaseUntil: string): Promise<unknown>;
  /** Gives a failed item back for another try at `retryAt`. Without it, a failure is given up (or left to its lease). */
  retry?(claim: ClaimRef, item: Item, retryAt: string): Promise<unknown>;
  /**
   * Records that a failed item will not be tried again; what it answers is counted in place
   * of `failed`. Without it (and `retry`), a failed item is left for its lease to run out.
   */
  giveUp?(claim: ClaimRef, item: Item, err: unknown): Promise<Outcome | void>;
  /** Clears the claim of an item stopped unfinished, so another process takes it at once. */
  handBack?(claim: ClaimRef, item: Item): Promise<unknown>;
  /** How many times the item has been claimed, this claim included (its `attempts` column unless given). */
  attemptsOf?(item: Item): number;
  /** Of the items running here, the ids of those cancelled meanwhile by another process (asked every `cancelCheckMs`). */
  cancelled?(items: readonly Item[]): Promise<readonly string[]>;
  /**
   * Clears what a drain left behind in the queue's tables (db/dialect.ts, `tidyAfterDrain`).
   * Called in the background, one at a time, once the queue is idle here (a claim found
   * nothing and nothing runs) after at least `tidyAfter` items were claimed since the last call.
   */
  tidy?(): Promise<unknown>;
}

/**
 * `free` slots shared among the keys whose turn it is (scribes, endpoints), in their order:
 * as many each (at least one), within what each may still take (`room`), until none is
 * left. A key with no room gets none. For queues whose claims share slots out themselves.
 */
export function shareSlots<Key>(free: number, keys: readonly Key[], room: (key: Key) => number): Array<[Key, number]> {
  const each = Math.max(1, Math.floor(free / Math.max(1, keys.length)));
  const shares: Array<[Key, number]> = [];
  let left = free;
  for (const key of keys) {
    const share = Math.min(each, left, room(key));
    if (share <= 0) continue;
    shares.push([key, share]);
    left -= share;
  }
  return shares;
}

/** The most growth (`growthPerSecond`) that builds up while no claim uses it: this long's worth. */
const GROWTH_BUILDS_UP_MS = 100;

/**
 * A wait that gathers work ending meanwhile while slots stay empty (the claim gap) takes at
 * most this share of a unit's typical time: at most `slots` units end per gap, so a gap this
 * short never holds a queue below twenty times the rate its slots sustain, however quick its
 * work. A wait that holds no slot may take a larger share (`gapWithin`'s `share`).
 */
const GAP_SHARE_OF_RUN = 1 / 20;
/** How much each unit's time moves the typical time (a moving average). */
const RUN_TIME_WEIGHT = 0.05;

/** Items claimed between two calls of a queue's `tidy`, unless its options say otherwise. */
const TIDY_AFTER = 1000;

/** A claim as it was taken: its token and items. */
export interface Claim<Item> {
  token: string;
  items: Item[];
}

export type QueueWorker<Item extends { id: string }, Outcome extends string> = ReturnType<typeof workQueue<Item, Outcome>>;

/** Works `queue` in this process: nothing happens until a `tick`, `fill` or `nudge` (background.ts polls). */
export function workQueue<Item extends { id: string }, Outcome extends string>(
  queue: Queue<Item, Outcome>,
  { clock, logger, wakeups }: { clock: Clock; logger: Logger; wakeups?: Wakeups },
) {
  const options = queue.options;
  const renewMs = options.renewMs ?? options.leaseMs / 3;
  const inFlight = new Set<Promise<void>>();
  /** Units in flight that hold a slot: those that have not said their slot is `released`. */
  let holdingSlots = 0;
  /** Each running item and its own abort, by its id: a cancel stops that one alone. */
  const runs = new Map<string, { item: Item; abort: AbortController }>();
  const counts = new Map<string, Map<string, number>>(Object.keys(queue.caps ?? {}).map((kind) => [kind, new Map()]));
  const stopping = new AbortController();
  let closing = false;
  let stopped: Promise<void> | undefined;
  let claiming: Promise<void> = Promise.resolve();
  /** A claim waits behind the running one: later calls join it rather than queue more. */
  let queued = false;
  let lastTickAt: Date | null = null;
  /** When the last claim started (performance.now()), for `claimGapMs`. */
  let lastClaimStart = -Infinity;
  /** What claims found nothing for (by what they passed over) since the last look for new work. */
  const foundEmpty = new Set<string>();
  /** Whether the event loop has turned since the last claim began. */
  let loopTurned = true;
  /** Counts the looks anew, so that a claim that started before one does not mark its finding as still current. */
  let looks = 0;
  /** Whether there was a look anew since the last claim began (`ClaimTerms.refillOnly`). */
  let lookedSinceClaim = true;
  /**
   * The growth of the units in flight that `growthPerSecond` allows, as of `growthAt` (at
   * first as after a quiet spell: all that builds up); and the units that ended since the last
   * claim, whose slots refill whatever the pace.
   */
  let growth = Infinity;
  let growthAt = performance.now();
  let endedSinceClaim = 0;
  /** What a unit typically takes, from its start to its end or its `released` (ms); none until one has. */
  let typicalRunMs: number | undefined;
  /** Items claimed since the last `tidy`, and the one under way. */
  let claimedSinceTidy = 0;
  let tidying: Promise<void> | undefined;
  const tally = Object.fromEntries(queue.outcomes.map((outcome) => [outcome, 0])) as Record<Outcome, number>;
  const cancelWatch = watchForCancels();

  const count = (outcome: string | void) => {
    if (outcome && outcome in tally) tally[outcome as Outcome]++;
  };
  const running = (kind: string, key: string) => counts.get(kind)?.get(key) ?? 0;
  function countKeys(item: Item, by: number): void {
    for (const [kind, key] of Object.entries(queue.keysOf?.(item) ?? {})) {
      const of = counts.get(kind);
      if (!of) continue;
      const n = (of.get(key) ?? 0) + by;
      if (n > 0) of.set(key, n);
      else of.delete(key);
    }
  }
  function full(): Record<string, string[]> {
    const caps = queue.caps ?? {};
    return Object.fromEntries(
      [...counts].map(([kind, of]) => [
        kind,
        [...of]
          .filter(([, n]) => n >= caps[kind]!)
          .map(([key]) => key)
          .sort(),
      ]),
    );
  }

  async function claim(limit = options.batchSize ?? options.slots, passOver = full(), open = limit): Promise<Claim<Item> & { inconclusive?: boolean; kept?: number }> {
    const now = clock();
    const refillOnly = !lookedSinceClaim;
    lookedSinceClaim = false;
    const token = randomUUID();
    const terms: ClaimTerms = {
      token,
      now,
      leaseUntil: new Date(now.getTime() + options.leaseMs).toISOString(),
      limit,
      open,
      refillOnly,
      full: passOver,
      room: (kind, key) => (queue.caps?.[kind] ?? Infinity) - running(kind, key),
    };
    const claimed = await queue.claim(terms);
    return Array.isArray(claimed) ? { token, items: claimed } : { token, ...claimed };
  }

  /**
   * One claim into `free` slots: what each slot is to work (an item, or a batch), its keys
   * counted already, and whether the claim took all there was (it found fewer than it asked
   * for, and could reach all due work).
   */
  async function claimOnce(free: number, open: number): Promise<{ units: Array<Claim<Item>>; allTaken: boolean; kept: number }> {
    if (free <= 0 || closing) return { units: [], allTaken: true, kept: 0 };
    const passOver = full();
    const asked = JSON.stringify(passOver);
    if (foundEmpty.has(asked)) return { units: [], allTaken: true, kept: 0 };
    const look = looks;
    const limit = options.batchSize ?? free;
    const claimed = await claim(limit, passOver, open);
    claimedSinceTidy += claimed.items.length;
    const allTaken = claimed.items.length < limit && !claimed.inconclusive;
    // Nothing is left for what this claim passed over, as if a next claim had found nothing.
    if (allTaken && look === looks) foundEmpty.add(asked);
    const kept = claimed.kept ?? 0;
    if (claimed.items.length === 0) return { units: [], allTaken, kept };
    for (const item of claimed.items) countKeys(item, 1);
    return { units: options.batchSize ? [claimed] : claimed.items.map((item) => ({ token: claimed.token, items: [item] })), allTaken, kept };
  }

  /**
   * Claims into the slots free when it began until a claim takes all there was or none is
   * left, then starts what the claims took, together: runs that start at once (a burst of
   * model calls, say) are not held up behind the queries of the claims that follow them.
   * Slots freed meanwhile are the next round's: counting them in would keep a busy queue
   * claiming, with what it took waiting, for as long as runs end.
   */
  async function claimAndStart(): Promise<void> {
    const taken: Array<Claim<Item>> = [];
    const open = options.slots - holdingSlots;
    const { ended, growth: mayGrow } = mayStart();
    const free = Math.min(open, ended + mayGrow);
    try {
      for (;;) {
        const { units, allTaken, kept } = await claimOnce(free - taken.length, open - taken.length);
        taken.push(...units);
        if (units.length === 0 || allTaken || free - taken.length <= kept) break;
      }
    } catch (err) {
      logger.error({ err, queue: queue.name }, 'could not claim background work');
    }
    growth = Math.max(0, growth - Math.max(0, taken.length - ended));
    if (taken.length === 0 && inFlight.size === 0) tidyIfDue();
    for (const unit of taken) void start(unit);
    // Held back by the pace of growth rather than by the slots: the rest comes a claim gap later.
    if (free < open && taken.length === free) void refill({ heldBack: true });
  }

  /**
   * How many of the free slots a claim may fill now: those of the units that ended since the
   * last claim, and the growth `growthPerSecond` allows.
   */
  function mayStart(): { ended: number; growth: number } {
    const ended = endedSinceClaim;
    endedSinceClaim = 0;
    const perSecond = options.growthPerSecond;
    if (!perSecond) return { ended, growth: Infinity };
    const now = performance.now();
    // Growth unused builds up only so far: after a quiet spell, work starts at the pace again, not all at once.
    growth = Math.min(grownBy(perSecond, now), Math.max(1, (perSecond * GROWTH_BUILDS_UP_MS) / 1000));
    growthAt = now;
    return { ended, growth: Math.floor(growth) };
  }

  /** The growth allowed at `now`: what was left at `growthAt`, and what has come since at `perSecond`. */
  function grownBy(perSecond: number, now: number): number {
    return growth + (perSecond * (now - growthAt)) / 1000;
  }

  /** How long until `growthPerSecond` allows one more unit. */
  function untilGrowthMs(): number {
    const perSecond = options.growthPerSecond;
    if (!perSecond) return 0;
    return ((1 - grownBy(perSecond, performance.now())) * 1000) / perSecond;
  }

  /** Starts the queue's `tidy` once it is idle after a drain of `tidyAfter` items (see `Queue.tidy`). */
  function tidyIfDue(): void {
    if (!queue.tidy || tidying || closing || claimedSinceTidy < (options.tidyAfter ?? TIDY_AFTER)) return;
    claimedSinceTidy = 0;
    tidying = queue
      .tidy()
      .then(
        () => {},
        (err) => logger.warn({ err, queue: queue.name }, "could not tidy the queue's tables"),
      )
      .finally(() => (tidying = undefined));
  }

  /** Works a claim in one slot (its keys counted), renewing its lease meanwhile; the slot refills when it ends. */
  function start({ token, items }: Claim<Item>): Promise<void> {
    for (const item of items) runs.set(item.id, { item, abort: new AbortController() });
    cancelWatch.started();
    const held = { ids: items.map((item) => item.id), token, items };
    const lease = queue.renew && keepLeases(() => queue.renew!(held, new Date(clock().getTime() + options.leaseMs).toISOString()), renewMs);
    let anew = false;
    let holding = true;
    holdingSlots++;
    const startedAt = performance.now();
    // A slot is free: the next claim need not wait for the poll, only for `claimGapMs`.
    const freeSlot = () => {
      holding = false;
      holdingSlots--;
      endedSinceClaim++;
      const took = performance.now() - startedAt;
      typicalRunMs = typicalRunMs === undefined ? took : typicalRunMs + (took - typicalRunMs) * RUN_TIME_WEIGHT;
    };
    const release = () => {
      // As many units being written as there are slots: this one keeps its slot to its end,
      // so that runs cannot outpace the writes of their records.
      if (!holding || inFlight.size - holdingSlots >= options.slots) return;
      freeSlot();
      void refill({ gap: true });
    };
    // A batch's items share one slot: it frees when the batch ends.
    const context: UnitContext = { lookAnewAfter: () => (anew = true), released: items.length === 1 ? release : () => {} };
    const unit = workClaim(token, items, context).finally(() => {
      lease?.stop();
      for (const item of items) {
        countKeys(item, -1);
        runs.delete(item.id);
      }
      inFlight.delete(unit);
      // What the run's end made due is written now: the next claim looks for it.
      if (anew) lookAnew();
      const freed = holding;
      if (holding) freeSlot();
      if (freed || anew) void refill({ gap: true });
    });
    inFlight.add(unit);
    return unit;
  }

  async function workClaim(token: string, items: readonly Item[], context: UnitContext): Promise<void> {
    if (queue.runBatch && items.length > 1 && !stopping.signal.aborted) {
      try {
        (await queue.runBatch(items, { token, signal: stopping.signal, ...context })).forEach(count);
        return;
      } catch (err) {
        logger.debug({ err, queue: queue.name }, 'a batch failed; working its items one by one');
      }
    }
    for (const item of items) await workItem(token, item, context);
  }

  /**
   * Runs one item; a failure is retried, given up or left to its lease; work stopped unfinished
   * is handed back. Never throws. Its signal is its own abort's, which a cancel and `stop()`
   * both abort: one composed with the engine's long-lived stop signal (`AbortSignal.any`)
   * would stay listed on that signal for as long as the process runs, one more per item.
   */
  async function workItem(token: string, item: Item, context: UnitContext): Promise<void> {
    const claimRef = { id: item.id, token };
    const signal = runs.get(item.id)?.abort.signal ?? new AbortController().signal;
    try {
      // Stopped before it began: hand it back untouched.
      if (stopping.signal.aborted) return await handBack(claimRef, item);
      count(await queue.run(item, { token, signal, ...context }));
    } catch (err) {
      if (stopping.signal.aborted) return await handBack(claimRef, item);
      // Cancelled: the cancel took the claim, so there is nothing to record or release.
      if (signal.aborted) return;
      await failed(claimRef, item, err);
    }
  }

  async function failed(claimRef: ClaimRef, item: Item, err: unknown): Promise<void> {
    const attempts = queue.attemptsOf?.(item) ?? (item as { attempts?: number }).attempts ?? 1;
    const log = { err, queue: queue.name, id: item.id, attempts };
    try {
      if (queue.retry && attempts < (options.maxAttempts ?? Infinity)) {
        logger.warn(log, 'background work failed; will retry');
        await queue.retry(claimRef, item, new Date(clock().getTime() + (options.backoffMs?.(attempts) ?? 0)).toISOString());
        count('retried');
      } else if (queue.giveUp) {
        logger.error(log, 'background work failed; giving up');
        count((await queue.giveUp(claimRef, item, err)) ?? 'failed');
      } else {
        // Left claimed: its lease runs out and it is tried again.
        logger.error(log, 'background work failed');
      }
    } catch (recordErr) {
      logger.error({ err: recordErr, queue: queue.name, id: item.id }, 'could not record a failure; the lease will run out');
    }
  }

  async function handBack(claimRef: ClaimRef, item: Item): Promise<void> {
    if (!queue.handBack) return;
    try {
      await queue.handBack(claimRef, item);
      if (queue.channel) await wakeups?.notify(queue.channel, item.id);
    } catch (err) {
      logger.error({ err, queue: queue.name, id: item.id }, 'could not hand work back; the lease will run out');
    }
  }

  /**
   * Claims into the free slots and starts what it took (`claimAndStart`), behind any claim
   * under way. `gap`: it refills slots of units that ended, `claimGapMs` after the last claim
   * began. `heldBack`: that claim left slots free for the pace of growth; this one waits for
   * the gap and for growth. Never throws.
   */
  function refill({ gap = false, heldBack = false } = {}): Promise<void> {
    if (closing || queued) return claiming;
    queued = true;
    claiming = claiming.then(async () => {
      // Only while other runs are in flight: the slot of a lone run that ended refills at once.
      const gapMs = (gap && inFlight.size > 0) || heldBack ? lastClaimStart + gapWithin(options.claimGapMs ?? 0) - performance.now() : 0;
      const wait = closing ? 0 : Math.max(gapMs, heldBack ? untilGrowthMs() : 0);
      // On SQLite a claim's queries and a run's writes resolve without I/O: a refill that would
      // follow the last claim within one turn of the event loop waits for the next turn, or a
      // chain of claims and runs would hold back this process's sockets (its API's requests, the
      // model calls of the runs it started) until it ended.
      if (wait > 0 || ((gap || heldBack) && !loopTurned)) await new Promise((resolve) => (wait > 0 ? setTimeout(resolve, wait) : setImmediate(resolve)));
      loopTurned = false;
      setImmediate(() => (loopTurned = true));
      queued = false;
      lastClaimStart = performance.now();
      lastTickAt = clock();
      return claimAndStart();
    });
    return claiming;
  }

  /** `maxMs`, or less: `share` of what a unit typically takes (a twentieth unless given, GAP_SHARE_OF_RUN), when that is shorter. */
  function gapWithin(maxMs: number, share = GAP_SHARE_OF_RUN): number {
    return typicalRunMs === undefined ? maxMs : Math.min(maxMs, typicalRunMs * share);
  }

  /** Resolves once no claim is running or queued. */
  async function claimsSettled(): Promise<void> {
    for (let last = claiming; ; last = claiming) {
      await last;
      if (last === claiming) return;
    }
  }

  function cancel(id: string): void {
    runs.get(id)?.abort.abort(new Error('cancelled'));
  }

  /**
   * While items run, asks the queue every `cancelCheckMs` which of them were cancelled by
   * another process (PostgreSQL's NOTIFY says so at once; SQLite's processes, and a lost
   * notification, rely on this), and cancels those here.
   */
  function watchForCancels() {
    let timer: NodeJS.Timeout | undefined;
    const watching = () => Boolean(queue.cancelled) && runs.size > 0 && !stopping.signal.aborted;
    const check = async () => {
      timer = undefined;
      if (!watching()) return;
      try {
        for (const id of await queue.cancelled!([...runs.values()].map((run) => run.item))) cancel(id);
      } catch (err) {
        logger.warn({ err, queue: queue.name }, 'could not look for cancelled work');
      }
      started();
    };
    const started = () => {
      if (!timer && watching()) timer = setTimeout(() => void check(), options.cancelCheckMs ?? 1000).unref();
    };
    return { started, stop: () => clearTimeout(timer) };
  }

  /** Forgets what earlier claims found nothing for: new work arrived, or the poll. */
  function lookAnew(): void {
    looks++;
    lookedSinceClaim = true;
    foundEmpty.clear();
  }

  function fill(): void {
    lookAnew();
    void refill();
  }

  return {
    name: queue.name,
    channel: queue.channel,
    /** Works everything due, slot by slot, and resolves once nothing is left running (a `tidy` it began included); what came of it meanwhile. Never throws. */
    async tick(): Promise<Record<Outcome, number>> {
      const before = { ...tally };
      lookAnew();
      for (;;) {
        await refill();
        await claimsSettled();
        if (inFlight.size === 0) break;
        await Promise.race([...inFlight]);
      }
      await tidying;
      return Object.fromEntries(queue.outcomes.map((outcome) => [outcome, tally[outcome] - before[outcome]])) as Record<Outcome, number>;
    },
    /** Claims due work into the free slots without waiting for it (the poll). */
    fill,
    /** New work was recorded: claim it now rather than at the next poll. */
    nudge: fill,
    /** Stops the run of `id` if it runs here: its signal aborts and nothing is recorded for it. */
    cancel,
    /** When this process last looked for this work (health pages). */
    get lastTickAt(): Date | null {
      return lastTickAt;
    },
    /** Items running in this process. */
    get running(): number {
      return runs.size;
    },
    gapWithin,
    /** What a unit typically takes, from its start to its end or its `released` (ms); undefined until one has ended. */
    get typicalRunMs(): number | undefined {
      return typicalRunMs;
    },
    // Exposed so tests can leave work claimed, as a crashed process would, and finish it late.
    claim: () => claim(),
    work: (claimed: Claim<Item>) => {
      for (const item of claimed.items) countKeys(item, 1);
      return start(claimed);
    },
    /**
     * Stops claiming at once; lets running work finish for up to `drainMs`, then aborts its
     * signal (work that ends for it is handed back), and waits for all of it.
     */
    stop({ drainMs = 0 }: { drainMs?: number } = {}): Promise<void> {
      stopped ??= (async () => {
        closing = true;
        await claimsSettled();
        if (drainMs > 0 && inFlight.size > 0) await settledWithin([...inFlight], drainMs);
        stopping.abort(new Error('stopping'));
        for (const run of runs.values()) run.abort.abort(stopping.signal.reason);
        cancelWatch.stop();
        await Promise.all([...inFlight]);
        await tidying;
      })();
      return stopped;
    },
  };
}
