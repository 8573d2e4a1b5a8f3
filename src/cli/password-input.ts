import type { Readable } from 'node:stream';
import { UsageError } from './commands.js';

export const messages = {
  noPassword: 'A password is required: give it on standard input (for example: printf \'%s\\n\' "$PASSWORD" | npm run --silent admin -- …)',
  noTerminal: 'A password is required on standard input',
};

/** Standard input as the CLI reads it: a terminal (prompt) or anything else (a pipe, a file). */
export type PasswordInput = Readable & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };

/**
 * Reads a password so that it never appears in a command's arguments: the first line of
 * standard input when it is not a terminal, else typed after `Password: ` on stderr, without
 * echo. The line's end is not part of it.
 */
export async function readPassword(stdin: PasswordInput | undefined, stderr: { write(text: string): unknown }): Promise<string> {
  if (!stdin) throw new UsageError(messages.noTerminal);
  const password = stdin.isTTY ? await prompt(stdin, stderr) : firstLine(await readAll(stdin));
  if (password === '') throw new UsageError(messages.noPassword);
  return password;
}

async function readAll(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  return Buffer.concat(chunks).toString('utf8');
}

function firstLine(text: string): string {
  return text.split(/\r?\n/, 1)[0] ?? '';
}

/** The typed line, read in raw mode so nothing is echoed; Ctrl-C and Ctrl-D give up. */
function prompt(stdin: PasswordInput, stderr: { write(text: string): unknown }): Promise<string> {
  stderr.write('Password: ');
  return new Promise((resolve, reject) => {
    let typed = '';
    const done = (error?: Error) => {
      stdin.off('data', onData);
      stdin.setRawMode?.(false);
      stdin.pause();
      stderr.write('\n');
      if (error) reject(error);
      else resolve(typed);
    };
    const onData = (chunk: Buffer | string) => {
      for (const char of String(chunk)) {
        if (char === '\r' || char === '\n') return done();
        if (char === '\u0003' || char === '\u0004') return done(new UsageError(messages.noPassword));
        if (char === '\u007f' || char === '\b') typed = typed.slice(0, -1);
        else typed += char;
      }
    };
    stdin.setRawMode?.(true);
    stdin.setEncoding('utf8');
    stdin.on('data', onData);
    stdin.resume();
  });
}
