import type { Services } from '../../services.js';

/** The scribes for a filter's choices, and the one chosen by `?scribe=<slug>` if it is the organization's. */
export async function scribeFilter(services: Services, organizationId: string, slug: unknown) {
  const all = await services.scribes.listNames(organizationId);
  return { all, selected: all.find((s) => s.slug === slug) };
}

/** The longest text a list's text filter takes; longer is cut (a substring that long is as good as found). */
export const MAX_FILTER_TEXT = 200;

/** A list's text filter (`?q=`) as the queries take it: trimmed, cut to MAX_FILTER_TEXT, '' when absent. */
export function filterText(value: unknown): string {
  return typeof value === 'string' ? value.trim().slice(0, MAX_FILTER_TEXT) : '';
}
