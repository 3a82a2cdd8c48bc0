// Before the CLI loads: are there descriptors enough to load it? Loading opens
// module files in parallel (the ESM loader fetches a module's imports at
// once), so a process started under a low `ulimit -n` fails half-way through
// with EMFILE, and the loader reports that as "Cannot find module". Better
// to say once, in one line, which limit is too low.
//
// Only node: built-ins here: this module runs before anything else is loaded.
import { readdirSync, readFileSync } from 'node:fs';

/**
 * Free descriptors below which fsjob does not even try to load. Measured on
 * Linux with node 20: the bundle loads with 21 free and fails (with EMFILE,
 * caught below) with 19; the sources through tsx load with 17 and, with 5,
 * hang for ever in a futex (tsx's loader thread could not start). Under 16
 * nothing is tried; above, a load that still runs out is caught.
 */
export const START_DESCRIPTORS = 16;

let limitAtStart;

function softLimit() {
  if (limitAtStart !== undefined) return limitAtStart;
  try {
    // Read before anything loads and kept: once descriptors ran out the file cannot be opened.
    const match = /^Max open files\s+(\d+|unlimited)\s/m.exec(readFileSync('/proc/self/limits', 'latin1'));
    limitAtStart = match === null || match[1] === 'unlimited' ? undefined : Number(match[1]);
    return limitAtStart;
  } catch {
    return undefined; // no /proc (macOS): nothing to check
  }
}

/** The sentence to print and exit 1 with when too few descriptors are free to start; undefined when starting is fine. */
export function tooFewDescriptors() {
  const limit = softLimit();
  if (limit === undefined) return undefined;
  let open;
  try {
    // Descriptors at or above the limit (inherited) do not take room below it.
    open = readdirSync('/proc/self/fd').map(Number).filter((fd) => fd < limit).length;
  } catch (error) {
    return error && (error.code === 'EMFILE' || error.code === 'ENFILE') ? startFailure(error) : undefined;
  }
  const free = limit - open;
  if (free >= START_DESCRIPTORS) return undefined;
  return `fsjob: too few file descriptors to start (EMFILE): ulimit -n ${limit} with ${open} open leaves ${free} free, too few to load fsjob (it needs about 24); raise the limit (ulimit -n 1024, LimitNOFILE= in a systemd unit)\n`;
}

/** The sentence for a start that failed because descriptors ran out (EMFILE, ENFILE anywhere in the error's chain); undefined for any other failure. */
export function startFailure(error) {
  for (let e = error, depth = 0; e !== undefined && e !== null && depth < 8; e = e.cause, depth++) {
    const code = e.code;
    if (code === 'EMFILE' || code === 'ENFILE' || /\bE[MN]FILE\b/.test(String(e.message))) {
      const limit = softLimit();
      const which = code === 'ENFILE' ? 'the system-wide table of open files is full (ENFILE)' : `no file descriptor left (EMFILE)${limit === undefined ? '' : `: ulimit -n ${limit}`}`;
      return `fsjob: cannot start: ${which}; raise the limit (ulimit -n 1024, LimitNOFILE= in a systemd unit)\n`;
    }
  }
  return undefined;
}
