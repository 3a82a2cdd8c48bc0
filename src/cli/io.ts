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
import { FsjobError, errnoOf } from '../base/errors.ts';
import type { CliIo } from './command.ts';

interface SafeStream {
  write(text: string | Uint8Array): void;
  /** Resolves once the bytes are handed to the system; rejects with IO when the reader went away. */
  writeAwaited(bytes: Uint8Array): Promise<void>;
  readonly closed: boolean;
}

/**
 * `stream()` is made safe on first use: node makes process.stdout and
 * process.stderr when first asked for (a stream over a file, a pipe or a
 * terminal, ~1.5 ms each), and most commands never write to standard
 * error.
 */
function safeStream(stream: () => NodeJS.WriteStream): SafeStream {
  let closed = false;
  let opened: NodeJS.WriteStream | undefined;
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
      try {
        open().write(text, (error) => {
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
  const out = safeStream(() => process.stdout);
  const err = safeStream(() => process.stderr);
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
