/**
 * Before the CLI loads (issue 19 point 5): are there file descriptors enough
 * to load it? Loading opens module files in parallel (the ESM loader fetches
 * a module's imports at once), so a process started under a low `ulimit -n`
 * fails half-way with EMFILE, which the loader may report as "Cannot find
 * module"; with very few left, tsx's loader thread cannot start and the
 * process hangs. bin/fsjob.mts asks here first and says, in one line, which
 * limit is too low.
 *
 * Only node: built-ins here: this module runs before anything else is loaded.
 */
import { readdirSync, readFileSync } from 'node:fs';

/**
 * Free descriptors below which fsjob does not even try to load. Measured on
 * Linux with node 20: the CLI loads with 21 free and fails (with EMFILE,
 * caught by startFailure) with 19; the sources through tsx load with 17 and,
 * with 5, hang for ever in a futex. Under 16 nothing is tried; above, a load
 * that still runs out is caught.
 */
export const START_DESCRIPTORS = 16;

/**
 * Free descriptors below which `fsjob enqueue` from the start-up cache
 * (start-cache.ts) cannot work, so is not tried: it loads no module file,
 * and its most at once are what the enqueue itself holds (the queue's root,
 * jobs/, ready/ and tmp/ open as directory handles, the new job's directory
 * and its spec.json) beside /proc/self/limits, kept open to name the limit
 * in errors (src/base/descriptors.ts). Measured on Linux with node 20:
 * `fsjob enqueue -- true` works with 6 free and fails with 5 (creating
 * spec.json). Above, what runs out is the command's error, which names
 * what it was opening (opening directory q/jobs, creating spec.json).
 */
export const ENQUEUE_START_DESCRIPTORS = 6;

let limitAtStart: number | undefined;

/** The soft RLIMIT_NOFILE, read before anything loads and kept: once descriptors ran out /proc/self/limits cannot be opened. */
function softLimit(): number | undefined {
  if (limitAtStart !== undefined) return limitAtStart;
  try {
    const match = /^Max open files\s+(\d+|unlimited)\s/m.exec(readFileSync('/proc/self/limits', 'latin1'));
    limitAtStart = match === null || match[1] === 'unlimited' ? undefined : Number(match[1]);
    return limitAtStart;
  } catch {
    return undefined; // no /proc (macOS): nothing to check
  }
}

/**
 * The line to print (then exit 1) when fewer than `need` descriptors are
 * free to `what` ("load fsjob"); undefined when starting is fine.
 */
export function tooFewDescriptors(need: number = START_DESCRIPTORS, what = 'load fsjob'): string | undefined {
  const limit = softLimit();
  if (limit === undefined) return undefined;
  let open: number;
  try {
    // Descriptors at or above the limit (inherited) take no room below it.
    open = readdirSync('/proc/self/fd').map(Number).filter((fd) => fd < limit).length;
  } catch (error) {
    return startFailure(error);
  }
  const free = limit - open;
  if (free >= need) return undefined;
  return `fsjob: too few file descriptors to start (EMFILE): ulimit -n ${limit} with ${open} open leaves ${free} free, too few to ${what} (it needs ${need} free, ulimit -n ${open + need} here); raise the limit (ulimit -n 1024, LimitNOFILE= in a systemd unit)\n`;
}

/** The line for a start that failed because descriptors ran out (EMFILE or ENFILE anywhere in the error's chain); undefined for any other failure. */
export function startFailure(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; typeof current === 'object' && current !== null && depth < 8; depth++) {
    const { code, message, cause } = current as { code?: unknown; message?: unknown; cause?: unknown };
    if (code === 'EMFILE' || code === 'ENFILE' || /\bE[MN]FILE\b/.test(String(message))) {
      const limit = softLimit();
      const which = code === 'ENFILE' ? 'the system-wide table of open files is full (ENFILE)' : `no file descriptor left (EMFILE)${limit === undefined ? '' : `: ulimit -n ${limit}`}`;
      return `fsjob: cannot start: ${which}; raise the limit (ulimit -n 1024, LimitNOFILE= in a systemd unit)\n`;
    }
    current = cause;
  }
  return undefined;
}
