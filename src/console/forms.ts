import type { Request, RequestHandler, Response } from 'express';
import { HttpError } from '../http/errors.js';

/** Sets a message shown once on the next page. */
export function flash(req: Request, kind: 'notice' | 'error', text: string): void {
  req.session.flash = { kind, text };
}

/**
 * A form's handler: runs it and redirects (303) where it says; a refusal staff can fix
 * (400, 409, 422) comes back as an error message on the page they came from.
 */
export function action(run: (req: Request, res: Response) => Promise<string>, back: (req: Request) => string): RequestHandler {
  return async (req, res) => {
    try {
      res.redirect(303, await run(req, res));
    } catch (err) {
      if (!(err instanceof HttpError) || ![400, 409, 422].includes(err.status)) throw err;
      flash(req, 'error', err.message);
      res.redirect(303, back(req));
    }
  };
}
