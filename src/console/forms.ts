import type { Request, RequestHandler, Response } from 'express';
import { HttpError } from '../http/errors.js';

/** Sets a message shown once on the next page. */
export function flash(req: Request, kind: 'notice' | 'error', text: string): void {
  req.session.flash = { kind, text };
}

/**
 * A form's handler: runs it and redirects (303) where it says; a refusal staff can fix
 * (422, 404) comes back as an error message on the page they came from.
 */
export function action(run: (req: Request, res: Response) => Promise<string>, back: (req: Request) => string): RequestHandler {
  return async (req, res) => {
    try {
      res.redirect(303, await run(req, res));
    } catch (err) {
      if (!(err instanceof HttpError) || (err.status !== 422 && err.status !== 400)) throw err;
      flash(req, 'error', err.message);
      res.redirect(303, back(req));
    }
  };
}
