/**
 * The limit on open files of this process (RLIMIT_NOFILE, what `ulimit -n`
 * sets), for errors that name it. A process that has used every descriptor
 * cannot open /proc/self/limits to find out, so one descriptor of that file is
 * opened when this module loads and kept (close-on-exec): reading it from
 * offset 0 gives the limit as it is now (prlimit may have changed it).
 */
import { openSync, readSync } from 'node:fs';
import { FsjobError } from './errors.ts';

let limitsFd: number | undefined;
try {
  limitsFd = openSync('/proc/self/limits', 'r');
} catch {
  limitsFd = undefined; // no /proc: the limit goes unnamed
}

/** The soft limit on open files; undefined where /proc does not say (or says unlimited). */
export function openFileLimit(): number | undefined {
  if (limitsFd === undefined) return undefined;
  try {
    const buffer = Buffer.alloc(8192);
    const text = buffer.toString('latin1', 0, readSync(limitsFd, buffer, 0, buffer.length, 0));
    const match = /^Max open files\s+(\d+|unlimited)\s/m.exec(text);
    return match === null || match[1] === 'unlimited' ? undefined : Number(match[1]);
  } catch {
    return undefined;
  }
}

/** What EMFILE or ENFILE means and what to do about it; undefined for any other errno. */
export function descriptorAdvice(errno: string | undefined): string | undefined {
  if (errno === 'ENFILE') return 'the system-wide table of open files is full (ENFILE, fs.file-max): close programs or raise fs.file-max, then retry';
  if (errno !== 'EMFILE') return undefined;
  const limit = openFileLimit();
  const what = limit === undefined ? 'this process has used every file descriptor it may open' : `this process has used all ${limit} file descriptors it may open (ulimit -n ${limit})`;
  return `no file descriptor left (EMFILE): ${what}; raise the limit (ulimit -n 4096, LimitNOFILE= in a systemd unit) or run fewer jobs at once (--concurrency), then retry`;
}

/**
 * Any error whose cause chain says descriptors ran out (EMFILE, ENFILE), as
 * the FsjobError (code IO) that says so and what to do; undefined for any
 * other error. Commands load their modules when they run (import()), so a low
 * `ulimit -n` can first bite there, with the loader's own error (issue 28
 * point 3: "internal error: EMFILE ... open dist/src/consumer/owner.js" and a
 * stack); so can any open before a command has its own handling in place.
 * The CLI passes every error it did not expect through this first.
 */
export function descriptorFailure(error: unknown): FsjobError | undefined {
  let current: unknown = error;
  for (let depth = 0; typeof current === 'object' && current !== null && depth < 8; depth++) {
    const { code, message, path, cause } = current as { code?: unknown; message?: unknown; path?: unknown; cause?: unknown };
    const errno = code === 'EMFILE' || code === 'ENFILE' ? code : /\b(E[MN]FILE)\b/.exec(String(message))?.[1];
    if (errno !== undefined) {
      const opening = typeof path === 'string' ? `could not open ${path}: ` : '';
      return new FsjobError('IO', `${opening}${descriptorAdvice(errno) ?? errno}`, { errno, cause: error, ...(typeof path === 'string' ? { path } : {}) });
    }
    current = cause;
  }
  return undefined;
}
