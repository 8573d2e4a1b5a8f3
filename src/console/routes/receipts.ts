import { Router } from 'express';
import type { Services } from '../../services.js';
import { REQUEST_STATUSES } from '../../requests/schemas.js';
import { filtersScope, pageAt, pagerOf, timeAndIdCursor } from '../pager.js';
import { NotFoundError } from '../../http/errors.js';
import { REQUEST_ID_PATTERN } from '../../lib/ids.js';
import { filterText, scribeFilter } from './filters.js';
import type { ReceiptFilter } from '../queries.js';
import { sanitizeFilename } from '../../requests/attachments/fetch.js';
import { servableMediaType } from '../../requests/attachments/media-type.js';
import { render } from '../views.js';

const PAGE = 25;
const cursor = timeAndIdCursor((id) => REQUEST_ID_PATTERN.test(id));
/** The time filter's choices: how far back, in milliseconds. */
const SINCE: Record<string, number> = { '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000 };

export const messages = { receiptNotFound: 'Request not found', attachmentNotFound: 'Attachment not found' };

/**
 * The receipts list's filters from a query string or a bulk action's form: as shown back in
 * the form (`filters`) and as the queries take them (`filter`). Unknown values are ignored.
 */
export async function receiptFilters(services: Services, organizationId: string, source: Record<string, unknown>) {
  const status = (REQUEST_STATUSES as readonly string[]).includes(String(source.status)) ? String(source.status) : '';
  const since = SINCE[String(source.since)] ? String(source.since) : '';
  const q = filterText(source.q);
  const scribe = await scribeFilter(services, organizationId, source.scribe);
  const filter: ReceiptFilter = {
    scribeId: scribe.selected?.id,
    status,
    since: since ? new Date(services.clock().getTime() - SINCE[since]!).toISOString() : undefined,
    q,
  };
  return { filters: { scribe: scribe.selected?.slug ?? '', status, since, q }, filter, scribes: scribe.all };
}

/** Receipts with filters and paging; a receipt's page with its input, files, timeline and task. */
export function receiptRoutes(services: Services): Router {
  const router = Router();

  router.get('/receipts', async (req, res) => {
    const org = req.user!.organization_id;
    const { filters, filter, scribes } = await receiptFilters(services, org, req.query);
    const page = await services.consoleReads.listReceipts(org, { ...filter, at: pageAt(req, cursor), limit: PAGE });
    render(res, 'receipts/index', {
      title: 'Receipts',
      receipts: page.items,
      pager: pagerOf(page, { path: '/receipts', filters, codec: cursor, noun: ['receipt', 'receipts'], scope: filtersScope(filters) }),
      filters,
      scribes,
      statuses: REQUEST_STATUSES,
      sinces: Object.keys(SINCE),
      live: page.items.some((r) => r.status === 'accepted' || r.status === 'dispatched'),
    });
  });

  router.get('/receipts/:id', async (req, res) => {
    const id = String(req.params.id);
    const found = REQUEST_ID_PATTERN.test(id) ? await services.consoleReads.findReceipt(req.user!.organization_id, id) : undefined;
    if (!found) throw new NotFoundError(messages.receiptNotFound);
    const { receipt } = found;
    const timeline = [
      { status: 'accepted', at: receipt.created_at },
      ...(receipt.dispatched_at ? [{ status: 'dispatched', at: receipt.dispatched_at }] : []),
      ...(receipt.completed_at ? [{ status: receipt.status, at: receipt.completed_at }] : []),
    ];
    const live = receipt.status === 'accepted' || receipt.status === 'dispatched' || (found.task !== undefined && found.task.status !== 'done');
    const delivery = receipt.origin_type === 'channel' ? await services.channels.deliveryOfRequest(receipt.id) : undefined;
    render(res, 'receipts/show', { title: receipt.title, ...found, timeline, live, delivery });
  });

  // Files are served to signed-in staff of the receipt's organization only, never inline.
  router.get('/receipts/:id/attachments/:position', async (req, res) => {
    const id = String(req.params.id);
    const found = REQUEST_ID_PATTERN.test(id) ? await services.consoleReads.findReceipt(req.user!.organization_id, id) : undefined;
    const file = found?.attachments.find((a: { position: number }) => String(a.position) === req.params.position);
    if (!found || !file) throw new NotFoundError(messages.attachmentNotFound);
    // Sanitized again and typed safely whatever the database holds (rows older than the checks at submit).
    res.attachment(sanitizeFilename(file.filename));
    res.type(servableMediaType(file.content_type));
    res.set('X-Content-Type-Options', 'nosniff');
    res.sendFile(services.attachmentStore.pathFor(file.sha256));
  });

  return router;
}
