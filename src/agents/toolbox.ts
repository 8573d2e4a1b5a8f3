import type { ApiEntry, EntryService } from '../entries/entry-service.js';
import type { EntryTypeService, EntryTypeWithFields } from '../entries/entry-type-service.js';
import type { TaskService, TaskStatus } from '../tasks/service.js';
import { AgentError, type AgentScribe } from './agent.js';

export interface EntryTypeSummary {
  id: string;
  name: string;
  fields: Array<{ name: string; type: string; primary: boolean }>;
}

/** A found entry with its type's name and its primary field's value as a title. */
export type FoundEntry = ApiEntry & { entry_type: string; title: string };

/**
 * Everything an agent may do to the organization's data, scoped to its scribe's
 * organization. Both agents act through it; entry writes go through the entry service,
 * so they are validated exactly as staff writes are.
 */
export interface Toolbox {
  entryTypes(): Promise<EntryTypeSummary[]>;
  /** Entries matching `q` (the API's search language), of one type or of every type. */
  searchEntries(input: { q: string; entryType?: string; limit?: number }): Promise<FoundEntry[]>;
  createEntry(input: { entryType: string; fields: Record<string, unknown>; draft?: boolean }): Promise<ApiEntry>;
  updateEntry(input: { id: string; fields?: Record<string, unknown>; draft?: boolean; archived?: boolean }): Promise<ApiEntry>;
  /** The scribe's tasks: how many in each status and the unfinished ones, newest first. */
  workload(): Promise<{ counts: Record<TaskStatus, number>; unfinished: Array<{ id: string; title: string; status: TaskStatus }> }>;
}

/** Each action by the tool name the openai agent gives the model; traces use it for both agents. */
export const TOOL_NAMES: Record<keyof Toolbox, string> = {
  entryTypes: 'list_entry_types',
  searchEntries: 'search_entries',
  createEntry: 'create_entry',
  updateEntry: 'update_entry',
  workload: 'list_tasks',
};

export const SEARCH_LIMIT = 10;

export function createToolbox(scribe: AgentScribe, services: { entryTypes: EntryTypeService; entries: EntryService; tasks: TaskService }): Toolbox {
  const org = scribe.organization_id;
  // A toolbox serves one piece of work: the types are read once for all its searches.
  let types: Promise<EntryTypeWithFields[]> | undefined;
  const entryTypes = () => (types ??= services.entryTypes.list(org));

  async function resolveType(nameOrId: string): Promise<EntryTypeWithFields> {
    const types = await entryTypes();
    const wanted = nameOrId.trim().toLowerCase();
    const type = types.find((t) => t.id === nameOrId || t.name.toLowerCase() === wanted);
    if (!type) throw new AgentError(`There is no entry type "${nameOrId}" (there are: ${types.map((t) => t.name).join(', ') || 'none'})`);
    return type;
  }

  return {
    async entryTypes() {
      return (await entryTypes()).map((t) => ({
        id: t.id,
        name: t.name,
        fields: t.fields.map((f) => ({ name: f.name, type: f.type, primary: Boolean(f.is_primary) })),
      }));
    },

    async searchEntries({ q, entryType, limit = SEARCH_LIMIT }) {
      const types = entryType ? [await resolveType(entryType)] : await entryTypes();
      const found: FoundEntry[] = [];
      for (const type of types) {
        if (found.length >= limit) break;
        const page = await services.entries.list(type, { q, limit: limit - found.length, includeDrafts: false, includeArchived: false });
        const primary = type.fields.find((f) => f.is_primary)!.name;
        found.push(...page.entries.map((entry) => ({ ...entry, entry_type: type.name, title: String(entry.fields[primary] ?? '') })));
      }
      return found;
    },

    async createEntry({ entryType, fields, draft }) {
      const type = await resolveType(entryType);
      return services.entries.create(org, type.id, { fields, draft });
    },

    async updateEntry({ id, fields, draft, archived }) {
      return services.entries.update(org, id, { fields, draft, archived });
    },

    async workload() {
      const counts = await services.tasks.countByStatus(scribe.id);
      const unfinished = await services.tasks.listForScribe(scribe.id, { statuses: ['open', 'in_progress', 'waiting'], limit: 5 });
      return { counts, unfinished: unfinished.map((t) => ({ id: t.id, title: t.title, status: t.status })) };
    },
  };
}
