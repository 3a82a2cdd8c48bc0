/**
 * Random hex digits for names: the 64 random bits of a job id (LAYOUT-4)
 * and of a temporary name (PUB-1). Taken from a pool that the CSPRNG fills
 * 4 KiB at a time: randomBytes(8) per name cost a call into OpenSSL and a
 * getpid(2) (its fork check) each time, four times per job. Each byte is
 * handed out once. Node never forks a process that has run JavaScript, so
 * two processes never share a pool.
 *
 * The pool is filled from the kernel's CSPRNG, /dev/urandom (what
 * getrandom(2), and so OpenSSL, draws from), and from node:crypto only
 * where that cannot be read: loading node:crypto costs a start ~4 ms (its
 * 20 internal modules), a tenth of `fsjob enqueue` (issue 29 target 2).
 */
import { closeSync, openSync, readSync } from 'node:fs';

const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let next = POOL_BYTES;

/** Fills the pool from /dev/urandom, or from node:crypto when that cannot be opened or read whole. */
function refill(): void {
  try {
    const fd = openSync('/dev/urandom', 'r');
    try {
      if (readSync(fd, pool, 0, POOL_BYTES, null) === POOL_BYTES) return;
    } finally {
      closeSync(fd);
    }
  } catch {
    // no /dev/urandom (a chroot without /dev, no descriptor left): node's CSPRNG below
  }
  process.getBuiltinModule('node:crypto').randomFillSync(pool);
}

/** `bytes` random bytes (at most POOL_BYTES) as lowercase hex. */
export function randomHex(bytes: number): string {
  if (next + bytes > POOL_BYTES) {
    refill();
    next = 0;
  }
  const hex = pool.toString('hex', next, next + bytes);
  next += bytes;
  return hex;
}
