/**
 * The bytes of a payload job's spec as its producer built it (REC-1, REC-2),
 * without serializeRecord's walk of every member: what `enqueue` writes per
 * job. It answers only where it can vouch for the bytes being exactly
 * serializeRecord's: a spec plainSpec takes (every member a producer writes
 * for a payload job, each a plain value within its schema bounds), whose
 * payload is null or kept as written (a RawJson, compact by construction:
 * the request parser or plainRequest made it), whose text holds no escaped lone
 * surrogate (the walk's refusal; a false alarm only costs the walk), within
 * RECORD_MAX. Anything else, undefined: the caller takes encodeBuilt, which
 * alone refuses, with its codes. test/records/spec-bytes.test.ts holds its
 * bytes to serializeRecord's over specs and mutations aimed at each guard.
 *
 * What it saves: the walk (checkSerializable) and the member-by-member join
 * of a spec with a kept payload (joinKeepingRaw), 6 µs a spec once
 * optimized and 24 in a producer's first thousands, against 3 and 8 here
 * (spec/design-hot-path-costs.md, the producer's pass).
 */
import { RECORD_MAX } from '../base/constants.ts';
import { plainSpec } from './plain-spec.ts';
import { RawJson } from './raw-json.ts';

/** What JSON.stringify writes for a lone surrogate (and, harmlessly, for a text holding a backslash then "ud800"). */
export const LONE_SURROGATE_ESCAPE = /\\ud[89a-f][0-9a-f]{2}/;
/** The payload member as a stand-in writes it; the members before it (fsjob, type, id, created_ms, handler) cannot hold this text. */
const STAND_IN = ',"payload":0,';

/** serializeRecord(spec)'s bytes, or undefined where this cannot vouch for them (see the header). */
export function builtSpecBytes(spec: Record<string, unknown>): Buffer | undefined {
  const payload = spec['payload'];
  if (!(payload instanceof RawJson || payload === null) || !plainSpec(spec)) return undefined;
  let whole: string;
  if (payload === null) whole = `${JSON.stringify(spec)}\n`;
  else {
    // One native stringify with a stand-in where the payload goes, then the payload's own text put there.
    const text = JSON.stringify({ ...spec, payload: 0 });
    const at = text.indexOf(STAND_IN);
    if (at < 0) return undefined;
    whole = `${text.slice(0, at + STAND_IN.length - 2)}${payload.text}${text.slice(at + STAND_IN.length - 1)}\n`;
  }
  if (LONE_SURROGATE_ESCAPE.test(whole) || whole.length > RECORD_MAX) return undefined;
  const bytes = Buffer.from(whole, 'utf8');
  return bytes.length > RECORD_MAX ? undefined : bytes;
}
