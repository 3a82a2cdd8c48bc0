/**
 * A faster road to the same answer as parseRecordBytes (REC-1) for the common
 * case of a well-formed record, for audits that parse 100,000s of them.
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
import { FREE_JSON_MEMBERS, parseRecordBytes, type JsonForm, type JsonObject, type ParseResult } from '../records/json.ts';
import { NEST_MAX } from '../base/constants.ts';

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const LINE_FEED = 0x0a;
const EXPONENT_FROM = 1e21;

/** parseRecordBytes, answered without the scanner when the record is plainly in compact form. */
export function fastParseRecordBytes(bytes: Uint8Array, form: JsonForm = 'record'): ParseResult {
  if (form === 'record') {
    const value = compactValue(bytes);
    if (value !== undefined) return { ok: true, value };
  }
  return parseRecordBytes(bytes, form);
}

function compactValue(bytes: Uint8Array): JsonObject | undefined {
  const length = bytes.length;
  if (length < 3 || bytes[0] !== OPEN_BRACE || bytes[length - 1] !== LINE_FEED || bytes[length - 2] !== CLOSE_BRACE) return undefined;
  if (!isUtf8(bytes)) return undefined;
  // JSON.parse reads any depth, but JSON.stringify recurses: a record nested
  // 200,000 deep would overflow the stack below. The scanner reports it.
  if (!nestsWithin(bytes, NEST_MAX)) return undefined;
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, length - 1).toString('utf8');
  if (text.includes('\\u') || text.includes('"__proto__"')) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  if (JSON.stringify(value) !== text) return undefined;
  return plainNumbers(value, 1, false) ? (value as JsonObject) : undefined;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

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

/** Integers written without an exponent outside payload/result, and nesting within NEST_MAX (the record is depth 1). */
function plainNumbers(value: unknown, depth: number, free: boolean): boolean {
  if (typeof value === 'number') return free || (Number.isInteger(value) && Math.abs(value) < EXPONENT_FROM);
  if (typeof value !== 'object' || value === null) return true;
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
