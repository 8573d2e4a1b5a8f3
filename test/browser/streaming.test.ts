import { expect } from 'chai';
import { consoleInBrowser, expectText } from '../helpers/browser.js';
import { eventually } from '../helpers/harness.js';
import { startFakeOpenAi } from '../helpers/fake-openai.js';

/** A scribe's answer in a real Chromium: marked as being written while the model writes it, then whole, without a reload. */
describe('an answer being written, in Chromium', function () {
  this.timeout(60_000);
  const c = consoleInBrowser({ env: { OPENAI_MODEL: 'm', OPENAI_MAX_RETRIES: '0', MODELS_ALLOW_PRIVATE: 'true' } });
  let fake: Awaited<ReturnType<typeof startFakeOpenAi>>;

  before(async () => {
    fake = await startFakeOpenAi();
    await c.h.services.scribes.setAgent(c.t.organizationId, 'atlas', { agent: 'openai', baseUrl: fake.baseUrl });
  });
  after(async () => {
    fake.release();
    await fake.close();
  });

  it('shows the reply as "writing…" on the session page while the model writes it, then the whole reply in its place, without a reload', async () => {
    const reply = 'Globex renewed on Monday; the signed copy is filed under Contracts.';
    fake.script({ reply, chunks: 4, holdAt: 2 });
    const { session_id: id } = await c.api('POST', '/scribes/atlas/chat', { message: 'Anything new on Globex?' });
    const ticking = c.h.services.runtime.tick();
    const half = reply.slice(0, Math.floor(reply.length / 2));
    await eventually(async () => (await c.h.db('session_messages').where({ session_id: id, partial: true, text: half }).first()) as object | undefined, 5_000);

    const page = c.page;
    await page.goto(`${c.base}/sessions/${id}`);
    const writing = page.locator('.msg-partial');
    expect(await writing.locator('.writing').textContent()).to.equal('writing…');
    expect(await writing.locator('.msg-text').textContent()).to.equal(half);
    await c.shot('session-writing');

    fake.release();
    await ticking;
    // The draft may show the whole text before the reply is recorded: the recorded message is one not marked partial.
    await expectText(page.locator('.msg-scribe:not(.msg-partial) .msg-text'), reply);
    expect(await page.locator('.msg-partial').count()).to.equal(0);
    expect(await page.locator('main').getAttribute('data-live-every')).to.equal(null);
  });
});
