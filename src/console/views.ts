import type { Response } from 'express';
import type { Services } from '../services.js';
import type { UserRow, PasswordLinkPurpose } from '../users/service.js';
import type { AuditEventRow } from '../audit/service.js';
import type { EntryTypeWithFields } from '../entries/entry-type-service.js';
import type { EndpointRow } from '../webhooks/queries.js';
import type { EndpointInput } from '../webhooks/service.js';
import type { ChannelInput, ChannelListRow } from '../channels/service.js';
import type { ScheduleInput } from '../schedules/service.js';
import type { presentMcpServer } from '../agents/mcp-servers.js';
import type { Chart } from './charts.js';
import type { DashboardCharts } from './activity-charts.js';
import type { Pager } from './pager.js';
import type { viewHelpers } from './view-helpers.js';
import type { entryFormat } from './entry-format.js';
import type { receiptFilters } from './routes/receipts.js';
import type { taskFilters } from './routes/tasks.js';
import type { sessionFilters } from './routes/session-list.js';
import type { Flash } from './forms.js';

/**
 * What every view receives. The console's middleware sets these on res.locals for every
 * page; a page's own locals may set `live` and nothing else of them, so that a page cannot
 * hand a view a value of another shape under a name every view reads (a `now` that is a
 * string made every time on the dashboard a date).
 */
export interface BaseLocals {
  h: typeof viewHelpers;
  user: UserRow | null;
  path: string;
  csrfToken: string;
  flash: Flash | null;
  /** The page refreshes itself (public/live.js). */
  live: boolean;
  /** The reader's IANA zone, in which every time is written. */
  timeZone: string;
  /** The services' clock, in ms: times are relative to it. */
  now: number;
}

/** What a service function answers, awaited. */
type Result<F> = F extends (...args: never[]) => infer R ? Awaited<R> : never;
type Reads = Services['consoleReads'];
type Filters<F extends (...args: never[]) => Promise<{ filters: unknown; scribes: unknown }>> = Pick<Awaited<ReturnType<F>>, 'filters' | 'scribes'>;
type Trace = { calls: Result<Services['traces']['of']>; totals: { [key: string]: unknown } };
type Scribe = NonNullable<Result<Services['scribes']['find']>>;
type ScribeRef = Result<Services['scribes']['getBySlug']>;
type SchedulePreview = { description: string | null; next: Date[]; error: string | null };
/** The page refreshes more often while a reply is being written (ms), or at its usual pace. */
type LiveEvery = { liveEveryMs: number | undefined };

/** Each view (its path under views/) and the locals its page passes it. */
export interface Views {
  error: { title: string; message: string; status: number };
  login: { title: string; email: string; error: string | null; next: string };
  'invite/show': { title: string; purpose: PasswordLinkPurpose; email: string; token: string; error: string | null };
  dashboard: {
    title: string;
    charts: DashboardCharts | null;
    statuses: readonly string[];
    lastHour: Record<string, number>;
    lastDay: Record<string, number>;
    /** Each background worker: its last tick, its backlog in words, and work queued for powered-off scribes (null: none). */
    workers: Array<{ name: string; lastTick: string | null; backlog: string; oldest: string | null; parked: string | null }>;
    failures: Result<Reads['recentFailures']>;
  };
  'account/show': { title: string; zones: string[]; current: string | null };
  'audit/index': {
    title: string;
    events: AuditEventRow[];
    pager: Pager;
    filters: Record<string, string>;
    filtered: boolean;
    actions: string[];
    actorTypes: readonly string[];
    subjectTypes: readonly string[];
    subjects: Map<string, { name: string; href: string | null } | 'deleted'>;
    /** Filters that cannot be used (a bound that is no time): what to mend; nothing was looked for. */
    error: string | null;
  };
  'channels/index': { title: string; channels: ChannelListRow[]; scribes: Result<Services['scribes']['listNames']> };
  'channels/form': { title: string; scribe: ScribeRef; values: ChannelInput & { kind: string }; error: string | null; presets: readonly string[]; modes: readonly string[] };
  'channels/show': {
    title: string;
    channel: ChannelListRow;
    /** A webhook channel's URL: whole for admins, its token cut for viewers (`wholeUrl` false). */
    url: string | null;
    wholeUrl: boolean;
    sample: string | null;
    deliveries: Result<Services['channels']['deliveryPage']>['items'];
    pager: Pager;
    secret: string | null;
  };
  'entry-types/index': { title: string; types: EntryTypeWithFields[]; counts: Record<string, number>; fieldTypes: readonly string[]; rows: number };
  'entry-types/show': {
    title: string;
    type: EntryTypeWithFields;
    entries: Result<Services['entries']['list']>['entries'];
    pager: Pager;
    filters: { q: string; drafts: boolean; archived: boolean };
    searchError: string | null;
    primary: string;
    names: Map<string, string>;
    fmt: typeof entryFormat;
  };
  'entry-types/edit': { title: string; type: EntryTypeWithFields; types: EntryTypeWithFields[]; fieldTypes: readonly string[]; rows: number };
  'entries/form': { title: string; type: EntryTypeWithFields; entry: Result<Services['entries']['get']> | null; names: Map<string, string> };
  'entries/show': {
    title: string;
    type: EntryTypeWithFields;
    entry: Result<Services['entries']['get']>;
    titles: Map<string, string>;
    linkedFrom: Result<Services['entries']['linkedFrom']>;
  };
  'failures/bulk': { title: string; kind: string; act: string; verb: string; filters: Record<string, unknown>; upto: string; total: number; max: number };
  'keys/index': {
    title: string;
    keys: Result<Services['organizations']['listApiKeys']>;
    created: Result<Services['organizations']['createApiKey']> | null;
    /** A refused name: the message, and the name as typed. */
    error: string | null;
    name: string;
  };
  'receipts/index': Filters<typeof receiptFilters> & {
    title: string;
    receipts: Result<Reads['listReceipts']>['items'];
    pager: Pager;
    statuses: readonly string[];
    sinces: string[];
    live: boolean;
  };
  'receipts/show': NonNullable<Result<Reads['findReceipt']>> & {
    title: string;
    timeline: Array<{ status: string; at: string }>;
    live: boolean;
    delivery: Result<Services['channels']['deliveryOfRequest']>;
  };
  'schedules/index': { title: string; schedules: Result<Services['schedules']['list']>; scribes: Result<Services['scribes']['listNames']> };
  'schedules/form': {
    title: string;
    scribe: ScribeRef;
    schedule: { id: string } | null;
    values: ScheduleInput & { timezone: string; overlap: string };
    preview: SchedulePreview;
    error: string | null;
    overlaps: readonly string[];
  };
  'schedules/show': {
    title: string;
    schedule: Result<Services['schedules']['get']>;
    fires: Result<Services['schedules']['firePage']>['items'];
    pager: Pager;
    preview: SchedulePreview;
  };
  'scribes/index': { title: string; scribes: Result<Reads['scribesWithCounts']> };
  'scribes/new': { title: string; form: Record<string, string | boolean>; error: string | null; states: readonly string[]; agents: readonly string[] };
  /** A scribe's Activity tab. */
  'scribes/show': {
    title: string;
    scribe: Scribe;
    throughput: Chart | null;
    sessions: Result<Services['sessions']['listWithTranscripts']>;
    receipts: Result<Reads['listReceipts']>['items'];
    tasks: Result<Reads['listTasks']>['items'];
  };
  /** A scribe's Settings tab. */
  'scribes/settings': {
    title: string;
    scribe: Scribe;
    schedules: Result<Services['schedules']['list']>;
    channels: ChannelListRow[];
    mcpServers: Array<ReturnType<typeof presentMcpServer>>;
    agents: readonly string[];
  };
  'search/index': {
    title: string;
    q: string;
    receipts: Result<Reads['listReceipts']>['items'];
    tasks: Result<Reads['listTasks']>['items'];
    scribes: Result<Reads['scribesMatching']>;
    entries: Array<Result<Services['entries']['findByPrimary']>[number] & { primary: string; seeAll: string | null }>;
    sessions: Result<Reads['listSessions']>['items'];
    searchWindow: number;
    moreReceipts?: boolean;
    moreTasks?: boolean;
    moreSessions?: boolean;
    error: string | null;
    nothing: string;
  };
  'sessions/index': Filters<typeof sessionFilters> & {
    title: string;
    sessions: Result<Reads['listSessions']>['items'];
    pager: Pager;
    selected: { name: string } | null;
    states: Array<[string, string]>;
    searchWindow: number;
  };
  'sessions/show': Trace &
    LiveEvery & { title: string; session: Result<Services['sessions']['get']>; scribe: Scribe; delivery: Result<Services['channels']['deliveryOfSession']>; live: boolean };
  'tasks/index': Filters<typeof taskFilters> & { title: string; tasks: Result<Reads['listTasks']>['items']; pager: Pager; statuses: readonly string[] };
  'tasks/show': Trace & LiveEvery & { title: string; task: Result<Services['tasks']['get']>; scribe: Scribe; live: boolean };
  'users/index': {
    title: string;
    users: Array<Result<Services['users']['list']>[number] & { state: string }>;
    roles: readonly string[];
    shown: { kind: 'invite' | 'reset'; email: string; url: string } | null;
    form: { email: string; role: string };
  };
  'webhooks/index': { title: string; endpoints: Result<Services['webhooks']['list']> };
  'webhooks/form': { title: string; endpoint: Partial<EndpointRow> | null; values: EndpointInput & { url: string }; error: string | null; eventTypes: readonly string[] };
  'webhooks/show': {
    title: string;
    endpoint: EndpointRow;
    deliveries: Result<Services['webhooks']['deliveryPage']>['items'];
    pager: Pager;
    secret: string | null;
    filters: Record<string, unknown>;
    statuses: readonly string[];
    eventTypes: readonly string[];
  };
  'webhooks/delivery': {
    title: string;
    endpoint: EndpointRow;
    delivery: Result<Services['webhooks']['delivery']>['delivery'];
    request: { headers: Array<[string, string]>; body: string };
    response: { headers: Array<[string, string]>; body: string | null; keptBytes: number };
  };
  'webhooks/redeliver': { title: string; endpoint: EndpointRow; range: { from: string | null; to: string | null }; count: number };
}

/** A page's locals: its own, and none of what every view receives but `live`. */
export type PageLocals<V extends keyof Views> = Views[V] & { [K in Exclude<keyof BaseLocals, 'live'>]?: never };

/**
 * Renders a console page with the locals its view expects: every console route renders
 * through here, so a page that passes the wrong shape fails the type check.
 */
export function render<V extends keyof Views>(res: Response, view: V, locals: PageLocals<V>, status = 200): void {
  res.status(status).render(view, locals);
}
