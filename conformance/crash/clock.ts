// The wall-clock offset of a run under the injector (interpose-clock.c): the
// driver writes it into the shared counter file, which every process of the
// run maps, so a case can make the run's wall clock jump while it goes
// (LEASE-4) and leave the host's alone.
import { closeSync, openSync, writeSync } from 'node:fs';

/** Offsets in the counter file (struct shared in interpose.h). */
const CLOCK_SEQ_OFFSET = 48;
const CLOCK_OFFSET_OFFSET = 56;
/** The most the offset may be: a century either way, far inside int64 nanoseconds and time_t. */
const MAX_OFFSET_MS = 100 * 365 * 86_400_000;

/**
 * The writer of one run's offset. Only the driver writes, so a sequence
 * count it keeps itself is enough: odd while the offset changes, so a
 * reader never takes half of an old and half of a new value.
 */
export class WallClockOffset {
  private readonly counterFile: string;
  private seq = 0n;
  private current = 0;

  constructor(counterFile: string) {
    this.counterFile = counterFile;
  }

  /** The offset in milliseconds last set (0 at the start). */
  get ms(): number {
    return this.current;
  }

  /** Sets the offset the run's wall clock reads (CLOCK_REALTIME + ms); throws a RangeError for a non-integer or a value past a century. */
  set(ms: number): void {
    if (!Number.isSafeInteger(ms) || Math.abs(ms) > MAX_OFFSET_MS) throw new RangeError(`runWithCrash: a wall-clock offset must be an integer number of milliseconds within ±${MAX_OFFSET_MS}, got ${ms}`);
    const fd = openSync(this.counterFile, 'r+');
    try {
      const word = Buffer.alloc(8);
      const put = (offset: number, write: (b: Buffer) => void): void => {
        write(word);
        writeSync(fd, word, 0, 8, offset);
      };
      put(CLOCK_SEQ_OFFSET, (b) => b.writeBigUInt64LE(++this.seq));
      put(CLOCK_OFFSET_OFFSET, (b) => b.writeBigInt64LE(BigInt(ms) * 1_000_000n));
      put(CLOCK_SEQ_OFFSET, (b) => b.writeBigUInt64LE(++this.seq));
    } finally {
      closeSync(fd);
    }
    this.current = ms;
  }
}
