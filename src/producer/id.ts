/**
 * Job ids (LAYOUT-4): 19 decimal digits of nanoseconds since the Unix epoch,
 * a hyphen, 16 lowercase hex digits from the CSPRNG.
 *
 * The clock seam gives milliseconds, so the 19 digits are the millisecond
 * followed by six digits of a per-process counter (LAYOUT-4 allows a coarser
 * clock completed by a counter). The counter makes ids strictly increasing
 * within this process even when the wall clock stands still or steps back:
 * a new id is never below the last one plus 1 ns. Across processes the byte
 * order is the millisecond order, and the random part keeps two producers in
 * the same millisecond from colliding.
 */
import { randomHex } from '../base/random.ts';
import type { Clock } from '../base/clock.ts';
import { systemClock } from '../base/clock.ts';
import { FsjobError } from '../base/errors.ts';

const NS_PER_MS = 1_000_000n;
const ID_DIGITS = 19;
const LARGEST_19_DIGITS = 10n ** 19n - 1n;

let lastNs = 0n;

export interface JobIdStamp {
  id: string;
  /** The clock reading the id was made from: the spec's created_ms. */
  ms: number;
}

/** A fresh id and the millisecond it was taken at (so created_ms and the id agree). */
export function newJobIdStamp(clock: Clock = systemClock): JobIdStamp {
  const ms = clock.nowMs();
  if (!Number.isSafeInteger(ms) || ms < 0) {
    throw new FsjobError('USAGE', `the clock returned ${ms}, not a millisecond count since the epoch; fix the injected clock`, { clause: 'LAYOUT-4' });
  }
  let ns = BigInt(ms) * NS_PER_MS;
  if (ns <= lastNs) ns = lastNs + 1n;
  if (ns > LARGEST_19_DIGITS) {
    throw new FsjobError('USAGE', `the clock reads ${ms} ms, past what 19 digits of nanoseconds can hold (LAYOUT-4); fix the clock`, { clause: 'LAYOUT-4' });
  }
  lastNs = ns;
  return { id: `${ns.toString().padStart(ID_DIGITS, '0')}-${randomHex(8)}`, ms };
}

/** LAYOUT-4: a new job id, strictly greater (in byte order) than every id this process made before. */
export function newJobId(clock: Clock = systemClock): string {
  return newJobIdStamp(clock).id;
}
