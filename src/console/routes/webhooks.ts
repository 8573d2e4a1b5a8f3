import { Router, type Request, type Response } from 'express';
import type { Services } from '../../services.js';
import { HttpError } from '../../http/errors.js';
import { EVENT_TYPES, TEST_EVENT } from '../../webhooks/events.js';
import { RESPONSE_KEEP_BYTES } from '../../webhooks/send.js';
import { DELIVERY_STATUSES, type DeliveryStatus, type EndpointRow } from '../../webhooks/queries.js';
import type { EndpointInput } from '../../webhooks/service.js';
import { requireAdmin, userActor } from '../auth.js';
import { action, flash, rememberSent, sentAgain, sentAlready } from '../forms.js';
import { pageAt, pagerOf, timeAndIdCursor } from '../pager.js';
import { UUID_PATTERN } from '../../lib/ids.js';
import { render } from '../views.js';

/** How many deliveries a page of an endpoint's list shows. */
const DELIVERIES_PAGE = 50;
const cursor = timeAndIdCursor((id) => UUID_PATTERN.test(id));

/** The form's fields: the URL, a description, and the event types ticked ("All events": every type; none at all is refused). */
function endpointInput(body: Record<string, unknown>): EndpointInput & { url: string } {
  const ticked = ([] as unknown[]).concat(body.events ?? []).map(String);
  return {
    url: String(body.url ?? '').trim(),
    description: String(body.description ?? ''),
    events: body.all_events === 'on' ? null : ticked,
  };
}

/** A JSON body indented for reading; anything else as it is. */
function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** `datetime-local` values are read as UTC, as every time in the console is written. */
const utc = (value: unknown) => (typeof value === 'string' && value ? `${value}${value.length === 16 ? ':00' : ''}Z` : '');

/**
 * Outbound webhooks: the organization's endpoints, a new endpoint's form, and each endpoint's
 * page (edit, test, new secret, enable and disable, delete, and its deliveries with filters,
 * redeliver one, and redeliver the failed ones of a time range after a preview). A secret is
 * shown in the response that made it, never again.
 */
export function webhookRoutes(services: Services): Router {
  const router = Router();
  const pageOf = (id: string) => `/webhooks/${encodeURIComponent(id)}`;
  const org = (req: Request) => req.user!.organization_id;

  router.get('/webhooks', async (req, res) => {
    render(res, 'webhooks/index', { title: 'Webhooks', endpoints: await services.webhooks.list(org(req)) });
  });

  const renderForm = (res: Response, endpoint: Partial<EndpointRow> | null, values: ReturnType<typeof endpointInput>, error: string | null = null) =>
    render(res, 'webhooks/form', { title: endpoint?.id ? 'Edit webhook endpoint' : 'New webhook endpoint', endpoint, values, error, eventTypes: EVENT_TYPES }, error ? 422 : 200);

  /** The endpoint's page; `secret` only in the response that made it. */
  const renderEndpoint = async (req: Request, res: Response, endpoint: EndpointRow, secret: string | null = null) => {
    const status = DELIVERY_STATUSES.includes(req.query.status as DeliveryStatus) ? (req.query.status as DeliveryStatus) : undefined;
    const eventType = [...EVENT_TYPES, TEST_EVENT].includes(String(req.query.event_type)) ? String(req.query.event_type) : undefined;
    const page = await services.webhooks.deliveryPage(endpoint.id, { status, eventType }, pageAt(req, cursor), DELIVERIES_PAGE);
    const filters = { status, event_type: eventType };
    const scope = status || eventType ? 'to this endpoint matching these filters' : 'to this endpoint';
    const pager = pagerOf(page, { path: pageOf(endpoint.id), filters, codec: cursor, noun: ['delivery', 'deliveries'], scope });
    render(res, 'webhooks/show', {
      title: endpoint.url,
      endpoint,
      deliveries: page.items,
      pager,
      secret,
      filters,
      statuses: DELIVERY_STATUSES,
      eventTypes: [...EVENT_TYPES, TEST_EVENT],
    });
  };

  router.get('/webhooks/new', requireAdmin, (_req, res) => renderForm(res, null, { url: '', description: '', events: null }));

  // Rendered, not redirected: the secret is shown in this response only.
  router.post('/webhooks', requireAdmin, sentAlready(sentAgain.made('endpoint')), async (req, res) => {
    const values = endpointInput(req.body);
    try {
      const { endpoint, secret } = await services.webhooks.create(userActor(req), values);
      rememberSent(req, res, pageOf(endpoint.id));
      res.locals.flash = { kind: 'notice', text: 'Endpoint created.' };
      await renderEndpoint(req, res, endpoint, secret);
    } catch (err) {
      if (!(err instanceof HttpError) || err.status !== 422) throw err;
      renderForm(res, null, values, err.message);
    }
  });

  router.get('/webhooks/:id', async (req, res) => {
    await renderEndpoint(req, res, await services.webhooks.get(org(req), String(req.params.id)));
  });

  router.get('/webhooks/:id/deliveries/:delivery', async (req, res) => {
    const { endpoint, delivery, body } = await services.webhooks.delivery(org(req), String(req.params.id), String(req.params.delivery));
    const headers = (stored: string | null) => Object.entries(stored === null ? {} : (JSON.parse(stored) as Record<string, string>));
    render(res, 'webhooks/delivery', {
      title: `Delivery of ${delivery.event_id}`,
      endpoint,
      delivery,
      request: { headers: headers(delivery.request_headers), body: prettyJson(body) },
      response: { headers: headers(delivery.response_headers), body: delivery.response_body, keptBytes: RESPONSE_KEEP_BYTES },
    });
  });

  router.get('/webhooks/:id/edit', requireAdmin, async (req, res) => {
    const endpoint = await services.webhooks.get(org(req), String(req.params.id));
    renderForm(res, endpoint, { url: endpoint.url, description: endpoint.description, events: endpoint.events });
  });

  router.post('/webhooks/:id', requireAdmin, async (req, res) => {
    const id = String(req.params.id);
    const values = endpointInput(req.body);
    try {
      await services.webhooks.update(userActor(req), id, values);
      flash(req, 'notice', 'Endpoint saved.');
      res.redirect(303, pageOf(id));
    } catch (err) {
      if (!(err instanceof HttpError) || err.status !== 422) throw err;
      renderForm(res, await services.webhooks.get(org(req), id), values, err.message);
    }
  });

  router.post('/webhooks/:id/rotate-secret', requireAdmin, sentAlready(sentAgain.secret), async (req, res) => {
    const id = String(req.params.id);
    const { secret, previousValidUntil } = await services.webhooks.rotateSecret(userActor(req), id);
    rememberSent(req, res, pageOf(id));
    res.locals.flash = { kind: 'notice', text: `New secret made. Until ${previousValidUntil.slice(0, 16).replace('T', ' ')} UTC each delivery carries signatures with both.` };
    await renderEndpoint(req, res, await services.webhooks.get(org(req), id), secret);
  });

  const back = (req: Request) => pageOf(String(req.params.id));
  const act = (name: string, run: (req: Request, id: string) => Promise<string>) =>
    router.post(
      `/webhooks/:id/${name}`,
      requireAdmin,
      action(async (req) => {
        const id = String(req.params.id);
        flash(req, 'notice', await run(req, id));
        return pageOf(id);
      }, back),
    );
  act('test', async (req, id) => `Sent a test event, ${(await services.webhooks.sendTest(userActor(req), id)).eventId}.`);
  act('disable', async (req, id) => (await services.webhooks.update(userActor(req), id, { enabled: false }), 'Disabled: no events are sent to it.'));
  act('enable', async (req, id) => (await services.webhooks.update(userActor(req), id, { enabled: true }), 'Enabled: events are sent to it again.'));
  act('redeliver', async (req, id) => (await services.webhooks.redeliver(userActor(req), id, String(req.body.delivery ?? '')), 'Delivery queued again.'));

  router.post(
    '/webhooks/:id/delete',
    requireAdmin,
    action(async (req) => {
      await services.webhooks.remove(userActor(req), String(req.params.id));
      flash(req, 'notice', 'Endpoint deleted.');
      return '/webhooks';
    }, back),
  );

  // Redeliver the failed deliveries of a time range: a preview with the count, then the confirmation.
  router.get('/webhooks/:id/redeliver-failed', requireAdmin, async (req, res) => {
    const id = String(req.params.id);
    const endpoint = await services.webhooks.get(org(req), id);
    const range = { from: utc(req.query.from), to: utc(req.query.to) };
    try {
      const count = await services.webhooks.countFailed(org(req), id, range);
      render(res, 'webhooks/redeliver', { title: 'Redeliver failed deliveries', endpoint, range, count });
    } catch (err) {
      if (!(err instanceof HttpError) || err.status !== 422) throw err;
      flash(req, 'error', err.message);
      res.redirect(303, pageOf(id));
    }
  });

  router.post(
    '/webhooks/:id/redeliver-failed',
    requireAdmin,
    action(async (req) => {
      const id = String(req.params.id);
      const count = await services.webhooks.redeliverFailed(userActor(req), id, { from: String(req.body.from ?? ''), to: String(req.body.to ?? '') });
      flash(req, 'notice', `${count} failed ${count === 1 ? 'delivery' : 'deliveries'} queued again.`);
      return pageOf(id);
    }, back),
  );

  return router;
}
