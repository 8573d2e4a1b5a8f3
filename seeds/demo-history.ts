import type { Services } from '../src/services.js';
import type { Actor } from '../src/audit/service.js';
import type { ScribeRef } from '../src/scribes/service.js';
import type { ScheduleRow } from '../src/schedules/queries.js';
import { nextFires } from '../src/schedules/cron.js';
import { touchApiKey } from '../src/organizations/queries.js';
import { DASHBOARD_SPAN } from '../src/console/activity-charts.js';
import { timeWindow } from '../src/console/charts.js';
import { ATLAS, CHATS, HERMES, type ChatTurn, type TaskScript } from './demo-scripts.js';
import type { generator } from './generator.js';

/**
 * The demo's last three days, lived through by the product itself: a clock set back three
 * days, and the services doing what the API, the console and the background queues do, in
 * order, at each moment's time: receipts submitted with the demo key, dispatched, their tasks
 * worked (by the demo agent, demo-scripts.ts); chats; schedules firing; scribes powered off
 * and on by the demo admin, failures retried and discarded; webhook deliveries attempted and
 * retried on their schedule. So every row, counter, event and audit entry is what the
 * product writes, and the console has something to show from the first start.
 */

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** How far back the history starts. */
export const HISTORY_MS = 72 * HOUR;

/** The demo's failing webhook endpoint: a name that resolves to loopback, which the address policy refuses (or, allowed, port 9 refuses). */
export const FAILING_ENDPOINT = {
  url: 'http://localhost:9/scribe-events',
  description: 'On-call alerts. Its receiver is gone, so every delivery fails and is retried on the schedule.',
  events: ['request.failed', 'task.waiting', 'session.failed'],
};

/**
 * A clock that runs on from wherever it was last set: the history's moments are lived through
 * in order. `realNow` is the time the history leads up to (tests set it to a chosen hour).
 */
export function travelClock(realNow: () => number = Date.now) {
  let offset = 0;
  const clock = () => new Date(realNow() + offset);
  return Object.assign(clock, {
    /** From now on the clock reads `ms` and runs on. */
    startAt(ms: number) {
      offset = ms - realNow();
    },
    /** On to `ms`, if the clock has not passed it yet: the history's moments keep their order. */
    moveTo(ms: number) {
      offset = Math.max(ms, clock().getTime()) - realNow();
    },
    /** Back to the real time (later than any moment of the history). */
    resume() {
      offset = 0;
    },
  });
}
export type TravelClock = ReturnType<typeof travelClock>;

/** What the history's moments act with. */
interface World {
  services: Services;
  clock: TravelClock;
  organizationId: string;
  /** The demo's console user, and its API key, as the audit log names them. */
  admin: Actor;
  api: Actor;
  scribes: Map<string, ScribeRef>;
  /** Receipts by the title of their task, latest last. */
  receipts: Map<string, string[]>;
  /** Receipts failed so far, in order. */
  failed: string[];
  endpointId?: string;
  /** When the API key was last used. */
  keyUsedAt?: string;
}

/** One moment of the history. */
interface Step {
  at: number;
  act: (world: World) => Promise<unknown>;
}

type Random = ReturnType<typeof generator>;

/**
 * Replays the history into a new demo organization, from `now` minus HISTORY_MS to just
 * before `now`, then sets the clock back to the real time and does what fell due meanwhile.
 * The organization's scribes, schedules, console user (`admin`) and API key (`api`) exist,
 * made at the history's start.
 */
export async function replayHistory(
  services: Services,
  clock: TravelClock,
  { organizationId, admin, api, now, random }: { organizationId: string; admin: Actor; api: Actor; now: number; random: Random },
): Promise<void> {
  const scribes = await services.scribes.list(organizationId);
  const world: World = { services, clock, organizationId, admin, api, scribes: new Map(scribes.map((s) => [s.slug, s])), receipts: new Map(), failed: [] };
  const steps = timeline(now, await services.schedules.list(organizationId), random).sort((a, b) => a.at - b.at);
  for (const step of steps) {
    await deliveriesDue(world, clock, step.at);
    clock.moveTo(step.at);
    await step.act(world);
  }
  // The API records a key's use as it authenticates a call, at most once a minute; here, the last.
  if (world.keyUsedAt) await touchApiKey(services.db, api.id!, world.keyUsedAt);
  clock.resume();
  // A schedule's fire time in the history's last minutes, too late for a moment of its own, is fired now, as a server's first ticks would.
  await fire(world);
  await work(world);
  await deliveriesDue(world, clock, clock().getTime());
}

/** Attempts each webhook delivery that falls due by `until`, at its time (the worker's retry schedule). */
async function deliveriesDue(world: World, clock: TravelClock, until: number): Promise<void> {
  if (!world.endpointId) return;
  for (;;) {
    const next = await world.services.db('webhook_deliveries').where({ endpoint_id: world.endpointId, status: 'pending' }).min({ at: 'available_at' }).first();
    if (!next?.at || Date.parse(next.at) > until) return;
    clock.moveTo(Date.parse(next.at));
    if ((await world.services.webhookWorker.tick()).attempted === 0) return;
  }
}

// ---- what happens, and when -------------------------------------------------------------

const submit = (slug: 'atlas' | 'hermes', script: TaskScript) => async (w: World) => {
  const receipt = await w.services.requests.submit(w.scribes.get(slug)!, { task: script.task }, { actor: w.api });
  w.keyUsedAt = receipt.created_at;
  w.receipts.set(script.task.title, [...(w.receipts.get(script.task.title) ?? []), receipt.id]);
};
const dispatch = (w: World) => w.services.dispatcher.tick();
const fire = async (w: World) => {
  await w.services.schedules.tick();
  await dispatch(w);
};
const work = (w: World) => w.services.runtime.tick();

/** A receipt sent with the API, dispatched after `latency`, its task worked for `duration`. */
function task(at: number, slug: 'atlas' | 'hermes', script: TaskScript, latency: number, duration: number): Step[] {
  return [
    { at, act: submit(slug, script) },
    { at: at + latency, act: dispatch },
    { at: at + latency + duration, act: work },
  ];
}

/** A chat with atlas: each user message, answered a few seconds later; the next a few minutes after. */
function chat(at: number, turns: readonly ChatTurn[], random: Random): Step[] {
  let session: string | undefined;
  return turns.flatMap((turn, i) => {
    const t = at + i * (2 * MINUTE + random.next() * 3 * MINUTE);
    const say = async (w: World) => {
      w.keyUsedAt = w.services.clock().toISOString();
      if (session) await w.services.sessions.addMessage(w.api, session, turn.user);
      else session = (await w.services.sessions.start(w.scribes.get('atlas')!, { message: turn.user, endImmediately: false }, w.api)).id;
    };
    return [
      { at: t, act: say },
      { at: t + 4 * SECOND + random.next() * 8 * SECOND, act: work },
    ];
  });
}

/** The demo admin, signed in to the console. */
const signedIn = (w: World) => w.services.users.recordSignIn(w.admin.id!);

/** The demo admin powers hermes on or off in the console (audited as the console does). */
function power(at: number, state: 'active' | 'powered_off'): Step {
  return {
    at,
    async act(w) {
      await signedIn(w);
      const scribe = await w.services.scribes.setState(w.organizationId, 'hermes', state);
      w.scribes.set('hermes', scribe);
      await w.services.audit.record(w.admin, 'scribe.state', { type: 'scribe', id: scribe.id }, state);
    },
  };
}

/**
 * Moments that must follow each other with nothing between: one step that lives through
 * each at its time. (Another moment that fell between them, such as a schedule's fire
 * at that time of day, would otherwise act on what they set up.)
 */
function inOrder(steps: Step[]): Step {
  return {
    at: steps[0]!.at,
    async act(w) {
      for (const step of steps) {
        w.clock.moveTo(step.at);
        await step.act(w);
      }
    },
  };
}

/** Hermes powered off just as receipts came in: the dispatcher fails them (`Scribe is not active`). */
function powerOffRace(at: number, scripts: readonly TaskScript[]): Step {
  // No dispatch may come between the receipts and the power cut.
  return inOrder([
    ...scripts.map((script, i) => ({ at: at - 200 + i * 40, act: submit('hermes', script) })),
    power(at, 'powered_off'),
    {
      at: at + 300,
      async act(w: World) {
        await dispatch(w);
        for (const script of scripts) {
          const receipt = await w.services.requests.get(w.organizationId, w.receipts.get(script.task.title)!.at(-1)!);
          if (receipt.status === 'failed') w.failed.push(receipt.id);
        }
      },
    },
  ]);
}

/** The demo admin acts on the oldest failure not yet dealt with. */
function onFailure(at: number, act: 'retry' | 'discard'): Step[] {
  const steps: Step[] = [
    {
      at,
      async act(w) {
        const id = w.failed.shift();
        await signedIn(w);
        if (id) await (act === 'retry' ? w.services.requests.retry(w.admin, id) : w.services.requests.discard(w.admin, id));
      },
    },
  ];
  if (act === 'retry') steps.push({ at: at + 150, act: dispatch }, { at: at + 40 * SECOND, act: work });
  return steps;
}

/** A task that asks first: staff answer `after` later, and the scribe finishes it. */
function asked(at: number, script: TaskScript, after: number, input: string): Step[] {
  return [
    ...task(at, 'atlas', script, 120, 9 * SECOND),
    {
      at: at + after,
      async act(w) {
        const receipt = await w.services.requests.get(w.organizationId, w.receipts.get(script.task.title)!.at(-1)!);
        await signedIn(w);
        await w.services.tasks.giveInput(w.admin, receipt.entity_id!, input);
      },
    },
    { at: at + after + 50 * SECOND, act: work },
  ];
}

/** Busy in working hours, quiet at night (Europe/Berlin): the average minutes between bursts of receipts. */
function meanGapMinutes(at: number): number {
  const hour = Number(new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Berlin', hour: 'numeric', hourCycle: 'h23' }).format(at));
  if (hour >= 8 && hour < 18) return 80;
  if (hour >= 18 && hour < 23) return 150;
  return 300;
}

/**
 * Everything that happens, unordered. Receipts come in bursts, each a task of a scribe that
 * is on: through the day, more in working hours; in the last 3 hours (the dashboard's
 * charts) a smaller burst in each of the charts' 5-minute bars. Around them, fixed
 * moments: hermes's power cuts, failures and what staff did about them, chats, questions.
 */
function timeline(now: number, schedules: readonly ScheduleRow[], random: Random): Step[] {
  const start = now - HISTORY_MS;
  const hermesOn: Array<[from: number, to: number]> = [
    [start + 5 * MINUTE, now - 52 * HOUR],
    [now - 47 * HOUR, now - 28 * HOUR],
    [now - 22 * HOUR, now - 130 * MINUTE],
  ];
  const hermesIsOn = (at: number) => hermesOn.some(([from, to]) => at >= from + MINUTE && at < to - 5 * MINUTE);
  const atlasWork = [ATLAS.globex, ATLAS.deciders, ATLAS.followUp, ATLAS.leads, ATLAS.initech, ATLAS.compare, ATLAS.links, ATLAS.tickets, ATLAS.welcome, ATLAS.basel];
  const hermesWork = Object.values(HERMES);

  const burst = (at: number, most: number): Step[] => {
    const size = 1 + Math.floor(random.next() ** 2 * most);
    // Mostly a fraction of a second from 202 to fulfilled; now and then a few seconds.
    const latency = random.next() < 0.9 ? 60 + random.next() * 340 : 1000 + random.next() * 3000;
    return Array.from({ length: size }, (_, i) => {
      const slug = hermesIsOn(at) && random.next() < 0.3 ? 'hermes' : 'atlas';
      return task(at + i * 700, slug, random.pick(slug === 'hermes' ? hermesWork : atlasWork), latency, 15 * SECOND + random.next() * 80 * SECOND);
    }).flat();
  };

  const steps: Step[] = [];
  const dashboard = timeWindow(now, DASHBOARD_SPAN.spanMs, DASHBOARD_SPAN.bucketMs);
  for (let at = start + 20 * MINUTE; ; ) {
    at += meanGapMinutes(at) * MINUTE * (0.5 + random.next());
    if (at >= dashboard.start) break;
    steps.push(...burst(at, 5));
  }
  for (let i = 0; i < dashboard.buckets; i++) {
    const from = dashboard.start + i * dashboard.bucketMs;
    // Each burst's work done before now.
    const to = Math.min(from + dashboard.bucketMs, now - 3 * MINUTE);
    if (to - from >= MINUTE) steps.push(...burst(from + (0.1 + 0.8 * random.next()) * (to - from), 2));
  }

  for (const schedule of schedules) {
    for (const at of nextFires(schedule, new Date(schedule.created_at), 10)
      .map((d) => d.getTime())
      .filter((t) => t < now - 2 * MINUTE)) {
      steps.push({ at: at + 200, act: fire }, { at: at + 45 * SECOND, act: work });
    }
  }

  steps.push(
    power(start + 5 * MINUTE, 'active'),
    {
      at: start + 10 * MINUTE,
      async act(w) {
        await signedIn(w);
        w.endpointId = (await w.services.webhooks.create(w.admin, FAILING_ENDPOINT)).endpoint.id;
      },
    },
    ...asked(start + 2 * HOUR, ATLAS.advisory, 35 * MINUTE, 'Only listed companies with more than 2,000 employees. Six seats.'),
    ...task(now - 60 * HOUR, 'atlas', ATLAS.invoices, 150, 6 * SECOND),
    powerOffRace(now - 52 * HOUR, [HERMES.fix, HERMES.invoice]),
    power(now - 47 * HOUR, 'active'),
    ...onFailure(now - 47 * HOUR + 4 * MINUTE, 'retry'),
    ...task(now - 30 * HOUR, 'atlas', ATLAS.leadsImport, 90, 5 * SECOND),
    powerOffRace(now - 28 * HOUR, [HERMES.status]),
    ...chat(now - 27 * HOUR, CHATS.acme, random),
    power(now - 22 * HOUR, 'active'),
    ...onFailure(now - 22 * HOUR + 2 * MINUTE, 'discard'),
    powerOffRace(now - 130 * MINUTE, [HERMES.escalation, HERMES.feature]),
    ...chat(now - 95 * MINUTE, CHATS.basel, random),
    ...task(now - 40 * MINUTE, 'atlas', ATLAS.invoices, 110, 7 * SECOND),
    ...chat(now - 25 * MINUTE, CHATS.office, random),
    ...task(now - 12 * MINUTE, 'atlas', ATLAS.renewals, 80, 6 * SECOND),
  );
  return steps;
}
