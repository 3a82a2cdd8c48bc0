/**
 * The common spec record checked by hand (REC-5), beside the generated
 * validator: what a consumer reads once per job. plainSpec answers only
 * "surely valid"; anything it does not take (a command job, stdin, lane
 * slots, after, hold, an extension member, a newer minor, any value it
 * doubts) goes to the full check, which alone refuses, with its findings.
 * What it saves: the generated spec validator's run and, in a consumer of
 * a few hundred jobs, its optimization by V8 (spec/design-hot-path-costs.md).
 * test/records/plain-spec.test.ts holds its verdicts to the full check's
 * over every spec vector and thousands of mutations.
 *
 * The pieces shared with the producer's plainRequest (src/producer/request.ts)
 * live here too: the request and the spec bound their members alike.
 */
import { isWellFormed } from './bytes.ts';

/** request.schema.json's and spec.schema.json's bounded integer members, with their bounds (minimum, maximum). */
export const PLAIN_INTEGERS: ReadonlyMap<string, readonly [number, number]> = new Map([
  ['timeout_ms', [1, 604_800_000]],
  ['kill_grace_ms', [0, 300_000]],
  ['queue_deadline_ms', [1, 2_592_000_000]],
  ['max_attempts', [1, 100]],
  ['retry_delay_ms', [0, 86_400_000]],
  ['priority', [-1000, 1000]],
  ['max_output_bytes', [0, 67_108_864]],
]);
/** common.schema.json#/$defs/handler. */
export const HANDLER = /^[a-z0-9][a-z0-9._-]{0,63}$/;
/** common.schema.json's env names (not FSJOB_*) and labels' names. */
export const ENV_NAME = /^(?!FSJOB_)[A-Za-z_][A-Za-z0-9_]{0,127}$/;
export const LABEL_NAME = /^[a-z0-9][a-z0-9._/-]{0,63}$/;

/** A string of at most `max` UTF-8 bytes (and as many characters), no NUL, no lone surrogate (SPEC-3: those take the full check, which names them). */
export function plainString(value: unknown, max: number): value is string {
  return typeof value === 'string' && value.length <= max /* a bound before counting bytes */ && !value.includes('\0') && isWellFormed(value) && Buffer.byteLength(value) <= max;
}

/** A copy of a map whose every name matches `name` and every value is a plainString of at most `max` bytes, with at most `most` members; else undefined. */
export function plainMap(value: unknown, name: RegExp, max: number, most: number): Record<string, string> | undefined {
  if (!plainObject(value)) return undefined;
  const entries: [string, string][] = [];
  for (const key of Object.keys(value)) {
    const item = value[key];
    if (!name.test(key) || !plainString(item, max)) return undefined;
    entries.push([key, item]);
  }
  // fromEntries makes a "__proto__" name an own member, as JSON.parse does.
  return entries.length <= most ? Object.fromEntries(entries) : undefined;
}

/**
 * An object JSON.stringify writes member by member: no toJSON of its own or
 * inherited (a RawJson has one, and what a toJSON returns could hold one).
 */
export function plainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !('toJSON' in value);
}

/** common.schema.json#/$defs/job_id. */
const JOB_ID = /^[0-9]{19}-[0-9a-f]{16}$/;
/** common.schema.json's key, host and proc_text: no control character (their byte bounds are checked beside). */
const NO_CONTROL = /^[^\u0000-\u001f\u007f]+$/;
/** The members every payload job's spec holds; output_keep and not_before_ms may stand beside them, and any other (argv, lane_slots, after, hold, x-) takes the full check. */
const REQUIRED = ['fsjob', 'type', 'id', 'created_ms', 'handler', 'payload', 'cwd', 'env', 'stdin', 'timeout_ms', 'kill_grace_ms', 'queue_deadline_ms', 'max_attempts', 'retry_delay_ms', 'priority', 'lane', 'dedupe', 'preemptible', 'max_output_bytes', 'labels', 'producer'];
const OUTPUT_KEEP: ReadonlySet<unknown> = new Set(['head', 'tail', 'head_tail']);
/** One of PLAIN_INTEGERS, as plainSpec checks it. */
interface IntegerBound {
  name: string;
  min: number;
  max: number;
  nullable: boolean;
}
/**
 * PLAIN_INTEGERS as an array made once: plainSpec runs once per job a
 * consumer reads, mostly in V8's interpreter, where a Map's iterator and
 * the destructuring of its entries cost an object each per member.
 */
const INTEGER_BOUNDS: readonly IntegerBound[] = [...PLAIN_INTEGERS].map(([name, [min, max]]) => ({ name, min, max, nullable: name === 'queue_deadline_ms' }));

/** A text of 1 to `max` bytes of UTF-8 without a control character (key, host, proc_text; the parser has refused lone surrogates). */
function plainToken(value: unknown, max: number): boolean {
  return typeof value === 'string' && NO_CONTROL.test(value) && Buffer.byteLength(value) <= max;
}

/** Whether `this` (a parsed record) holds `name` as its own member: REQUIRED.every's test, a plain function (no closure per call). */
function ownMember(this: object, name: string): boolean {
  return Object.hasOwn(this, name);
}

/** Whether `this` (a parsed spec) holds the integer `bound` names within its bounds (or null where it may be). */
function withinBound(this: Record<string, unknown>, bound: IntegerBound): boolean {
  const number = this[bound.name];
  return (bound.nullable && number === null) || within(number, bound.min, bound.max);
}

/** An integer from `min` to `max`. */
function within(value: unknown, min: number, max: number): boolean {
  return Number.isInteger(value) && (value as number) >= min && (value as number) <= max;
}

/** common.schema.json#/$defs/identity with exactly its six members (what is not an object has none of them). */
function plainIdentity(value: unknown): boolean {
  const identity = value as Record<string, unknown>;
  let members = 0;
  for (const _ in identity) members++;
  return (
    members === 6 &&
    plainToken(identity['host'], 255) &&
    plainToken(identity['boot_id'], 128) &&
    plainToken(identity['pid_ns'], 128) &&
    plainToken(identity['start'], 128) &&
    within(identity['pid'], 1, 4_194_304) &&
    within(identity['uid'], 0, 4_294_967_294)
  );
}

/**
 * True when `value`, a record as parsed (REC-1 already held), is a payload
 * job's spec that spec.schema.json accepts: the required members and at
 * most output_keep and not_before_ms beside them, each within its bounds,
 * stdin null. False means "not sure", never "invalid".
 */
export function plainSpec(value: Record<string, unknown>): boolean {
  // Loops run natively (Object.keys, every) rather than as loops of this function's own: it runs once
  // per job a consumer reads, mostly in V8's interpreter, where each turn of its own loops also counts
  // toward its optimization (design-hot-path-costs.md, sixth pass). Own members only: every required
  // one is looked for as an own member, so an inherited one cannot stand in for it.
  const members = Object.keys(value).length;
  if (!REQUIRED.every(ownMember, value)) return false;
  let optional = 0;
  if (Object.hasOwn(value, 'output_keep')) {
    if (!OUTPUT_KEEP.has(value['output_keep'])) return false;
    optional++;
  }
  if (Object.hasOwn(value, 'not_before_ms')) {
    const at = value['not_before_ms'];
    if (at !== null && !within(at, 0, Number.MAX_SAFE_INTEGER)) return false;
    optional++;
  }
  if (members !== REQUIRED.length + optional) return false; // a member of neither list
  const version = value['fsjob'];
  if (version !== '1.2' && version !== '1.1' && version !== '1.0') return false;
  if (value['type'] !== 'spec') return false;
  if (typeof value['id'] !== 'string' || !JOB_ID.test(value['id'])) return false;
  if (!within(value['created_ms'], 0, Number.MAX_SAFE_INTEGER)) return false;
  if (typeof value['handler'] !== 'string' || !HANDLER.test(value['handler'])) return false;
  const cwd = value['cwd'];
  if (!plainString(cwd, 4096) || !cwd.startsWith('/')) return false;
  if (plainMap(value['env'], ENV_NAME, 32_768, 256) === undefined) return false;
  if (value['stdin'] !== null) return false;
  if (!INTEGER_BOUNDS.every(withinBound, value)) return false;
  const lane = value['lane'];
  const dedupe = value['dedupe'];
  if ((lane !== null && !plainToken(lane, 256)) || (dedupe !== null && !plainToken(dedupe, 256))) return false;
  if (typeof value['preemptible'] !== 'boolean') return false;
  if (plainMap(value['labels'], LABEL_NAME, 256, 64) === undefined) return false;
  return plainIdentity(value['producer']);
}
