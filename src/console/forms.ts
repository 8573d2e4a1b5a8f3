import type { Request, RequestHandler, Response } from 'express';
import { HttpError } from '../http/errors.js';

/** A refused form's fields as typed, for the page it comes back to (`h.typed`); which form, where a page has several. */
export interface TypedForm {
  form: string;
  values: Record<string, string>;
}

/** A message shown once on the next page, with a refused form's fields as typed. */
export interface Flash {
  kind: 'notice' | 'error';
  text: string;
  typed?: TypedForm;
}

/** Sets a message shown once on the next page. */
export function flash(req: Request, kind: 'notice' | 'error', text: string, typed?: TypedForm): void {
  req.session.flash = typed ? { kind, text, typed } : { kind, text };
}

/**
 * Which form a handler serves, for its fields to come back as typed when it is refused;
 * `secrets`: fields never kept (they would be written into the session and the page).
 */
export interface KeepTyped {
  form: string;
  secrets?: readonly string[];
}

/**
 * A form's handler: runs it and redirects (303) where it says; a refusal staff can fix
 * (400, 409, 422) comes back as an error message on the page they came from, with the form's
 * fields as typed when `keep` names it, so that nothing typed is lost.
 */
export function action(run: (req: Request, res: Response) => Promise<string>, back: (req: Request) => string, keep?: KeepTyped): RequestHandler {
  return async (req, res) => {
    try {
      res.redirect(303, await run(req, res));
    } catch (err) {
      if (!(err instanceof HttpError) || ![400, 409, 422].includes(err.status)) throw err;
      flash(req, 'error', err.message, keep && typedFields(req.body, keep));
      res.redirect(303, back(req));
    }
  };
}

function typedFields(body: unknown, { form, secrets = [] }: KeepTyped): TypedForm {
  const values: Record<string, string> = {};
  for (const [name, value] of Object.entries(typeof body === 'object' && body !== null ? body : {})) {
    if (name !== '_csrf' && !secrets.includes(name) && typeof value === 'string') values[name] = value;
  }
  return { form, values };
}
