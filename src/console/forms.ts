import { randomUUID } from 'node:crypto';
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

/**
 * Forms whose answer shows a secret once (an API key, a signing secret, an invitation or reset
 * link) are answered with a page, not a redirect, so that the secret is stored nowhere in clear;
 * a reload, or Back and Forward, would send them again and make another. Each such form carries
 * a token of its own (`_once`, from `onceToken`); the first success keeps it in the staff
 * member's session beside the address of what it made (`rememberSent`), and the same form sent
 * again goes there instead (`sentAlready`), with a notice. A form sent without the token (not
 * from the console's page) is taken as it comes: the token guards against repeats, not forgery
 * (the CSRF token does that).
 */
const SENT_FORMS_KEPT = 20;

/** What a form sent again says (`sentAlready`), by what it had made. */
export const sentAgain = {
  key: 'This form was sent already: the key it made is in the list, and was shown once, when it was made.',
  made: (what: 'channel' | 'endpoint') => `This form was sent already: this is the ${what} it made. Its secret was shown once, when it was made.`,
  secret: 'This form was sent already: the secret it made is the one in use, and was shown once, when it was made.',
  link: 'This form was sent already: the link it made was shown once, when it was made. Make a new link to show one again.',
};

/** A new `_once` token for a form that shows a secret (views: `h.onceToken()`). */
export const onceToken = (): string => randomUUID();

const onceTokenOf = (req: Request): string | undefined => (typeof req.body?._once === 'string' && req.body._once !== '' ? req.body._once : undefined);

/** Before a form that shows a secret: when this form was sent and answered before, to what it made (303), saying so. */
export function sentAlready(notice: string): RequestHandler {
  return (req, res, next) => {
    const token = onceTokenOf(req);
    const sent = token === undefined ? undefined : req.session.sentForms?.find(([kept]) => kept === token);
    if (!sent) return next();
    flash(req, 'notice', notice);
    res.redirect(303, sent[1]);
  };
}

/**
 * After such a form's success: a repeat of it goes to `madeAt`, where what it made is shown
 * (without its secret); the page answering it takes that address in the browser's history
 * (public/address.js), so that a reload reads that page rather than sending the form again.
 */
export function rememberSent(req: Request, res: Response, madeAt: string): void {
  res.locals.address = madeAt;
  const token = onceTokenOf(req);
  if (token === undefined) return;
  req.session.sentForms = [[token, madeAt] as [string, string], ...(req.session.sentForms ?? [])].slice(0, SENT_FORMS_KEPT);
}
