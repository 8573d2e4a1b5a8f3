import type { Services } from '../../services.js';

/** The scribes for a filter's choices, and the one chosen by `?scribe=<slug>` if it is the organization's. */
export async function scribeFilter(services: Services, organizationId: string, slug: unknown) {
  const all = await services.scribes.listNames(organizationId);
  return { all, selected: all.find((s) => s.slug === slug) };
}
