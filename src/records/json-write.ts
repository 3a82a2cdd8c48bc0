/**
 * The writing half of the records' byte form (REC-1, REC-2): a value the
 * code built becomes compact JSON and one line feed, or INVALID_RECORD for
 * what has no compact form and TOO_LARGE over RECORD_MAX. The reading half,
 * the scanner, is json.ts's.
 */
import { FsjobError } from '../base/errors.ts';
import { jsonPointer } from './findings.ts';
import { NEST_MAX, RECORD_MAX } from '../base/constants.ts';
import { joinKeepingRaw, RawJson, stringifyKeepingRaw } from './raw-json.ts';
import { FREE_JSON_MEMBERS, LONE_SURROGATE } from './json.ts';

function invalid(message: string, path: (string | number)[]): FsjobError {
  const where = path.length === 0 ? 'the record' : jsonPointer(path);
  return new FsjobError('INVALID_RECORD', `cannot serialize ${where}: ${message}`, { clause: 'REC-1' });
}

/**
 * Check that `value` is plain JSON that serializes to compact form (REC-1);
 * true when it holds a RawJson (a payload kept as written, REQ-2). `path` is
 * the member path to `value`, one array shared by the whole walk (pushed and
 * popped): a record's members cost no allocation each.
 */
/** Set by checkSerializable when a RawJson lies below a member of the record (inside its payload or result). */
let rawBelowTop = false;

function checkSerializable(value: unknown, path: (string | number)[], depth: number, free: boolean): boolean {
  if (value === null || typeof value === 'boolean') return false;
  if (value instanceof RawJson) {
    if (!free) throw invalid('only payload and result are kept as written', path);
    if (path.length > 1) rawBelowTop = true;
    return true;
  }
  if (typeof value === 'string') {
    if (LONE_SURROGATE.test(value)) throw invalid('string holds a lone surrogate, which UTF-8 cannot encode', path);
    return false;
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw invalid(`${value} is not a JSON number`, path);
    if (!free && !Number.isSafeInteger(value)) {
      throw invalid(`${value} is not an integer; numbers outside payload and result are integers`, path);
    }
    return false;
  }
  if (typeof value !== 'object') throw invalid(`a ${typeof value} is not a JSON value`, path);
  if (depth >= NEST_MAX) throw invalid(`arrays and objects nest deeper than ${NEST_MAX} (or refer to themselves)`, path);
  let raw = false;
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const item: unknown = value[index];
      path.push(index);
      if (item === undefined) throw invalid('undefined is not a JSON value', path);
      if (checkSerializable(item, path, depth + 1, free)) raw = true;
      path.pop();
    }
    return raw;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) throw invalid('only plain objects and arrays are JSON', path);
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const item: unknown = (value as Record<string, unknown>)[key];
    path.push(key);
    if (LONE_SURROGATE.test(key)) throw invalid('member name holds a lone surrogate', path);
    // undefined is omitted, as JSON.stringify does
    if (item !== undefined && checkSerializable(item, path, depth + 1, free || (depth === 0 && FREE_JSON_MEMBERS.has(key)))) raw = true;
    path.pop();
  }
  return raw;
}

/**
 * The bytes of a record: compact JSON and one line feed (REC-1). Members
 * whose value is undefined are omitted. Throws INVALID_RECORD for what has no
 * compact form (lone surrogates, non-finite numbers, non-integers outside
 * payload and result, non-plain objects, nesting over 128) and TOO_LARGE over
 * RECORD_MAX (REC-2). It does not check the schema: see encodeRecord.
 */

export function serializeRecord(value: unknown): Buffer {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new FsjobError('INVALID_RECORD', 'cannot serialize: a record is a JSON object', { clause: 'REC-1' });
  }
  rawBelowTop = false;
  const raw = checkSerializable(value, [], 0, false);
  const text = !raw ? JSON.stringify(value) : rawBelowTop ? stringifyKeepingRaw(value) : joinKeepingRaw(value as Record<string, unknown>);
  return recordBytes(text);
}

/**
 * Whether `value` can be a record's payload or result as it is (REC-1):
 * throws INVALID_RECORD, naming the place below `member`, for what has no
 * JSON form (a function, a symbol, a bigint, NaN, a Date, a Map, a cycle).
 * A payload handler's result is checked with it before its receipt is
 * built, so a result the receipt cannot hold fails the attempt instead of
 * leaving it without one.
 */
export function checkFreeJson(value: unknown, member: string): void {
  checkSerializable(value, [member], 1, true);
}

/** The text and its line feed, within RECORD_MAX (REC-2). */
function recordBytes(text: string): Buffer {
  const bytes = Buffer.from(`${text}\n`, 'utf8');
  if (bytes.length > RECORD_MAX) throw new FsjobError('TOO_LARGE', `the record is ${bytes.length} bytes, over RECORD_MAX (${RECORD_MAX})`, { clause: 'REC-2' });
  return bytes;
}

/**
 * serializeRecord for a record its writer built, walking for REC-1 only the members named in `outside` (codec.ts
 * FROM_OUTSIDE); a value kept as written goes to serializeRecord. Same bytes and refusals (test/records/encode-built.test.ts).
 */
export function serializeBuilt(value: Record<string, unknown>, outside: readonly string[]): Buffer {
  const path: (string | number)[] = [];
  for (const member of outside) {
    if (value[member] === undefined) continue;
    path.push(member);
    if (checkSerializable(value[member], path, 1, FREE_JSON_MEMBERS.has(member))) return serializeRecord(value);
    path.pop();
  }
  return recordBytes(JSON.stringify(value));
}
