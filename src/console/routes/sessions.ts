import { Router } from 'express';
import type { Services } from '../../services.js';
import { requireAdmin, userActor } from '../auth.js';
import { action, flash } from '../forms.js';
import { traceTotals } from '../../agents/trace.js';
import { writingEvery } from '../live.js';
import { truncate } from '../view-helpers.js';
import { render } from '../views.js';

/** A chat session's transcript; staff answer a waiting session in the user's place. */
export function sessionRoutes(services: Services): Router {
  const router = Router();
  const pageOf = (id: string) => `/sessions/${encodeURIComponent(id)}`;

  router.get('/sessions/:id', async (req, res) => {
    const org = req.user!.organization_id;
    const session = await services.sessions.get(org, String(req.params.id));
    const scribe = (await services.scribes.find(session.scribe_id))!;
    const delivery = await services.channels.deliveryOfSession(session.id);
    const calls = await services.traces.of({ sessionId: session.id });
    // Titled by what it was started with, as the list of sessions shows it.
    const first = session.messages.find((m) => m.author === 'user' || m.author === 'staff');
    render(res, 'sessions/show', {
      title: first?.text.trim() ? truncate(first.text, 80) : `Session with ${scribe.name}`,
      session,
      scribe,
      delivery,
      calls,
      totals: traceTotals(calls),
      live: Boolean(session.reply_due),
      liveEveryMs: writingEvery(session.messages),
    });
  });

  router.post(
    '/sessions/:id/reply',
    requireAdmin,
    action(
      async (req) => {
        await services.sessions.replyAsStaff(userActor(req), String(req.params.id), String(req.body.text ?? ''));
        flash(req, 'notice', 'Reply sent; the scribe is answering.');
        return pageOf(String(req.params.id));
      },
      (req) => pageOf(String(req.params.id)),
      { form: 'session-reply' },
    ),
  );

  router.post(
    '/sessions/:id/cancel',
    requireAdmin,
    action(
      async (req) => {
        await services.sessions.cancel(userActor(req), String(req.params.id));
        flash(req, 'notice', 'Session cancelled.');
        return pageOf(String(req.params.id));
      },
      (req) => pageOf(String(req.params.id)),
    ),
  );

  return router;
}
