/**
 * The two error envelopes of the API (docs/api.md, Errors). Form A, `{error}`, belongs to
 * the task-dispatch and chat family; form B, `{data: null, meta: {}, error}`, to the entries family.
 */
export type ErrorForm = 'A' | 'B';

const ENTRIES_FAMILY = /^\/api\/v1\/(entries|entry_types)(\/|$|\?)/;

/** Which form a path under /api/v1 answers in (decided by path alone). */
export function errorFormFor(path: string): ErrorForm {
  return ENTRIES_FAMILY.test(path) ? 'B' : 'A';
}

export function errorBody(form: ErrorForm, message: string): Record<string, unknown> {
  return form === 'A' ? { error: message } : { data: null, meta: {}, error: message };
}
