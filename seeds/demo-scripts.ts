import type { Agent, TaskOutcome } from '../src/agents/agent.js';
import type { FoundEntry, Toolbox } from '../src/agents/toolbox.js';
import { tracedToolbox } from '../src/agents/trace.js';

/**
 * What the demo's scribes did over their last three days (demo-history.ts replays it): the
 * tasks they were sent and what they made of them, and their chats. The demo agent plays
 * these parts while the history is replayed; anything else goes to the builtin agent, which
 * works the demo from then on. Some parts use the toolbox, so they read the demo's own
 * entries (and show in the run's trace); some fail there, as an agent's tool call does.
 */

/** A task a scribe was sent, and what it did: `result` writes the result, or throws as the agent's failure. */
export interface TaskScript {
  task: { title: string; summary: string; acceptance_criteria?: string };
  /** Asked before the scribe starts; the task waits for staff's input. */
  question?: string;
  result: string | ((tools: Toolbox) => Promise<string>);
}

/** One turn of a chat: the user's message and the scribe's reply (or its failure, thrown). */
export interface ChatTurn {
  user: string;
  reply: string | ((tools: Toolbox) => Promise<string>);
}

/** `- **Acme Corp** (Manufacturing, Zurich)`: a found entry as a list item, linked to its page. */
const item = (entry: FoundEntry, detail: string) => `- **${entry.title}** (${detail}), entry ${entry.id}`;
const number = (value: unknown) => Number(value).toLocaleString('en');

/** Tasks for atlas (customer research), by what the history calls them. */
export const ATLAS = {
  globex: {
    task: {
      title: "Research Globex before Thursday's discovery call",
      summary: 'Globex booked a discovery call for Thursday. Put together what we know: what they do, their size, who we have talked to, and anything still open.',
      acceptance_criteria: 'A short brief; say what we do not know.',
    },
    result: [
      '**Globex**: energy, Geneva, 340 employees, private (founded 2004).',
      '',
      '- **Who we know:** Grace Hopper, Head of Sales. She asked about volume pricing three weeks ago.',
      '- **Open:** that pricing question has no written answer yet.',
      '- **Unknown:** their current vendor and when its contract ends. Worth asking on the call.',
      '',
      'Suggested opening: their grid-storage pilot, which needs the reporting we are strongest at.',
    ].join('\n'),
  },
  deciders: {
    task: {
      title: 'Find the decision makers at Acme Corp',
      summary: 'We want to pitch the analytics add-on to Acme Corp. Who decides on tooling there, and whom should we contact first?',
      acceptance_criteria: 'Names, roles and a suggested first contact.',
    },
    async result(tools) {
      const contacts = await tools.searchEntries({ q: 'relationship:Acme Corp', entryType: 'Contacts', limit: 5 });
      return [
        `${contacts.length} contacts are linked to **Acme Corp**:`,
        '',
        ...contacts.map((c) => item(c, String(c.fields['Job Title'] ?? 'no title'))),
        '',
        `Start with **${contacts[0]?.title ?? 'their CTO'}**: tooling decisions sit with the CTO, and the add-on is a technical purchase.`,
      ].join('\n');
    },
  },
  followUp: {
    task: {
      title: 'Draft a follow-up to Ada Lovelace after the demo',
      summary: 'Ada Lovelace (CTO at Acme Corp) saw the product demo today. Draft a short follow-up email that recaps what she asked about.',
      acceptance_criteria: 'Under 120 words; ends with a concrete next step.',
    },
    result: [
      'Draft:',
      '',
      '> **Subject:** Your questions from today’s demo',
      '>',
      '> Hi Ada,',
      '>',
      '> Thank you for your time today. You asked about two things: whether reports can be scheduled per team, and how we handle single sign-on. Both are covered: reports run on any schedule you set, and SSO works with your existing identity provider.',
      '>',
      '> Could we book 30 minutes next week with your IT lead to walk through the SSO setup?',
      '>',
      '> Best regards',
    ].join('\n'),
  },
  leads: {
    task: {
      title: "Summarize yesterday's inbound leads",
      summary: 'Go through the leads that came in yesterday and summarize them by industry.',
      acceptance_criteria: 'A table: industry, count, most promising lead.',
    },
    result: [
      '| Industry | Leads | Most promising |',
      '|---|---:|---|',
      '| Software | 4 | Initech: asked for a quote for 85 seats |',
      '| Manufacturing | 2 | Acme Corp: second contact this month |',
      '| Energy | 1 | Globex: discovery call booked |',
      '',
      'Seven leads in all; two had no company name and are left out.',
    ].join('\n'),
  },
  initech: {
    task: {
      title: "Update Initech's record after the renewal call",
      summary: 'Initech renewed for another year at 85 seats. Update their record and note the new renewal date.',
    },
    result: ['Updated **Initech**:', '', '- Seats: 85 (unchanged)', '- Renewed for 12 months; next renewal in 11 months', '', 'No other fields changed.'].join('\n'),
  },
  compare: {
    task: {
      title: 'Compare Acme Corp and Globex for the partner shortlist',
      summary: 'Both Acme Corp and Globex want to become reselling partners. Compare them so we can pick one for the pilot.',
      acceptance_criteria: 'A side-by-side table and a recommendation.',
    },
    result: [
      '| | Acme Corp | Globex |',
      '|---|---|---|',
      '| Industry | Manufacturing | Energy |',
      '| Employees | 1,200 | 340 |',
      '| Listed | yes | no |',
      '| Contacts we know | 2 | 1 |',
      '',
      '**Recommendation:** Acme Corp. It is larger, we already know two people there, and manufacturing is closer to our current customers.',
    ].join('\n'),
  },
  links: {
    task: {
      title: 'Check the pricing page for broken links',
      summary: 'Check the pricing page for broken links.\nReport each broken link with the page it is on.',
    },
    result: [
      'Two broken links on the pricing page:',
      '',
      '1. `/docs/enterprise-sla`: answers 404 (linked from the Enterprise column)',
      '2. `https://status.example.com/history`: the host does not resolve (linked from the footer)',
      '',
      'The other 41 links answer 200.',
    ].join('\n'),
  },
  tickets: {
    task: {
      title: 'Summarize the Q3 support tickets',
      summary: 'Summarize the Q3 support tickets and list the three most common complaints.',
    },
    result: [
      '412 tickets in Q3, 9% more than Q2. The three most common complaints:',
      '',
      '1. **Invoice export** fails for invoices with more than 200 lines (61 tickets)',
      '2. **Password reset** emails arrive late or not at all (38 tickets)',
      '3. **Report scheduling** ignores the user’s time zone (27 tickets)',
      '',
      'The invoice export issue is fixed in the current release.',
    ].join('\n'),
  },
  welcome: {
    task: {
      title: 'Enterprise welcome email',
      summary: 'Draft a welcome email for new enterprise customers.',
      acceptance_criteria: 'Under 200 words, friendly tone, links to the onboarding guide.',
    },
    result: [
      '> **Subject:** Welcome aboard',
      '>',
      '> Welcome, and thank you for choosing us. Your workspace is ready, and your account manager will call within two working days to plan your rollout.',
      '>',
      '> To get going before then, the [onboarding guide](https://example.com/onboarding) walks you through inviting your team, connecting single sign-on and setting up your first reports.',
      '>',
      '> We are glad to have you with us.',
    ].join('\n'),
  },
  basel: {
    task: {
      title: 'List large companies in Basel',
      summary: 'Which companies in Basel have more than 1,000 employees? We are planning a roadshow.',
      acceptance_criteria: 'Name and size, largest first.',
    },
    async result(tools) {
      const found = await tools.searchEntries({ q: 'City:Basel && Employees>1000', entryType: 'Companies', limit: 10 });
      found.sort((a, b) => Number(b.fields.Employees) - Number(a.fields.Employees));
      return [`${found.length} companies in Basel have more than 1,000 employees:`, '', ...found.map((e) => item(e, `${number(e.fields.Employees)} employees`))].join('\n');
    },
  },
  advisory: {
    task: {
      title: 'Who should join the customer advisory board?',
      summary: 'We are starting a customer advisory board. Which accounts should we invite?',
    },
    question: 'Should I consider all paying customers, or only the larger ones? And how many seats does the board have?',
    async result(tools) {
      const found = await tools.searchEntries({ q: 'Employees>2000 && Public:yes', entryType: 'Companies', limit: 6 });
      return [
        'Listed companies with more than 2,000 employees, one for each of the six seats:',
        '',
        ...found.map((e) => item(e, `${e.fields.Industry}, ${number(e.fields.Employees)} employees`)),
      ].join('\n');
    },
  },
  renewals: {
    task: {
      title: 'Which enterprise accounts renew this quarter?',
      summary: 'Which enterprise accounts renew this quarter? We want to plan the renewal calls.',
    },
    question: 'Our Companies entries have no renewal dates. Should I take them from the signed contracts, or will you add a Renewal field to Companies first?',
    result: 'Renewal dates are not in the entries yet; see the question.',
  },
  invoices: {
    task: {
      title: 'Import the March invoices',
      summary: 'Add the March invoices from the finance export to Invoices, one entry each, linked to its company.',
      acceptance_criteria: 'One entry per invoice.',
    },
    async result(tools) {
      await tools.createEntry({ entryType: 'Invoices', fields: { Number: 'INV-2031', Company: 'Acme Corp', Amount: 12400 } });
      return 'Imported.';
    },
  },
  leadsImport: {
    task: {
      title: 'Add the trade fair leads',
      summary: 'Add the 14 leads from the trade fair badge scans to Leads.',
    },
    async result(tools) {
      await tools.createEntry({ entryType: 'Leads', fields: { Name: 'Margaret Hamilton', Company: 'North Forge GmbH' } });
      return 'Added.';
    },
  },
} satisfies Record<string, TaskScript>;

/** Tasks for hermes (messages between teams). */
export const HERMES = {
  fix: {
    task: {
      title: 'Tell support the invoice export fix is live',
      summary: 'Engineering deployed the fix for the broken invoice export. Let the support team know so they can close the related tickets.',
    },
    result: [
      'Posted to **#support**:',
      '',
      '> The invoice export fix is live. Please close the tickets tagged `invoice-export` and tell the customers it works again.',
      '',
      '61 open tickets carry that tag.',
    ].join('\n'),
  },
  escalation: {
    task: {
      title: 'Pass the Acme escalation on to engineering',
      summary: 'Acme Corp escalated the report scheduling bug (reports run in UTC, not their time zone). Pass it on to engineering with what they need.',
    },
    result: [
      'Filed with engineering as **P2** and posted to **#eng-reports**:',
      '',
      '- Customer: Acme Corp (escalated by Ada Lovelace)',
      '- Symptom: scheduled reports run at 09:00 UTC instead of 09:00 Europe/Zurich',
      '- Since: the 2.14 release',
      '',
      'Engineering acknowledged it and will reply on the ticket.',
    ].join('\n'),
  },
  invoice: {
    task: {
      title: 'Remind finance about the overdue Globex invoice',
      summary: 'Invoice 1042 to Globex is 30 days overdue. Remind finance to send the second notice.',
    },
    result: 'Sent to **finance@**: “Invoice 1042 (Globex) is 30 days overdue; please send the second notice.” Finance confirmed it goes out today.',
  },
  status: {
    task: {
      title: "Collect this week's status from the sales leads",
      summary: 'Ask the three sales leads for their weekly status and put the answers together.',
      acceptance_criteria: 'One line per lead; say who did not answer.',
    },
    result: [
      '- **North:** two renewals signed, one at risk (Globex, pricing).',
      '- **South:** pipeline up 12%; the Initech quote went out.',
      '- **Enterprise:** no answer by Friday noon; asked again.',
    ].join('\n'),
  },
  maintenance: {
    task: {
      title: "Announce Friday's maintenance window",
      summary: 'Let every team know about Friday’s database maintenance window.',
    },
    result: [
      'Posted to **#general** and **#support**:',
      '',
      '> Database maintenance on Friday, `18:00–20:00 CET`. The console and the API stay up; reports scheduled in that window run afterwards.',
    ].join('\n'),
  },
  feature: {
    task: {
      title: 'Forward the Initech feature request to product',
      summary: 'Initech asked for CSV exports of every report. Forward the request to product with the context.',
    },
    result:
      'Forwarded to **product@** with the context: Initech (85 seats) asked for CSV exports of every report, to load them into their own BI tool. Product added it to the roadmap review.',
  },
} satisfies Record<string, TaskScript>;

/** What the schedules submit (their templates are the demo's schedules'). */
export const SCHEDULED: Record<string, TaskScript['result']> = {
  'Morning digest': async (tools) => {
    const { counts, unfinished } = await tools.workload();
    const waiting = unfinished.filter((t) => t.status === 'waiting');
    return [
      `**${counts.done} tasks done** so far; ${counts.waiting} waiting for input.`,
      '',
      ...(waiting.length ? ['Waiting, newest first:', ...waiting.map((t) => `- ${t.title}`)] : ['Nothing is waiting for input.']),
    ].join('\n');
  },
  'Weekly summary': async (tools) => {
    const { counts } = await tools.workload();
    return `**${counts.done} tasks done** so far, ${counts.waiting} waiting for input. Most of last week's work was company research and follow-up emails.`;
  },
};

/** The demo's chats with atlas, each a few turns. */
export const CHATS = {
  acme: [
    {
      user: 'What do we know about Acme Corp?',
      async reply(tools) {
        const [company] = await tools.searchEntries({ q: 'Name:Acme Corp', entryType: 'Companies', limit: 1 });
        const contacts = await tools.searchEntries({ q: 'relationship:Acme Corp', entryType: 'Contacts', limit: 5 });
        const f = company?.fields ?? {};
        return [
          `**Acme Corp**: ${f.Industry}, ${f.City}, ${number(f.Employees)} employees, listed (founded ${String(f.Founded).slice(0, 4)}).`,
          '',
          'People we know there:',
          ...contacts.map((c) => item(c, String(c.fields['Job Title']))),
          '',
          'I also researched their decision makers this week.',
        ].join('\n');
      },
    },
    {
      user: 'How do I send you a task from a script?',
      reply: [
        'POST it to the requests API with your key:',
        '',
        '```sh',
        'curl -s -X POST "$SCRIBE/api/v1/scribes/atlas/requests" \\',
        '  -H "X-Api-Key: $KEY" -H \'Content-Type: application/json\' \\',
        '  -d \'{"task": {"summary": "Research Acme Corp"}}\'',
        '```',
        '',
        'It answers `202` with a receipt at once. Poll `GET /api/v1/requests/<id>` until it is `fulfilled`; its `entity_id` is the task, with my result once I am done.',
      ].join('\n'),
    },
    { user: 'Thanks, that works.', reply: 'Glad it helped. Ask me any time what I am working on.' },
  ],
  basel: [
    {
      user: 'Which companies in Basel have more than 1,000 employees?',
      async reply(tools) {
        const found = await tools.searchEntries({ q: 'City:Basel && Employees>1000', entryType: 'Companies', limit: 5 });
        return [`${found.length} of them (the first five):`, '', ...found.map((e) => item(e, `${number(e.fields.Employees)} employees`))].join('\n');
      },
    },
    {
      user: 'Can I have that as CSV?',
      async reply(tools) {
        const found = await tools.searchEntries({ q: 'City:Basel && Employees>1000', entryType: 'Companies', limit: 5 });
        return ['```csv', 'Name,Industry,Employees', ...found.map((e) => `${e.title},${e.fields.Industry},${e.fields.Employees}`), '```'].join('\n');
      },
    },
  ],
  office: [
    {
      user: "Add Initech's new office in Lugano to Locations.",
      async reply(tools) {
        await tools.createEntry({ entryType: 'Locations', fields: { Name: 'Initech Lugano', Company: 'Initech' } });
        return 'Added.';
      },
    },
  ],
} satisfies Record<string, ChatTurn[]>;

/**
 * The demo agent: plays the scripts above (a task by its title, a chat turn by the user's
 * message), calling the toolbox as the builtin agent does, traced; hands anything else to
 * `fallback`.
 */
export function demoAgent(fallback: Agent): Agent {
  const tasks = new Map<string, TaskScript['result']>([
    ...Object.values({ ...ATLAS, ...HERMES }).map((s): [string, TaskScript['result']] => [s.task.title, s.result]),
    ...Object.entries(SCHEDULED),
  ]);
  const questions = new Map(Object.values(ATLAS).flatMap((s) => ('question' in s ? [[s.task.title, s.question] as const] : [])));
  const turns = new Map(Object.values(CHATS).flatMap((chat) => chat.map((turn): [string, ChatTurn['reply']] => [turn.user, turn.reply])));
  return {
    async work(input): Promise<TaskOutcome> {
      const result = tasks.get(input.task.title);
      if (result === undefined) return fallback.work(input);
      const answered = input.history.some((e) => e.author === 'staff' && e.to_status === 'open');
      const question = questions.get(input.task.title);
      if (question && !answered) return { status: 'waiting', question };
      return { status: 'done', result: typeof result === 'string' ? result : await result(tracedToolbox(input.tools, input.trace)) };
    },
    async answer(input) {
      const latest = [...input.transcript].reverse().find((m) => m.author === 'user' || m.author === 'staff');
      const reply = latest && turns.get(latest.text);
      if (reply === undefined) return fallback.answer(input);
      return { reply: typeof reply === 'string' ? reply : await reply(tracedToolbox(input.tools, input.trace)) };
    },
  };
}
