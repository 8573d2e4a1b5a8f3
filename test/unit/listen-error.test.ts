import net from 'node:net';
import { expect } from 'chai';
import { ListenError } from '../../src/server.js';

/** What `npm start` and `npm run demo` print, in one line, when the server cannot listen. */
describe('ListenError', () => {
  const errno = (code: string) => Object.assign(new Error(`listen ${code}`), { code });

  it('names the variable and a free port to try when the port is in use', () => {
    const err = new ListenError('PORT', 'HOST', 3000, '127.0.0.1', errno('EADDRINUSE'));
    expect(err.message).to.equal('Cannot listen on 127.0.0.1:3000: the port is in use. Stop what uses it, or set PORT to a free port (for example PORT=3001).');
    expect(err.message).to.not.include('\n');
  });

  it('says why for a privileged port, an address of another machine, and anything else', () => {
    expect(new ListenError('PORT', 'HOST', 80, '0.0.0.0', errno('EACCES')).message).to.equal(
      'Cannot listen on 0.0.0.0:80: this user may not use ports below 1024. Set PORT to 1024 or above (the default is 3000), or put a proxy in front.',
    );
    expect(new ListenError('PORT', 'HOST', 3000, '10.9.9.9', errno('EADDRNOTAVAIL')).message).to.equal(
      'Cannot listen on 10.9.9.9:3000: 10.9.9.9 is not an address of this machine. Set HOST to one of its addresses (127.0.0.1, or 0.0.0.0 for all).',
    );
    expect(new ListenError('SMTP_PORT', 'SMTP_HOST', 2525, '127.0.0.1', errno('EMFILE')).message).to.equal(
      'Cannot listen on 127.0.0.1:2525: listen EMFILE. Check SMTP_PORT and SMTP_HOST.',
    );
  });

  it("gives the same words for a real busy port's error, and keeps it as the cause", async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as net.AddressInfo;
    const second = net.createServer();
    const cause = await new Promise<Error>((resolve) => second.once('error', resolve).listen(port, '127.0.0.1'));
    await new Promise((resolve) => taken.close(resolve));
    const err = new ListenError('PORT', 'HOST', port, '127.0.0.1', cause);
    expect(err.message).to.equal(`Cannot listen on 127.0.0.1:${port}: the port is in use. Stop what uses it, or set PORT to a free port (for example PORT=${port + 1}).`);
    expect(err.cause).to.equal(cause);
  });
});
