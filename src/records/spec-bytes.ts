/**
 * The bytes of a payload job's spec as its producer built it (REC-1, REC-2),
 * without serializeRecord's walk of every member: what `enqueue` writes per
 * job. It answers only where it can vouch for the bytes being exactly
 * serializeRecord's: a plain spec whose members are plain values at most two
 * deep, every number a safe integer (flatPlain: what a producer writes for a
 * payload job), whose payload is null or kept as written (a RawJson, compact
 * by construction: the request parser or plainRequest made it), whose text
 * holds no escaped lone surrogate (the walk's refusal; a false alarm only
 * costs the walk), within RECORD_MAX. Anything else, undefined: the caller
 * takes encodeBuilt, which alone refuses, with its codes.
 * test/records/spec-bytes.test.ts holds its bytes to serializeRecord's over
 * specs and mutations aimed at each guard.
 *
 * What it saves: the walk (checkSerializable) and the member-by-member join
 * of a spec with a kept payload (joinKeepingRaw), about 6 µs a spec once
 * optimized and 24 to 38 in a producer's first few hundred, against about
 * 3 and 8 to 13 here (spec/design-producer-costs.md, the producer's pass).
 */
import { RECORD_MAX } from '../base/constants.ts';
import { RawJson } from './raw-json.ts';

/** What JSON.stringify writes for a lone surrogate (and, harmlessly, for a text holding a backslash then "ud800"). */
export const LONE_SURROGATE_ESCAPE = /\\ud[89a-f][0-9a-f]{2}/;
/**
 * The payload member as a stand-in writes it: an empty object, which
 * flatPlain allows nowhere below the top, under the one top-level
 * "payload" (inside a string a quote is always escaped).
 */
const STAND_IN = '"payload":{}';

/**
 * What serializeRecord's walk (json-write.ts checkSerializable) would take and
 * JSON.stringify writes alike: a plain object whose members are null,
 * booleans, strings, safe integers, the payload kept as written, or plain
 * objects of strings and safe integers (env, labels, stdin, the producer's
 * identity). An array or anything deeper (argv, after) is left to the walk;
 * lone surrogates are looked for in the text written.
 */
function flatPlain(spec: Record<string, unknown>): boolean {
  if (Object.getPrototypeOf(spec) !== Object.prototype) return false;
  for (const key in spec) {
    const value = spec[key];
    if (value === null || typeof value === 'boolean' || typeof value === 'string' || value === undefined || (key === 'payload' && value instanceof RawJson)) continue;
    if (typeof value === 'number') {
      if (!Number.isSafeInteger(value)) return false;
      continue;
    }
    if (typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) return false;
    for (const name in value) {
      const inner = (value as Record<string, unknown>)[name];
      if (!(typeof inner === 'string' || Number.isSafeInteger(inner))) return false;
    }
  }
  return true;
}

/** serializeRecord(spec)'s bytes, or undefined where this cannot vouch for them (see the header). */
export function builtSpecBytes(spec: Record<string, unknown>): Buffer | undefined {
  const payload = spec['payload'];
  if (!(payload instanceof RawJson || payload === null) || !flatPlain(spec)) return undefined;
  let whole: string;
  if (payload === null) whole = `${JSON.stringify(spec)}\n`;
  else {
    // One native stringify with a stand-in where the payload goes, then the payload's own text put there.
    const text = JSON.stringify({ ...spec, payload: {} });
    const at = text.indexOf(STAND_IN);
    if (at < 0) return undefined;
    whole = `${text.slice(0, at + STAND_IN.length - 2)}${payload.text}${text.slice(at + STAND_IN.length)}\n`;
  }
  if (LONE_SURROGATE_ESCAPE.test(whole) || whole.length > RECORD_MAX) return undefined;
  const bytes = Buffer.from(whole, 'utf8');
  return bytes.length > RECORD_MAX ? undefined : bytes;
}
