/**
 * Reading what an operator hands to a command: a file they name, or standard
 * input for "-". These are the operator's own files outside the queue, so
 * they are opened normally (a FIFO, a pipe from `<(...)` or /dev/stdin is
 * fine: it is read until its writer closes it), but every read is bounded:
 * more than `maxBytes` is refused, never truncated (SEC-4's rule, applied to
 * input). A directory is refused at once; any other failure (EIO from
 * /proc/self/mem, a socket) is an IO error naming the file.
 */
import { open, type FileHandle } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { FsjobError, errnoOf } from '../base/errors.ts';
import { wrapIo } from '../fs/io-error.ts';

async function readStream(stream: AsyncIterable<Buffer | string>, maxBytes: number, what: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of stream) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    total += bytes.length;
    // An input over its bound makes the request invalid (REQ-1): a usage error, exit 2.
    if (total > maxBytes) throw new FsjobError('USAGE', `${what} is more than ${maxBytes} bytes, over its bound (REQ-1); it is refused, not truncated`, { clause: 'REQ-1' });
    chunks.push(bytes);
  }
  return Buffer.concat(chunks, total);
}

/** Opens an operator's file for reading: USAGE when it does not exist or is a directory, IO otherwise. */
async function openInput(source: string, what: string): Promise<FileHandle> {
  let handle;
  try {
    handle = await open(source, 'r');
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') throw new FsjobError('USAGE', `${what}: ${source} does not exist`, { path: source });
    if (errnoOf(error) === 'EISDIR') throw new FsjobError('USAGE', `${what}: ${source} is a directory; name a file`, { path: source });
    throw wrapIo(error, source, `opening ${what}`);
  }
  const info = await handle.stat().catch((error: unknown) => {
    void handle.close().catch(() => undefined);
    throw wrapIo(error, source, `opening ${what}`);
  });
  if (info.isDirectory()) {
    await handle.close().catch(() => undefined);
    throw new FsjobError('USAGE', `${what}: ${source} is a directory; name a file`, { path: source });
  }
  return handle;
}

/** All bytes of `source` ("-" for standard input), at most maxBytes. */
export async function readInput(source: string, maxBytes: number, what: string, stdin: Readable = process.stdin): Promise<Buffer> {
  if (source === '-') return readStream(stdin, maxBytes, `${what} (standard input)`);
  const handle = await openInput(source, what);
  try {
    return await readStream(handle.createReadStream({ autoClose: false }), maxBytes, `${what} ${source}`);
  } catch (error) {
    throw wrapIo(error, source, `reading ${what}`);
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** The lines of `source` ("-" for standard input), without their line ends. */
export async function* linesOf(source: string, stdin: Readable = process.stdin): AsyncGenerator<string> {
  const handle = source === '-' ? undefined : await openInput(source, 'batch file');
  const input = handle === undefined ? stdin : handle.createReadStream();
  // Loaded here: only --batch reads lines, and every other enqueue would pay for readline.
  const { createInterface } = await import('node:readline');
  try {
    yield* createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  } catch (error) {
    throw wrapIo(error, source === '-' ? 'standard input' : source, 'reading batch file');
  }
}
