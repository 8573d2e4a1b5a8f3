import { expect } from 'chai';
import { createHarness, staffOf, type Harness, type Tenant } from '../helpers/harness.js';
import { keywordsOf } from '../../src/agents/builtin.js';

describe('the builtin agent', () => {
  let h: Harness;
  let t: Tenant;
  before(async () => {
    // One piece of work per scribe at a time: a session is answered before a task of the same tick starts.
    h = await createHarness({ options: { runOnNewWork: false, dispatchOnAccept: false, runtime: { concurrency: 1 } } });
    t = await h.tenant({ slug: 'helper' });
    const companies = await h.services.entryTypes.create(t.organizationId, {
      name: 'Companies',
      fields: [
        { name: 'Name', type: 'text', primary: true },
        { name: 'City', type: 'text' },
      ],
    });
    const people = await h.services.entryTypes.create(t.organizationId, {
      name: 'People',
      fields: [
        { name: 'Name', type: 'text', primary: true },
        { name: 'Notes', type: 'text' },
      ],
    });
    await h.services.entries.create(t.organizationId, companies.id, { fields: { Name: 'Acme Robotics', City: 'Lisbon' } });
    await h.services.entries.create(t.organizationId, companies.id, { fields: { Name: 'Borealis Shipping', City: 'Oslo' } });
    await h.services.entries.create(t.organizationId, people.id, { fields: { Name: 'Greta Lind', Notes: 'Buyer at Acme, based in Lisbon' } });
    await h.services.entries.create(t.organizationId, people.id, { fields: { Name: 'Hidden Draft Acme' }, draft: true });
    // Another organization's entry must never be found.
    const other = await h.tenant({ slug: 'other' });
    const theirs = await h.services.entryTypes.create(other.organizationId, { name: 'Companies', fields: [{ name: 'Name', type: 'text', primary: true }] });
    await h.services.entries.create(other.organizationId, theirs.id, { fields: { Name: 'Acme Secret Division' } });
  });
  after(() => h.close());

  async function ask(message: string): Promise<string> {
    const res = await h.api.post('/api/v1/scribes/helper/chat').set(t.headers).send({ message });
    await h.services.runtime.tick();
    const messages = await h.db('session_messages').where({ session_id: res.body.session_id }).orderBy('id');
    expect(messages.map((m) => m.author)).to.deep.equal(['user', 'scribe']);
    return messages[1].text;
  }

  it('finds entries named in the message, those matching more words first, only published ones of its organization', async () => {
    expect(await ask('What do we know about Acme in Lisbon?')).to.equal('Here is what I found for "acme lisbon":\n- Acme Robotics (Companies)\n- Greta Lind (People)');
  });

  it('says so when nothing matches', async () => {
    expect(await ask('Tell me about Zanzibar')).to.equal('I found nothing about "zanzibar" in your entries. Ask me what I am working on, or name something to look up.');
    expect(await ask('Is it so?')).to.equal('I found nothing in your entries. Ask me what I am working on, or name something to look up.');
  });

  it('reports its work: counts by status and unfinished tasks, newest first', async () => {
    expect(await ask('What are you working on?')).to.equal('I have no tasks yet. Send me one through the requests API and I will work on it.');
    for (const summary of ['Call Borealis', 'Which city is best?']) {
      await h.api.post('/api/v1/scribes/helper/requests').set(t.headers).send({ task: { summary } });
    }
    await h.services.dispatcher.tick();
    await h.services.runtime.tick();
    await h.api
      .post('/api/v1/scribes/helper/requests')
      .set(t.headers)
      .send({ task: { summary: 'Plan the Oslo trip' } });
    await h.services.dispatcher.tick();
    const reply = await ask('status please');
    expect(reply).to.equal('My tasks: 1 open, 0 in progress, 1 waiting, 1 done. Unfinished, newest first:\n- Plan the Oslo trip (open)\n- Which city is best? (waiting)');
    // Cancelled ones are counted once there are any, so that the counts add up to its tasks.
    await h.api
      .post('/api/v1/scribes/helper/requests')
      .set(t.headers)
      .send({ task: { summary: 'Drop this one' } });
    await h.services.dispatcher.tick();
    const dropped = await h.db('tasks').where({ title: 'Drop this one' }).first();
    await h.services.tasks.cancel(staffOf(t), dropped.id);
    expect(await ask('status please')).to.equal('My tasks: 0 open, 0 in progress, 1 waiting, 2 done, 1 cancelled. Unfinished, newest first:\n- Which city is best? (waiting)');
  });

  it('writes a result note naming the entries related to the task', async () => {
    const res = await h.api
      .post('/api/v1/scribes/helper/requests')
      .set(t.headers)
      .send({ task: { summary: 'Prepare a visit to Borealis', acceptance_criteria: 'An agenda' } });
    await h.services.dispatcher.tick();
    await h.services.runtime.tick();
    const receipt = (await h.api.get(`/api/v1/requests/${res.body.request.id}`).set(t.headers)).body.request;
    const task = await h.db('tasks').where({ id: receipt.entity_id }).first();
    expect(task.status).to.equal('done');
    expect(task.result).to.equal(
      'Done: Prepare a visit to Borealis\nSummary: Prepare a visit to Borealis\nAcceptance criteria: An agenda\nRelated entries: Borealis Shipping (Companies)',
    );
  });

  it('searches by the words that matter', () => {
    expect(keywordsOf('What do we know about ACME, in Lisbon? (2024)')).to.deep.equal(['acme', 'lisbon', '2024']);
    expect(keywordsOf('a b c || && "')).to.deep.equal([]);
    expect(keywordsOf('Zürich café Zürich')).to.deep.equal(['zürich', 'café']);
    // A run longer than 50 is pasted data, not a name.
    expect(keywordsOf(`Acme ${'x'.repeat(51)} ${'y'.repeat(50)}`)).to.deep.equal(['acme', 'y'.repeat(50)]);
  });

  it('answers a message holding a run of 70,000 letters (pasted data) rather than failing the session', async () => {
    expect(await ask(`Tell me about Zanzibar ${'Q'.repeat(70_000)}`)).to.equal(
      'I found nothing about "zanzibar" in your entries. Ask me what I am working on, or name something to look up.',
    );
  });
});
