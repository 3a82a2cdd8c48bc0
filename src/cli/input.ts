/**
 * Reading what an operator hands to a command: a file they name, or standard
 * input for "-". These are the operator's own files outside the queue, so
 * they are opened normally (a FIFO or /dev/stdin is fine), but every read is
 * bounded: more than `maxBytes` is refused, never truncated (SEC-4's rule,
 * applied to input).
 */
import { open } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { FsjobError, errnoOf } from '../base/errors.ts';
import { wrapIo } from '../fs/io-error.ts';

async function readStream(stream: AsyncIterable<Buffer | string>, maxBytes: number, what: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of stream) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    total += bytes.length;
    if (total > maxBytes) throw new FsjobError('TOO_LARGE', `${what} is more than ${maxBytes} bytes, over its bound; it is refused, not truncated`);
    chunks.push(bytes);
  }
  return Buffer.concat(chunks, total);
}

/** All bytes of `source` ("-" for standard input), at most maxBytes. */
export async function readInput(source: string, maxBytes: number, what: string, stdin: Readable = process.stdin): Promise<Buffer> {
  if (source === '-') return readStream(stdin, maxBytes, `${what} (standard input)`);
  let handle;
  try {
    handle = await open(source, 'r');
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') throw new FsjobError('USAGE', `${what}: ${source} does not exist`, { path: source });
    throw wrapIo(error, source, `opening ${what}`);
  }
  try {
    return await readStream(handle.createReadStream({ autoClose: false }), maxBytes, `${what} ${source}`);
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** The lines of `source` ("-" for standard input), without their line ends. */
export async function* linesOf(source: string, stdin: Readable = process.stdin): AsyncGenerator<string> {
  let input: Readable = stdin;
  if (source !== '-') {
    const handle = await open(source, 'r').catch((error: unknown) => {
      if (errnoOf(error) === 'ENOENT') throw new FsjobError('USAGE', `batch file ${source} does not exist`, { path: source });
      throw wrapIo(error, source, 'opening batch file');
    });
    input = handle.createReadStream();
  }
  yield* createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
}
