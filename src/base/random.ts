/**
 * Random hex digits for names: the 64 random bits of a job id (LAYOUT-4)
 * and of a temporary name (PUB-1). Taken from a pool that the CSPRNG fills
 * 4 KiB at a time: randomBytes(8) per name cost a call into OpenSSL and a
 * getpid(2) (its fork check) each time, four times per job. The bytes are
 * the same CSPRNG's; each is handed out once. Node never forks a process
 * that has run JavaScript, so two processes never share a pool.
 */
import { randomFillSync } from 'node:crypto';

const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let next = POOL_BYTES;

/** `bytes` random bytes (at most POOL_BYTES) as lowercase hex. */
export function randomHex(bytes: number): string {
  if (next + bytes > POOL_BYTES) {
    randomFillSync(pool);
    next = 0;
  }
  const hex = pool.toString('hex', next, next + bytes);
  next += bytes;
  return hex;
}
