import { Router, type Request, type Response } from 'express';
import type { Services } from '../../services.js';
import { HttpError } from '../../http/errors.js';
import { AGENT_KINDS, SCRIBE_STATES } from '../../scribes/queries.js';
import { presentMcpServer } from '../../agents/mcp-servers.js';
import { requireAdmin, userActor } from '../auth.js';
import { action, flash } from '../forms.js';
import { scribeThroughputChart } from '../activity-charts.js';
import { zoneClock } from '../charts.js';
import { isLiveRefresh } from '../live.js';
import { render } from '../views.js';

/** How many sessions a scribe's Activity tab shows, collapsed; the rest are on its sessions list. */
const LATEST_SESSIONS = 5;
/** How many receipts and tasks it shows; the rest are on the lists filtered to the scribe. */
const LATEST_ROWS = 10;

/**
 * A whole-number field as the service takes it: empty is the default (the server's model
 * settings, no budget or cap), as the CLI without the flag; digits are the number; anything
 * else (2.5, 0x10, 1e3) is not a whole number, which the service refuses in its own words.
 */
function wholeField(value: string): number | null {
  const text = value.trim();
  if (text === '') return null;
  return /^\d+$/.test(text) ? Number(text) : Number.NaN;
}

/**
 * The scribes list and each scribe's own page in two tabs, each its own address: Activity
 * (`/b/<slug>`: its latest sessions, receipts and tasks) and Settings (`/b/<slug>/settings`:
 * name, state, agent, MCP servers, schedules, channels), where every settings form returns.
 */
export function scribeRoutes(services: Services): Router {
  const router = Router();
  const pageOf = (slug: string) => `/b/${encodeURIComponent(slug)}`;
  const settingsOf = (slug: string) => `${pageOf(slug)}/settings`;
  const backToSettings = (req: Request) => settingsOf(String(req.params.slug));
  /** The scribe a `/b/:slug` page is of: 404 for a slug of no scribe of the organization. */
  const scribeOf = async (req: Request) => {
    const ref = await services.scribes.getBySlug(req.user!.organization_id, String(req.params.slug));
    return (await services.scribes.find(ref.id))!;
  };

  router.get('/scribes', async (req, res) => {
    render(res, 'scribes/index', { title: 'Scribes', scribes: await services.consoleReads.scribesWithCounts(req.user!.organization_id) });
  });

  /** What the New scribe form holds, as typed (the API key is never sent back). */
  const typed = (body: Record<string, unknown> = {}) => {
    const field = (name: string) => String(body[name] ?? '').trim();
    return {
      name: field('name'),
      slug: field('slug'),
      state: field('state') || 'active',
      agent: field('agent') || 'builtin',
      instructions: String(body.instructions ?? ''),
      model: field('model'),
      base_url: field('base_url'),
      vision: body.vision === 'on',
      max_tool_rounds: field('max_tool_rounds'),
      token_budget: field('token_budget'),
      max_concurrency: field('max_concurrency'),
    };
  };
  const newForm = (res: Response, status: number, form: ReturnType<typeof typed>, error: string | null = null) =>
    render(res, 'scribes/new', { title: 'New scribe', form, error, states: SCRIBE_STATES, agents: AGENT_KINDS }, status);

  router.get('/scribes/new', requireAdmin, (_req, res) => newForm(res, 200, typed()));

  router.post('/scribes', requireAdmin, async (req: Request, res: Response) => {
    const form = typed(req.body);
    try {
      const scribe = await services.scribes.create({
        organizationId: req.user!.organization_id,
        slug: form.slug,
        name: form.name,
        state: form.state,
        agent: form.agent,
        instructions: form.instructions,
        model: form.model,
        baseUrl: form.base_url,
        apiKey: String(req.body.api_key ?? '').trim() || null,
        vision: form.vision,
        maxToolRounds: wholeField(form.max_tool_rounds),
        tokenBudget: wholeField(form.token_budget),
        maxConcurrency: wholeField(form.max_concurrency),
      });
      await services.audit.record(userActor(req), 'scribe.create', { type: 'scribe', id: scribe.id }, `${scribe.slug} (${scribe.state}, ${scribe.agent})`);
      flash(req, 'notice', `${scribe.name} is created: its API is at /api/v1/scribes/${scribe.slug}.`);
      res.redirect(303, pageOf(scribe.slug));
    } catch (err) {
      if (!(err instanceof HttpError) || err.status !== 422) throw err;
      newForm(res, 422, form, err.message);
    }
  });

  router.post(
    '/b/:slug/name',
    requireAdmin,
    action(
      async (req) => {
        const slug = String(req.params.slug);
        const scribe = await services.scribes.rename(req.user!.organization_id, slug, String(req.body.name ?? ''));
        await services.audit.record(userActor(req), 'scribe.rename', { type: 'scribe', id: scribe.id }, scribe.name);
        flash(req, 'notice', `Renamed to ${scribe.name}.`);
        return settingsOf(slug);
      },
      backToSettings,
      { form: 'name' },
    ),
  );

  router.get('/b/:slug', async (req, res) => {
    const org = req.user!.organization_id;
    const scribe = await scribeOf(req);
    const [throughput, sessions, receipts, tasks] = await Promise.all([
      // The page polls while open; the chart is not one of the parts a refresh swaps.
      isLiveRefresh(req) ? null : scribeThroughputChart(services.consoleReads, org, scribe.id, services.clock().getTime(), zoneClock(res.locals.timeZone)),
      services.sessions.listWithTranscripts(scribe.id, LATEST_SESSIONS),
      // The first rows of the lists its "All … of this scribe" links open.
      services.consoleReads.listReceipts(org, { scribeId: scribe.id, limit: LATEST_ROWS, countTotal: false }),
      services.consoleReads.listTasks(org, { scribeId: scribe.id, limit: LATEST_ROWS, countTotal: false }),
    ]);
    // The page always polls (views/scribes/show.ejs): new sessions arrive from the API at any time.
    render(res, 'scribes/show', { title: scribe.name, scribe, throughput, sessions, receipts: receipts.items, tasks: tasks.items });
  });

  // Not live: settings change only by staff's hand (these forms or the CLI), and each refresh would read them all again.
  router.get('/b/:slug/settings', async (req, res) => {
    const org = req.user!.organization_id;
    const scribe = await scribeOf(req);
    const [schedules, channels, mcpServers] = await Promise.all([
      services.schedules.list(org, scribe.id),
      services.channels.list(org, scribe.id),
      services.mcpServers.list(scribe.id),
    ]);
    render(res, 'scribes/settings', { title: `Settings of ${scribe.name}`, scribe, schedules, channels, mcpServers: mcpServers.map(presentMcpServer), agents: AGENT_KINDS });
  });

  router.post(
    '/b/:slug/state',
    requireAdmin,
    action(async (req) => {
      const slug = String(req.params.slug);
      const scribe = await services.scribes.setState(req.user!.organization_id, slug, String(req.body.state ?? ''));
      await services.audit.record(userActor(req), 'scribe.state', { type: 'scribe', id: scribe.id }, scribe.state);
      flash(req, 'notice', `${scribe.slug} is now ${scribe.state.replace('_', ' ')}.`);
      return settingsOf(slug);
    }, backToSettings),
  );

  router.post(
    '/b/:slug/agent',
    requireAdmin,
    action(
      async (req) => {
        const slug = String(req.params.slug);
        const field = (name: string) => String(req.body[name] ?? '').trim();
        const scribe = await services.scribes.setAgent(req.user!.organization_id, slug, {
          agent: String(req.body.agent ?? ''),
          instructions: String(req.body.instructions ?? ''),
          model: field('model'),
          baseUrl: field('base_url'),
          // The key is never shown: an empty field keeps it, the box removes it.
          apiKey: req.body.remove_api_key === 'on' ? null : field('api_key') || undefined,
          vision: req.body.vision === 'on',
          maxToolRounds: wholeField(field('max_tool_rounds')),
          tokenBudget: wholeField(field('token_budget')),
          maxConcurrency: wholeField(field('max_concurrency')),
        });
        await services.audit.record(userActor(req), 'scribe.agent', { type: 'scribe', id: scribe.id }, scribe.agent);
        flash(req, 'notice', 'Agent settings saved.');
        return settingsOf(slug);
      },
      backToSettings,
      { form: 'agent', secrets: ['api_key'] },
    ),
  );

  router.post(
    '/b/:slug/mcp',
    requireAdmin,
    action(
      async (req) => {
        const slug = String(req.params.slug);
        const headers = String(req.body.headers ?? '').split(/\r?\n/);
        const server = await services.mcpServers.add(userActor(req), slug, { url: String(req.body.url ?? ''), headers });
        flash(req, 'notice', `MCP server ${server.url} added: its tools are offered to the openai agent.`);
        return settingsOf(slug);
      },
      backToSettings,
      { form: 'mcp', secrets: ['headers'] },
    ),
  );

  router.post(
    '/b/:slug/mcp/:id/remove',
    requireAdmin,
    action(async (req) => {
      await services.mcpServers.remove(userActor(req), String(req.params.id));
      flash(req, 'notice', 'MCP server removed.');
      return backToSettings(req);
    }, backToSettings),
  );

  return router;
}
