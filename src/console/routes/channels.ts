import { Router, type Request, type Response } from 'express';
import type { Services } from '../../services.js';
import { HttpError } from '../../http/errors.js';
import type { ChannelInput, ChannelListRow } from '../../channels/service.js';
import { CHANNEL_MODES } from '../../channels/queries.js';
import { VERIFY_PRESETS } from '../../channels/verify.js';
import { requireAdmin, userActor } from '../auth.js';
import { action, flash, rememberSent, sentAgain, sentAlready } from '../forms.js';
import { pageAt, pagerOf, timeAndIdCursor } from '../pager.js';
import { UUID_PATTERN } from '../../lib/ids.js';
import { render } from '../views.js';

/** How many deliveries a page of a channel's list shows. */
const DELIVERIES_PAGE = 50;
const cursor = timeAndIdCursor((id) => UUID_PATTERN.test(id));

function channelInput(body: Record<string, unknown>): ChannelInput & { kind: string } {
  const text = (name: string) => String(body[name] ?? '').trim();
  return { kind: text('kind') || 'webhook', mode: text('mode'), name: text('name'), verify: text('verify'), secret: text('secret') || undefined, address: text('address') };
}

/**
 * The URL senders post to, as this request reached the console: whole for admins; for viewers
 * with its token cut to its first characters, since the whole URL lets anyone who has it post
 * work to the scribe (with no signature at all for a channel that verifies nothing), and a
 * viewer changes nothing.
 */
function inboundUrl(req: Request, channel: ChannelListRow): { url: string; whole: boolean } {
  const whole = req.user!.role === 'admin';
  const token = whole ? channel.token! : `${channel.token!.slice(0, 4)}…`;
  return { url: `${req.protocol}://${req.get('host')}/inbound/${token}`, whole };
}

/** A curl command that sends the channel a JSON body of the fields its mode reads. */
export function sampleRequest(url: string, mode: string): string {
  const body = mode === 'chat' ? { message: 'Hello from curl' } : { title: 'Invoice 1042', summary: 'Call back Ms. Ito about invoice 1042' };
  return `curl -X POST '${url}' \\
  -H 'Content-Type: application/json' \\
  -d '${JSON.stringify(body)}'`;
}

/**
 * Inbound channels: the organization's list, a scribe's new-channel form, and each channel's
 * page (its URL or address, enable and disable, a new secret, and its recent deliveries, each
 * linked to what it made). A secret is shown in the response that made it, never again.
 */
export function channelRoutes(services: Services): Router {
  const router = Router();
  const pageOf = (id: string) => `/channels/${encodeURIComponent(id)}`;

  router.get('/channels', async (req, res) => {
    const [channels, scribes] = await Promise.all([services.channels.list(req.user!.organization_id), services.scribes.listNames(req.user!.organization_id)]);
    render(res, 'channels/index', { title: 'Channels', channels, scribes });
  });

  const renderForm = async (req: Request, res: Response, slug: string, values: ReturnType<typeof channelInput>, error: string | null = null) => {
    const scribe = await services.scribes.getBySlug(req.user!.organization_id, slug);
    render(res, 'channels/form', { title: 'New channel', scribe, values, error, presets: VERIFY_PRESETS, modes: CHANNEL_MODES }, error ? 422 : 200);
  };

  /** The channel's page; `secret` only in the response that made it. */
  const renderChannel = async (req: Request, res: Response, channel: ChannelListRow, secret: string | null = null) => {
    const page = await services.channels.deliveryPage(channel.id, pageAt(req, cursor), DELIVERIES_PAGE);
    const pager = pagerOf(page, { path: pageOf(channel.id), filters: {}, codec: cursor, noun: ['delivery', 'deliveries'], scope: 'to this channel' });
    const inbound = channel.kind === 'webhook' ? inboundUrl(req, channel) : null;
    const sample = inbound?.whole ? sampleRequest(inbound.url, channel.mode) : null;
    render(res, 'channels/show', { title: channel.name, channel, url: inbound?.url ?? null, wholeUrl: inbound?.whole ?? false, sample, deliveries: page.items, pager, secret });
  };

  router.get('/b/:slug/channels/new', requireAdmin, async (req, res) => {
    await renderForm(req, res, String(req.params.slug), { kind: 'webhook', mode: 'task', name: '', verify: 'standard-webhooks', address: '' });
  });

  // Rendered, not redirected: the secret is shown in this response only.
  router.post('/b/:slug/channels', requireAdmin, sentAlready(sentAgain.made('channel')), async (req, res) => {
    const slug = String(req.params.slug);
    const values = channelInput(req.body);
    try {
      const { channel, secret } = await services.channels.create(userActor(req), slug, values);
      rememberSent(req, res, pageOf(channel.id));
      res.locals.flash = { kind: 'notice', text: 'Channel created.' };
      await renderChannel(req, res, await services.channels.get(req.user!.organization_id, channel.id), secret);
    } catch (err) {
      if (!(err instanceof HttpError) || err.status !== 422) throw err;
      await renderForm(req, res, slug, values, err.message);
    }
  });

  router.get('/channels/:id', async (req, res) => {
    await renderChannel(req, res, await services.channels.get(req.user!.organization_id, String(req.params.id)));
  });

  router.post('/channels/:id/rotate-secret', requireAdmin, sentAlready(sentAgain.secret), async (req, res) => {
    const id = String(req.params.id);
    try {
      const secret = await services.channels.rotateSecret(userActor(req), id);
      rememberSent(req, res, pageOf(id));
      res.locals.flash = { kind: 'notice', text: 'New secret made: the old one no longer verifies.' };
      await renderChannel(req, res, await services.channels.get(req.user!.organization_id, id), secret);
    } catch (err) {
      if (!(err instanceof HttpError) || err.status !== 422) throw err;
      flash(req, 'error', err.message);
      res.redirect(303, pageOf(id));
    }
  });

  for (const [name, enabled, notice] of [
    ['disable', false, 'Disabled: its URL or address now answers as unknown.'],
    ['enable', true, 'Enabled: it takes deliveries again.'],
  ] as const) {
    router.post(
      `/channels/:id/${name}`,
      requireAdmin,
      action(
        async (req) => {
          const id = String(req.params.id);
          await services.channels.setEnabled(userActor(req), id, enabled);
          flash(req, 'notice', notice);
          return pageOf(id);
        },
        (req) => pageOf(String(req.params.id)),
      ),
    );
  }

  return router;
}
