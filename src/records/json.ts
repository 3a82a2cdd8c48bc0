/**
 * The byte form of records (REC-1): one JSON object in compact form, UTF-8
 * without a byte order mark, followed by exactly one line feed.
 *
 * Parsing is a real scan of the bytes, not a comparison of
 * JSON.stringify(JSON.parse(x)) with x: that comparison reorders
 * integer-like member names ({"2":0,"1":0} comes back as {"1":0,"2":0}),
 * silently keeps the last of two duplicate members, and says nothing about
 * where the text went wrong. The scanner checks the grammar, the compact
 * form and duplicate names in one pass and builds the value as it goes.
 *
 * The same scanner reads the request form (REQ-1), which is ordinary JSON:
 * whitespace is allowed there, everything else (UTF-8, no BOM, one object,
 * no duplicate names, bounded nesting) still holds. Writing (a value the
 * code built to its bytes) is json-write.ts's.
 */
import { jsonPointer } from './findings.ts';
import type { JsonValue } from './generated/types.ts';
import { NEST_MAX, RECORD_MAX } from '../base/constants.ts';
import { RawJson } from './raw-json.ts';

/** RECORD_MAX: the largest record file, in bytes (REC-2). */
/** Deepest nesting of arrays and objects; the record itself is depth 1 (REC-1). */
/** Top-level members whose values are free JSON: the only place a number may have a fraction or exponent. */
export const FREE_JSON_MEMBERS: ReadonlySet<string> = new Set(['payload', 'result']);

export type { JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/** The finding code a parse failure becomes. */
export type ParseFailureCode =
  | 'RECORD_EMPTY'
  | 'RECORD_BAD_UTF8'
  | 'RECORD_BOM'
  | 'RECORD_BAD_JSON'
  | 'RECORD_TOO_DEEP'
  | 'RECORD_TRAILING_DATA'
  | 'RECORD_NO_FINAL_LF'
  | 'RECORD_NOT_OBJECT'
  | 'RECORD_DUPLICATE_KEY'
  | 'RECORD_NOT_COMPACT';

/** Why bytes are not a record (REC-1) or a request (REQ-1), and where. */
export interface ParseFailure {
  code: ParseFailureCode;
  /** What is wrong, for people. */
  detail: string;
  /** Byte offset in the file where the problem is. */
  offset: number;
  /** JSON pointer of the member concerned, when there is one. */
  field?: string;
}

/** What `parseRecordBytes` answers: the JSON object, or why there is none. */
export type ParseResult = { ok: true; value: JsonObject } | { ok: false; failure: ParseFailure };

/** 'record': REC-1 compact form and framing. 'request': RFC 8259 text, whitespace allowed (REQ-1). */
export type JsonForm = 'record' | 'request';



/** A payload given as JSON text (the CLI's --payload), kept as written (REQ-2); a string saying what is wrong when it is not one JSON value. */
export function parsePayloadText(text: string): RawJson | string {
  const wrapped = parseRecordBytes(Buffer.from(`{"payload":${text}\n}`, 'utf8'), 'request');
  if (!wrapped.ok) return wrapped.failure.detail;
  return wrapped.value['payload'] as unknown as RawJson;
}

/** Compact form (REC-1) of a valid JSON text: whitespace dropped, strings written as JSON.stringify writes them, every other token as it stands. */
function compactText(text: string): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) {
      i++;
    } else if (c === 0x22) {
      const scanner = new Scanner(text, false);
      scanner.i = i;
      out += JSON.stringify(scanner.string());
      i = scanner.i;
    } else {
      let j = i + 1;
      while (j < text.length && !' \t\n\r"'.includes(text[j] as string)) j++;
      out += text.slice(i, j);
      i = j;
    }
  }
  return out;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const PLAIN_INTEGER = /^(?:0|-?[1-9][0-9]*)$/;

const SHORT_ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
/** Control characters JSON.stringify writes with a short escape; the rest of U+0000..U+001F use \u00xx. */
const HAS_SHORT_ESCAPE = new Set([0x08, 0x09, 0x0a, 0x0c, 0x0d]);
/** A UTF-16 half no UTF-8 can encode (the writer refuses it too: json-write.ts). */
export const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

class Stop extends Error {
  constructor(
    readonly code: 'RECORD_BAD_JSON' | 'RECORD_TOO_DEEP',
    readonly detail: string,
    readonly at: number,
  ) {
    super(detail);
  }
}

interface Note {
  detail: string;
  at: number;
  field: string;
}

/** Recursive descent over a decoded text; depth is bounded, so recursion is too. */
class Scanner {
  i = 0;
  notCompact: Note | undefined;
  duplicate: Note | undefined;
  readonly path: (string | number)[] = [];

  constructor(
    readonly text: string,
    readonly compact: boolean,
    /** Keep the top-level `payload` as written (RawJson): a request's always (REQ-2), a record's when a copy of it is made. */
    readonly keepPayload = false,
  ) {}

  private noteNotCompact(detail: string, at: number): void {
    if (this.compact && this.notCompact === undefined) this.notCompact = { detail, at, field: jsonPointer(this.path) };
  }

  private fail(detail: string, at = this.i): never {
    throw new Stop('RECORD_BAD_JSON', detail, at);
  }

  skipWhitespace(): void {
    const start = this.i;
    const text = this.text;
    while (this.i < text.length) {
      const c = text.charCodeAt(this.i);
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) break;
      this.i++;
    }
    if (this.i > start) this.noteNotCompact('whitespace outside strings', start);
  }

  value(depth: number): JsonValue {
    const c = this.text[this.i];
    if (c === '{') return this.object(depth + 1);
    if (c === '[') return this.array(depth + 1);
    if (c === '"') return this.string();
    if (c === 't') return this.literal('true', true);
    if (c === 'f') return this.literal('false', false);
    if (c === 'n') return this.literal('null', null);
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return this.number();
    if (c === undefined) this.fail('the text ends where a value should start');
    return this.fail(`unexpected character ${JSON.stringify(c)} where a value should start`);
  }

  private literal<T extends JsonValue>(word: string, value: T): T {
    if (!this.text.startsWith(word, this.i)) this.fail(`invalid literal (expected ${word})`);
    this.i += word.length;
    return value;
  }

  private number(): number {
    NUMBER.lastIndex = this.i;
    const match = NUMBER.exec(this.text);
    if (match === null) return this.fail('invalid number');
    const token = match[0];
    const at = this.i;
    this.i += token.length;
    const top = this.path[0];
    const free = typeof top === 'string' && FREE_JSON_MEMBERS.has(top);
    const value = Number(token);
    if (!free && !PLAIN_INTEGER.test(token)) {
      // REQ-2: a request may hold whitespace, but its integers are written as a record's.
      if (!this.compact) this.fail(`number ${token} is not an integer as records write it (REQ-2: no fraction, exponent or -0 outside payload)`, at);
      this.noteNotCompact(`number ${token} is not a plain integer (no fraction, exponent or -0 outside payload and result)`, at);
    }
    return value;
  }

  string(): string {
    const text = this.text;
    const open = this.i;
    this.i++; // opening quote
    let out = '';
    let runStart = this.i;
    for (;;) {
      if (this.i >= text.length) this.fail('unterminated string', open);
      const c = text.charCodeAt(this.i);
      if (c === 0x22) {
        out += text.slice(runStart, this.i);
        this.i++;
        return out;
      }
      if (c < 0x20) this.fail('unescaped control character in a string');
      if (c !== 0x5c) {
        this.i++;
        continue;
      }
      out += text.slice(runStart, this.i);
      const at = this.i;
      const e = text[this.i + 1];
      if (e === undefined) this.fail('unterminated escape', at);
      if (e === 'u') {
        out += this.unicodeEscape(at);
      } else {
        const replacement = SHORT_ESCAPES[e];
        if (replacement === undefined) this.fail(`invalid escape \\${e}`, at);
        if (e === '/') this.noteNotCompact('escape \\/ (write "/" unescaped)', at);
        out += replacement;
        this.i += 2;
      }
      runStart = this.i;
    }
  }

  private hex4(at: number): number {
    const digits = this.text.slice(at + 2, at + 6);
    if (!/^[0-9a-fA-F]{4}$/.test(digits)) this.fail('invalid \\u escape', at);
    return Number.parseInt(digits, 16);
  }

  private unicodeEscape(at: number): string {
    const code = this.hex4(at);
    const digits = this.text.slice(at + 2, at + 6);
    this.i = at + 6;
    if (code >= 0xd800 && code <= 0xdbff && this.text.startsWith('\\u', this.i)) {
      const low = this.hex4(this.i);
      if (low >= 0xdc00 && low <= 0xdfff) {
        this.noteNotCompact('\\u escape of a character outside U+0000..U+001F (write it as UTF-8)', at);
        this.i += 6;
        return String.fromCharCode(code, low);
      }
    }
    if (code >= 0xd800 && code <= 0xdfff) this.fail('\\u escape of a lone surrogate', at);
    if (code >= 0x20) this.noteNotCompact('\\u escape of a character outside U+0000..U+001F (write it as UTF-8)', at);
    else if (HAS_SHORT_ESCAPE.has(code)) this.noteNotCompact(`\\u${digits} where a short escape (\\b \\t \\n \\f \\r) exists`, at);
    else if (digits !== digits.toLowerCase()) this.noteNotCompact(`\\u${digits} with uppercase hex digits`, at);
    return String.fromCharCode(code);
  }

  private enter(depth: number): void {
    if (depth > NEST_MAX) throw new Stop('RECORD_TOO_DEEP', `arrays and objects nest deeper than ${NEST_MAX}`, this.i);
    this.i++;
  }

  private array(depth: number): JsonValue[] {
    this.enter(depth);
    const out: JsonValue[] = [];
    this.skipWhitespace();
    if (this.text[this.i] === ']') {
      this.i++;
      return out;
    }
    for (;;) {
      this.path.push(out.length);
      out.push(this.value(depth));
      this.path.pop();
      this.skipWhitespace();
      const c = this.text[this.i];
      this.i++;
      if (c === ']') return out;
      if (c !== ',') this.fail('expected "," or "]" in an array', this.i - 1);
      this.skipWhitespace();
    }
  }

  private object(depth: number): JsonObject {
    this.enter(depth);
    const out: JsonObject = {};
    const seen = new Set<string>();
    this.skipWhitespace();
    if (this.text[this.i] === '}') {
      this.i++;
      return out;
    }
    for (;;) {
      if (this.text[this.i] !== '"') this.fail('expected a member name in double quotes');
      const at = this.i;
      const key = this.string();
      this.path.push(key);
      if (seen.has(key) && this.duplicate === undefined) {
        this.duplicate = { detail: `member name ${JSON.stringify(key)} appears twice in one object`, at, field: jsonPointer(this.path) };
      }
      seen.add(key);
      this.skipWhitespace();
      if (this.text[this.i] !== ':') this.fail('expected ":" after a member name');
      this.i++;
      this.skipWhitespace();
      const start = this.i;
      let value = this.value(depth);
      if (depth === 1 && key === 'payload' && this.keepPayload) {
        const written = this.text.slice(start, this.i);
        value = new RawJson(this.compact ? written : compactText(written), value) as unknown as JsonValue;
      }
      // "__proto__" must become an ordinary member, as JSON.parse makes it.
      if (key === '__proto__') Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
      else out[key] = value;
      this.path.pop();
      this.skipWhitespace();
      const c = this.text[this.i];
      this.i++;
      if (c === '}') return out;
      if (c !== ',') this.fail('expected "," or "}" in an object', this.i - 1);
      this.skipWhitespace();
    }
  }
}

function byteOffset(text: string, index: number): number {
  return Buffer.byteLength(text.slice(0, index), 'utf8');
}

function failure(code: ParseFailureCode, detail: string, offset: number, field?: string): ParseResult {
  return { ok: false, failure: field === undefined ? { code, detail, offset } : { code, detail, offset, field } };
}

/**
 * Parse the bytes of a record (REC-1), or of a request (REQ-1) with
 * `form: 'request'`. Never throws for bad input: the result says what is
 * wrong and where. Failures are reported in this order: empty, not UTF-8,
 * byte order mark, not JSON (or nested too deep), trailing data, missing
 * final line feed, not an object, duplicate member names, not compact.
 */
export function parseRecordBytes(bytes: Uint8Array, form: JsonForm = 'record', options: { keepPayload?: boolean } = {}): ParseResult {
  if (bytes.length === 0) return failure('RECORD_EMPTY', 'the file is empty', 0);
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return failure('RECORD_BAD_UTF8', 'the bytes are not valid UTF-8', firstInvalidUtf8(bytes));
  }
  if (text.charCodeAt(0) === 0xfeff) return failure('RECORD_BOM', 'the file starts with a byte order mark', 0);

  const compact = form === 'record';
  const scanner = new Scanner(text, compact, !compact || options.keepPayload === true);
  let value: JsonValue;
  try {
    scanner.skipWhitespace();
    value = scanner.value(0);
  } catch (error) {
    if (error instanceof Stop) return failure(error.code, error.detail, byteOffset(text, error.at));
    throw error;
  }

  const end = scanner.i;
  const rest = text.slice(end);
  const restTrimmed = rest.replace(/^[ \t\r\n]+/, '');
  if (restTrimmed !== '') {
    const at = end + (rest.length - restTrimmed.length);
    return failure('RECORD_TRAILING_DATA', 'there is more after the JSON value', byteOffset(text, at));
  }
  if (compact) {
    if (!rest.endsWith('\n')) return failure('RECORD_NO_FINAL_LF', 'the record does not end with a line feed', bytes.length);
    if (/^\n{2,}$/.test(rest)) {
      return failure('RECORD_TRAILING_DATA', 'there is more than one line feed after the JSON object', byteOffset(text, end + 1));
    }
    if (rest !== '\n') scanner.notCompact ??= { detail: 'whitespace after the JSON object', at: end, field: '' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return failure('RECORD_NOT_OBJECT', `the JSON value is ${Array.isArray(value) ? 'an array' : value === null ? 'null' : `a ${typeof value}`}, not an object`, 0);
  }
  if (scanner.duplicate !== undefined) {
    const { detail, at, field } = scanner.duplicate;
    return failure('RECORD_DUPLICATE_KEY', detail, byteOffset(text, at), field);
  }
  if (scanner.notCompact !== undefined) {
    const { detail, at, field } = scanner.notCompact;
    return failure('RECORD_NOT_COMPACT', `not compact: ${detail}`, byteOffset(text, at), field);
  }
  return { ok: true, value };
}

/** Offset of the first byte where UTF-8 decoding fails (for the message). */
function firstInvalidUtf8(bytes: Uint8Array): number {
  let low = 0;
  let high = bytes.length;
  // The longest valid prefix: binary search on "decodes without error".
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (decodesPrefix(bytes, mid)) low = mid;
    else high = mid - 1;
  }
  return low;
}

function decodesPrefix(bytes: Uint8Array, length: number): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(0, length), { stream: true });
    return true;
  } catch {
    return false;
  }
}
