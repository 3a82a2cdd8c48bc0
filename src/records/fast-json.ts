/**
 * A faster road to the same answer as parseRecordBytes (REC-1) for the common
 * case of a well-formed record: inspectRecord's default wherever
 * compiled.ts is loaded (a consumer reads a spec per job, an audit
 * 100,000s of records).
 *
 * A record in compact form is exactly what JSON.stringify writes for its
 * value (REC-1 says so). So when the bytes are valid UTF-8, frame one object
 * and one line feed, and JSON.stringify(JSON.parse(text)) gives the text
 * back, the text has no whitespace, no duplicate member (parse keeps one,
 * stringify writes one), no optional escape, no "-0", no fraction or exponent
 * written in a way stringify would not write. What stringify would write but
 * REC-1 forbids is excluded before: any "\u" escape (lone surrogates; control
 * characters take the slow road, they are rare), "__proto__" members (which
 * the scanner builds differently), numbers outside payload and result that
 * are not integers or that stringify would write with an exponent (|n| >=
 * 1e21), and nesting deeper than NEST_MAX. Anything else goes to the scanner,
 * which then also says precisely what is wrong: this function never rejects.
 *
 * test/validator/queue-fastjson.test.ts checks the equivalence on every
 * conformance vector and on thousands of mutated records.
 */
import { isUtf8 } from 'node:buffer';
import { FREE_JSON_MEMBERS, parseRecordBytes, type JsonForm, type JsonObject, type ParseResult } from './json.ts';
import { NEST_MAX } from '../base/constants.ts';

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const LINE_FEED = 0x0a;
const EXPONENT_FROM = 1e21;

/** parseRecordBytes, answered without the scanner when the record is plainly in compact form. */
export function fastParseRecordBytes(bytes: Uint8Array, form: JsonForm = 'record'): ParseResult {
  if (form === 'record') {
    const value = compactRecordValue(bytes);
    if (value !== undefined) return { ok: true, value };
  }
  return parseRecordBytes(bytes, form);
}

/** The value of a record in compact form (what parseRecordBytes would answer with ok), or undefined: then only the scanner can say. */
export function compactRecordValue(bytes: Uint8Array): JsonObject | undefined {
  return plainValue(bytes) ?? compactValue(bytes, false);
}

/**
 * fastParseRecordBytes for a process that reads a record now and then (a
 * consumer: one spec per job), where V8 runs most calls before it has
 * optimized them: compactValue's road first, with its nesting bounded by
 * counting brackets (String.prototype.indexOf) instead of a loop over the
 * bytes, so that the common record costs only native calls (isUtf8,
 * JSON.parse, JSON.stringify) and a walk of its numbers. plainValue's loop
 * over the bytes is the faster road once optimized (the validator's, over
 * 100,000s of records) and cost a consumer 20 to 60 µs a spec in its first
 * few hundred jobs, and V8 tens of milliseconds to optimize it.
 */
export function nativeParseRecordBytes(bytes: Uint8Array, form: JsonForm = 'record'): ParseResult {
  if (form === 'record') {
    const value = compactValue(bytes, true) ?? compactRecordValue(bytes);
    if (value !== undefined) return { ok: true, value };
  }
  return parseRecordBytes(bytes, form);
}

const SPACE = 0x20;
const TAB = 0x09;
const CARRIAGE_RETURN = 0x0d;
const COLON = 0x3a;
const MINUS = 0x2d;
const ZERO = 0x30;
const NINE = 0x39;
/** Escapes JSON.stringify writes itself (\" \\ \b \f \n \r \t); \u and \/ go the longer road. */
const PLAIN_ESCAPE = new Uint8Array(256);
for (const c of '"\\bfnrt') PLAIN_ESCAPE[c.charCodeAt(0)] = 1;
/** Integers of up to 15 digits read back exactly: JSON.stringify writes them as they were. */
const EXACT_DIGITS = 15;

/**
 * The common record, in one pass over its bytes and one JSON.parse: no
 * whitespace between tokens, no escape JSON.stringify would not write, only
 * integers of up to 15 digits (no "-0", no fraction, no exponent), nesting
 * within NEST_MAX. Those bytes are what JSON.stringify writes for their
 * value, provided no member name repeats: the colons outside strings count
 * the members written, and the parsed value must hold as many. Anything
 * else (a float in payload, a \u escape, a long integer) takes
 * compactValue's road, which needs no such rules.
 */
function plainValue(bytes: Uint8Array): JsonObject | undefined {
  const length = bytes.length;
  if (length < 3 || bytes[0] !== OPEN_BRACE || bytes[length - 1] !== LINE_FEED || bytes[length - 2] !== CLOSE_BRACE) return undefined;
  let depth = 0;
  let members = 0;
  for (let i = 0; i < length - 1; i++) {
    const byte = bytes[i] as number;
    if (byte === QUOTE) {
      // "__proto__" (a member name the scanner builds differently): the longer road, without searching the text for it.
      if (bytes[i + 1] === UNDERSCORE && bytes[i + 2] === UNDERSCORE && isProto(bytes, i)) return undefined;
      // A string: to its closing quote, escapes checked, no control character.
      for (i++; ; i++) {
        if (i >= length - 1) return undefined;
        const c = bytes[i] as number;
        if (c === QUOTE) break;
        if (c < SPACE) return undefined;
        if (c === BACKSLASH && PLAIN_ESCAPE[bytes[++i] as number] !== 1) return undefined;
      }
    } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      if (++depth > NEST_MAX) return undefined;
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) depth--;
    else if (byte === COLON) members++;
    else if (byte === MINUS || (byte >= ZERO && byte <= NINE)) {
      const first = byte === MINUS ? i + 1 : i;
      let end = first;
      while (end < length && (bytes[end] as number) >= ZERO && (bytes[end] as number) <= NINE) end++;
      const digits = end - first;
      // "-", "-0", "01", 16 digits and more, or a fraction or exponent next: the longer road.
      if (digits === 0 || digits > EXACT_DIGITS || (bytes[first] === ZERO && (digits > 1 || byte === MINUS))) return undefined;
      const next = bytes[end];
      if (next === 0x2e || next === 0x65 || next === 0x45) return undefined;
      i = end - 1;
    } else if (byte === SPACE || byte === TAB || byte === LINE_FEED || byte === CARRIAGE_RETURN) return undefined;
  }
  if (!isUtf8(bytes)) return undefined;
  const value = parsedObject(textOf(bytes));
  return value !== undefined && memberCount(value) === members ? value : undefined;
}

const UNDERSCORE = 0x5f;
const PROTO = Buffer.from('"__proto__"');

/** Whether the string that opens at `at` is "__proto__" (an escaped spelling takes the longer road anyway: no "\u" here). */
function isProto(bytes: Uint8Array, at: number): boolean {
  if (at + PROTO.length > bytes.length) return false;
  for (let k = 3; k < PROTO.length; k++) if (bytes[at + k] !== PROTO[k]) return false;
  return true;
}

/** The record's text without its final line feed. */
function textOf(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length - 1).toString('utf8');
}

/** JSON.parse of a text that should be one object; undefined for anything else, and for "__proto__" members (the scanner builds those differently). */
function objectOf(text: string): JsonObject | undefined {
  return text.includes('"__proto__"') ? undefined : parsedObject(text);
}

/** JSON.parse of a text that should be one object and holds no "__proto__" member; undefined for anything else. */
function parsedObject(text: string): JsonObject | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JsonObject) : undefined;
}

/** Members of every object in a parsed value ("__proto__" counts: JSON.parse makes it an own member). */
function memberCount(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0;
  let count = 0;
  if (Array.isArray(value)) {
    for (const item of value) if (typeof item === 'object' && item !== null) count += memberCount(item);
    return count;
  }
  // for-in, not Object.keys: no array per object (JSON.parse makes plain objects, with no inherited enumerable member).
  for (const key in value) {
    count += 1;
    const member = (value as Record<string, unknown>)[key];
    if (typeof member === 'object' && member !== null) count += memberCount(member);
  }
  return count;
}

/** `byCount`: nesting bounded by the number of brackets (no loop over the bytes; a record with more than NEST_MAX of them goes another road), else measured. */
function compactValue(bytes: Uint8Array, byCount: boolean): JsonObject | undefined {
  const length = bytes.length;
  if (length < 3 || bytes[0] !== OPEN_BRACE || bytes[length - 1] !== LINE_FEED || bytes[length - 2] !== CLOSE_BRACE) return undefined;
  if (!isUtf8(bytes)) return undefined;
  // JSON.parse reads any depth, but JSON.stringify recurses: a record nested
  // 200,000 deep would overflow the stack below. The scanner reports it.
  if (!byCount && !nestsWithin(bytes, NEST_MAX)) return undefined;
  const text = textOf(bytes);
  if (byCount && !fewBrackets(text, NEST_MAX)) return undefined;
  if (text.includes('\\u')) return undefined;
  const value = objectOf(text);
  if (value === undefined || JSON.stringify(value) !== text) return undefined;
  return plainNumbers(value, 1, false) ? value : undefined;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** Whether the text holds at most `limit` opening brackets ({ and [, in strings too): then nothing in it nests deeper. */
function fewBrackets(text: string, limit: number): boolean {
  let count = 0;
  for (let at = text.indexOf('{'); at !== -1; at = text.indexOf('{', at + 1)) if (++count > limit) return false;
  for (let at = text.indexOf('['); at !== -1; at = text.indexOf('[', at + 1)) if (++count > limit) return false;
  return true;
}

/** Whether arrays and objects nest at most `limit` deep (the record is depth 1), by one loop over the bytes: no recursion. */
function nestsWithin(bytes: Uint8Array, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) inString = true;
    else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      if (++depth > limit) return false;
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) depth--;
  }
  return true;
}

/** Integers written without an exponent outside payload/result, and nesting within NEST_MAX there (the record is depth 1; compactValue bounded all nesting before). */
function plainNumbers(value: unknown, depth: number, free: boolean): boolean {
  if (typeof value === 'number') return free || (Number.isInteger(value) && Math.abs(value) < EXPONENT_FROM);
  if (typeof value !== 'object' || value === null) return true;
  // Below payload or result any JSON number stands (REC-1), and compactValue bounded the nesting before
  // (fewBrackets, nestsWithin): nothing is left to look at there, however large a payload is.
  if (free) return true;
  if (depth > NEST_MAX) return false;
  if (Array.isArray(value)) {
    for (const item of value) if (!plainNumbers(item, depth + 1, free)) return false;
    return true;
  }
  for (const key in value) {
    if (!plainNumbers((value as Record<string, unknown>)[key], depth + 1, free || (depth === 1 && FREE_JSON_MEMBERS.has(key)))) return false;
  }
  return true;
}
