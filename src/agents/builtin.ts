import type { TaskEventRow, TaskStatus } from '../tasks/service.js';
import type { Agent, AgentScribe } from './agent.js';
import type { FoundEntry, Toolbox } from './toolbox.js';
import { tracedToolbox } from './trace.js';
import { describeAttachment } from './attachments.js';

/**
 * The builtin agent: deterministic and offline, for demos and tests. Its rules (also in
 * docs/agents.md):
 *
 * Chat, on the latest user or staff message:
 * - empty → a greeting that says what it can do;
 * - asks about work (`working on`, `status`, `task`, `busy`, `doing`) → its task counts
 *   by status and its unfinished tasks, newest first;
 * - otherwise → entries found by the message's words (3+ letters, common words left
 *   out), the ones matching most words first; or a reply that nothing was found.
 * The session then waits for the next message.
 *
 * Tasks:
 * - no acceptance criteria, a summary ending in `?` and no staff input yet → asks what
 *   the answer should look like (`waiting`);
 * - otherwise → done, with a result note that restates the task, the input staff gave,
 *   the entries related to its title, and each attachment it was given (name, type, size).
 */
export function createBuiltinAgent(): Agent {
  return {
    async answer({ scribe, transcript, tools: given, trace }) {
      const tools = tracedToolbox(given, trace);
      const latest = [...transcript].reverse().find((m) => m.author === 'user' || m.author === 'staff');
      const text = latest?.text.trim() ?? '';
      if (!text) return { reply: greeting(scribe) };
      if (ASKS_ABOUT_WORK.test(text)) return { reply: await describeWork(tools) };
      return { reply: await describeFindings(tools, text) };
    },

    async work({ task, history, attachments, tools: given, trace }) {
      const tools = tracedToolbox(given, trace);
      const input = latestInput(history);
      if (!task.acceptance_criteria?.trim() && task.summary.trim().endsWith('?') && input === undefined) {
        return { status: 'waiting', question: `Before I start: what would a good answer to "${task.summary.trim()}" look like? Please give acceptance criteria.` };
      }
      const related = await findRelated(tools, task.title);
      const lines = [
        `Done: ${task.title}`,
        `Summary: ${task.summary.trim()}`,
        `Acceptance criteria: ${task.acceptance_criteria?.trim() || 'none given'}`,
        ...(input === undefined ? [] : [`Input from staff: ${input}`]),
        `Related entries: ${related.length ? related.map(label).join('; ') : 'none found'}`,
        ...(attachments.length === 0 ? [] : [`Attachments: ${attachments.map(describeAttachment).join('; ')}`]),
      ];
      return { status: 'done', result: lines.join('\n') };
    },
  };
}

const ASKS_ABOUT_WORK = /\b(working on|status|tasks?|busy|doing)\b/i;

const COMMON_WORDS = new Set(
  "the and for with what who where when which about are was were you your yours have has had can could would should will please tell show find look know any anything some something there their this that these those from into onto our out all not but how why does did get give need want like more most much many just only also than then them they its it's i'm me my mine".split(
    ' ',
  ),
);

/** The longest run of letters or digits taken for a word: longer ones are codes or pasted data (a hash, base64), which no entry is named by and a search refuses past 2,000 characters. */
const LONGEST_WORD = 50;

/** The words worth searching for: 3 to 50 letters or digits, common words left out, at most 5. */
export function keywordsOf(text: string): string[] {
  const words = text.toLowerCase().match(/[\p{L}\p{N}]{3,}/gu) ?? [];
  return [...new Set(words.filter((w) => w.length <= LONGEST_WORD && !COMMON_WORDS.has(w)))].slice(0, 5);
}

function greeting(scribe: AgentScribe): string {
  return `Hello, I am ${scribe.name}. Ask me what I am working on, or name a company, a person or anything else to look up in your entries.`;
}

async function describeWork(tools: Toolbox): Promise<string> {
  const { counts, unfinished } = await tools.workload();
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  if (total === 0) return 'I have no tasks yet. Send me one through the requests API and I will work on it.';
  // Cancelled ones only when there are any: most scribes have none.
  const order: TaskStatus[] = ['open', 'in_progress', 'waiting', 'done', ...(counts.cancelled > 0 ? (['cancelled'] as const) : [])];
  const tally = order.map((s) => `${counts[s]} ${s.replace('_', ' ')}`).join(', ');
  if (unfinished.length === 0) return `My tasks: ${tally}. Everything is done.`;
  return `My tasks: ${tally}. Unfinished, newest first:\n${unfinished.map((t) => `- ${t.title} (${t.status.replace('_', ' ')})`).join('\n')}`;
}

async function describeFindings(tools: Toolbox, text: string): Promise<string> {
  const words = keywordsOf(text);
  const found = await findRelated(tools, text);
  if (found.length === 0) {
    const about = words.length ? ` about "${words.join(' ')}"` : '';
    return `I found nothing${about} in your entries. Ask me what I am working on, or name something to look up.`;
  }
  return `Here is what I found for "${words.join(' ')}":\n${found.map((e) => `- ${label(e)}`).join('\n')}`;
}

/** Entries matching any keyword of `text`, those matching more keywords first, at most 5. */
async function findRelated(tools: Toolbox, text: string): Promise<FoundEntry[]> {
  const hits = new Map<string, { entry: FoundEntry; count: number }>();
  for (const word of keywordsOf(text)) {
    for (const entry of await tools.searchEntries({ q: word })) {
      const hit = hits.get(entry.id) ?? { entry, count: 0 };
      hit.count++;
      hits.set(entry.id, hit);
    }
  }
  return [...hits.values()]
    .sort((a, b) => b.count - a.count)
    .slice(0, 5)
    .map((h) => h.entry);
}

function label(entry: FoundEntry): string {
  return `${entry.title} (${entry.entry_type})`;
}

/** The text of the staff's latest input to the task, if any. */
function latestInput(history: readonly TaskEventRow[]): string | undefined {
  return [...history].reverse().find((e) => e.author === 'staff' && e.to_status === 'open')?.text ?? undefined;
}
