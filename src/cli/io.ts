/**
 * The CLI's standard output and error, safe against a reader that went away.
 *
 * `fsjob status | head -1` closes the pipe after one line; `fsjob work 2>&1 |
 * head` closes the worker's log pipe while jobs run. Node ignores SIGPIPE, so
 * the next write fails with EPIPE, and a stream 'error' without a listener
 * kills the process: a worker would die with its jobs (the guardian stops
 * them, recovery ends them lost). Here a stream that failed is marked closed
 * and every later write to it is dropped: nothing is ever worth a job. The
 * command goes on; a short command then finishes as it would have, a worker
 * keeps serving without a log (its first lost line is the only casualty).
 */
import { writeSync } from 'node:fs';
import { FsjobError, errnoOf } from '../base/errors.ts';
import type { CliIo } from './command.ts';

interface SafeStream {
  write(text: string | Uint8Array): void;
  /** Resolves once the bytes are handed to the system; rejects with IO when the reader went away. */
  writeAwaited(bytes: Uint8Array): Promise<void>;
  readonly closed: boolean;
}

/**
 * Standard output or error (descriptor `fd`), whose stream, `stream()`, is
 * made on first need: node makes process.stdout and process.stderr when
 * first asked for (a stream over a file, a pipe or a terminal: ~1.5 ms
 * each, node's streams loaded first), which a command that prints a line
 * (`fsjob enqueue` prints an id) need not pay. Until then a write goes to
 * the descriptor itself, whole, as node's stream would write to a file or
 * a pipe (synchronously, on Linux); a descriptor that would block (a
 * non-blocking pipe: EAGAIN) hands the rest, and every later write, to
 * the stream, so that the order holds.
 */
function safeStream(fd: number, stream: () => NodeJS.WriteStream): SafeStream {
  let closed = false;
  let opened: NodeJS.WriteStream | undefined;
  /** Writes `data` to `fd` directly; returns what is left for the stream (nothing when written, or when the reader went away). */
  const direct = (data: string | Uint8Array): Uint8Array | undefined => {
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    let at = 0;
    try {
      while (at < bytes.length) at += writeSync(fd, bytes, at, bytes.length - at);
      return undefined;
    } catch (error) {
      if (errnoOf(error) === 'EAGAIN') return bytes.subarray(at);
      closed = true; // EPIPE, EBADF, EIO: as a stream's write error
      return undefined;
    }
  };
  const open = (): NodeJS.WriteStream => {
    if (opened === undefined) {
      opened = stream();
      // One listener for the stream's lifetime: a write error (EPIPE, EIO) closes it for us.
      opened.on('error', () => {
        closed = true;
      });
    }
    return opened;
  };
  return {
    get closed() {
      return closed;
    },
    write(text) {
      if (closed) return;
      const rest = opened === undefined ? direct(text) : text;
      if (rest === undefined) return;
      try {
        open().write(rest, (error) => {
          if (error !== null && error !== undefined) closed = true;
        });
      } catch {
        closed = true; // a destroyed stream throws synchronously (ERR_STREAM_DESTROYED)
      }
    },
    writeAwaited(bytes) {
      if (closed) return Promise.reject(closedError());
      return new Promise<void>((resolve, reject) => {
        try {
          open().write(bytes, (error) => {
            if (error === null || error === undefined) return resolve();
            closed = true;
            reject(closedError(error));
          });
        } catch (error) {
          closed = true;
          reject(closedError(error));
        }
      });
    },
  };
}

function closedError(error?: unknown): FsjobError {
  const errno = errnoOf(error) ?? 'EPIPE';
  return new FsjobError('IO', `standard output was closed (${errno}); stopped writing`, { errno });
}

let shared: CliIo | undefined;

/** The process's own standard output and error, made safe once per process. */
export function processIo(): CliIo {
  if (shared !== undefined) return shared;
  const out = safeStream(1, () => process.stdout);
  const err = safeStream(2, () => process.stderr);
  shared = {
    stdout: (text) => out.write(text),
    stderr: (text) => err.write(text),
    stdoutBytes: (bytes) => out.writeAwaited(bytes),
    stdoutClosed: () => out.closed,
    stderrIsTerminal: () => process.stderr.isTTY === true && !err.closed,
    stdoutIsTerminal: () => process.stdout.isTTY === true,
  };
  return shared;
}
