/**
 * Damaged inputs for the record checks' equivalence tests: a seeded random
 * source (a failure reproduces), byte edits of a record, and the bytes of a
 * conformance vector case (as conformance/vectors/README.md says).
 */
import type { VectorCase } from '../../src/records/codec.ts';

/** xorshift32 from `seed`: random(n) is in 0..n-1. */
export function seededRandom(seed: number): (n: number) => number {
  let state = seed;
  return (n) => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) % n;
  };
}

/** One or two bytes inserted, dropped or overwritten, mostly with JSON's own characters. */
export function mutateBytes(original: Buffer, random: (n: number) => number): Buffer {
  let bytes = Buffer.from(original);
  const alphabet = Buffer.from('{}[]":,.-+e0123456789\\u \n');
  for (let edit = 1 + random(2); edit > 0; edit--) {
    const at = random(bytes.length + 1);
    const byte = Buffer.from([random(4) === 0 ? random(256) : (alphabet[random(alphabet.length)] ?? 0x30)]);
    const kind = random(3);
    if (kind === 0) bytes = Buffer.concat([bytes.subarray(0, at), byte, bytes.subarray(at)]);
    else if (kind === 1) bytes = Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + 1)]);
    else if (at < bytes.length) bytes[at] = byte[0] ?? 0;
  }
  return bytes;
}

/** The bytes of a vector case. */
export function vectorCaseBytes(test: VectorCase): Buffer {
  if (test.raw !== undefined) return Buffer.from(test.raw, 'utf8');
  if (test.raw_base64 !== undefined) return Buffer.from(test.raw_base64, 'base64');
  return Buffer.from(`${JSON.stringify(test.data)}\n`, 'utf8');
}
