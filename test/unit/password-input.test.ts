import { PassThrough } from 'node:stream';
import { expect } from 'chai';
import { readPassword } from '../../src/cli/password-input.js';

/** A terminal as the CLI sees its standard input: a stream with isTTY and raw mode. */
function terminal() {
  const modes: boolean[] = [];
  const stream = Object.assign(new PassThrough(), { isTTY: true, setRawMode: (raw: boolean) => modes.push(raw) });
  return { stream, modes };
}

describe('readPassword()', () => {
  it('prompts on stderr at a terminal, in raw mode so nothing is echoed, and takes backspaces', async () => {
    const { stream, modes } = terminal();
    let shown = '';
    const reading = readPassword(stream, { write: (text: string) => (shown += text) });
    stream.write('secret passx');
    stream.write('\u007fword\r');
    expect(await reading).to.equal('secret password');
    expect(shown).to.equal('Password: \n');
    expect(modes).to.deep.equal([true, false]);
  });

  it('gives up on Ctrl-C at the prompt', async () => {
    const { stream } = terminal();
    const reading = readPassword(stream, { write: () => undefined });
    stream.write('half\u0003');
    await reading.then(
      () => expect.fail('resolved'),
      (err: Error) => expect(err.message).to.match(/^A password is required/),
    );
  });

  it('takes the first line of a pipe, without its line end', async () => {
    const pipe = new PassThrough();
    pipe.end('from a pipe\r\nignored\n');
    expect(await readPassword(pipe, { write: () => undefined })).to.equal('from a pipe');
  });
});
