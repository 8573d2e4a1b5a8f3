import net from 'node:net';

/** A raw SMTP conversation on one socket: for what nodemailer will not do (hold connections open, trickle bytes). */
export interface SmtpDial {
  socket: net.Socket;
  /** The listener's next reply (its last line, `NNN text`), or '' once the connection has closed. */
  reply(): Promise<string>;
  /** Sends a command line; answers the reply to it. */
  command(line: string): Promise<string>;
  /** Resolves once the connection has closed (either side). */
  closed: Promise<void>;
}

export function dial(port: number): SmtpDial {
  const socket = net.connect(port, '127.0.0.1');
  socket.setEncoding('utf8');
  // A reset shows as 'close'.
  socket.on('error', () => undefined);
  const replies: string[] = [];
  let waiting: ((reply: string) => void) | undefined;
  let ended = false;
  const deliver = (reply: string) => {
    const waiter = waiting;
    waiting = undefined;
    if (waiter) waiter(reply);
    else replies.push(reply);
  };
  let partial = '';
  socket.on('data', (data: string) => {
    const lines = (partial + data).split('\r\n');
    partial = lines.pop()!;
    // `250-...` lines continue a reply; `250 ...` ends it.
    for (const line of lines) if (/^\d{3} /.test(line)) deliver(line);
  });
  const closed = new Promise<void>((resolve) =>
    socket.once('close', () => {
      ended = true;
      waiting?.('');
      resolve();
    }),
  );
  const reply = () => {
    if (replies.length > 0) return Promise.resolve(replies.shift()!);
    if (ended) return Promise.resolve('');
    return new Promise<string>((resolve) => (waiting = resolve));
  };
  return {
    socket,
    reply,
    command(line) {
      socket.write(`${line}\r\n`);
      return reply();
    },
    closed,
  };
}

/**
 * One whole SMTP transaction on a connection of its own, the message written as it is (it
 * must need no dot-stuffing: no line starts with a dot); answers the reply to it. Cheaper for
 * the test's own process than nodemailer, which scans every byte to dot-stuff it.
 */
export async function deliverRaw(port: number, from: string, to: string, message: Buffer): Promise<string> {
  const client = dial(port);
  try {
    for (const [command, expected] of [
      ['', /^220 /],
      ['EHLO sender.example.org', /^250 /],
      [`MAIL FROM:<${from}>`, /^250 /],
      [`RCPT TO:<${to}>`, /^250 /],
      ['DATA', /^354 /],
    ] as const) {
      const reply = command ? await client.command(command) : await client.reply();
      if (!expected.test(reply)) return reply;
    }
    client.socket.write(message);
    return await client.command(message.subarray(-2).toString() === '\r\n' ? '.' : '\r\n.');
  } finally {
    client.socket.end('QUIT\r\n');
  }
}
