/**
 * A payload kept as written (REQ-2, REC-10): a producer copies a request's
 * payload into the spec number for number, and `fsjob retry` copies a
 * finished job's. The scanner of json.ts makes the RawJson (a request's
 * payload always, a record's when asked, and parsePayloadText there);
 * serializeRecord writes its text.
 */
import { randomHex } from '../base/random.ts';
import type { JsonValue } from './generated/types.ts';

/**
 * A payload kept as written (REQ-2): its compact text, and the value a reader
 * in this language makes of it. A producer copies a request's payload into
 * the spec as written, number for number (`1e400`, `1.50` and
 * `12345678901234567890123` stay so), which a JSON value cannot carry: a
 * double holds neither of the last two, and JSON.stringify writes 1e5 as
 * 100000. serializeRecord writes `text`; anything else sees `value`
 * (JSON.stringify calls toJSON).
 */
export class RawJson {
  constructor(
    /** Compact JSON text (REC-1), numbers as written. */
    readonly text: string,
    readonly value: JsonValue,
  ) {}

  toJSON(): JsonValue {
    return this.value;
  }
}

/** `value` with a RawJson payload replaced by its value: a spec as an API caller sees it. */
export function plainPayload<T extends object>(value: T): T {
  const payload = (value as { payload?: unknown }).payload;
  return payload instanceof RawJson ? { ...value, payload: payload.value } : value;
}

/**
 * JSON.stringify, with each RawJson written as its text (REQ-2): it becomes
 * a string holding a NUL, a random nonce and its index, which no other
 * string of the value can equal, and that string's JSON is then replaced.
 * Exported for a request given as a value whose payload is kept as written.
 */
export function stringifyKeepingRaw(value: unknown): string {
  const nonce = randomHex(12);
  const texts: string[] = [];
  const json = JSON.stringify(value, function (this: Record<string, unknown>, key: string, item: unknown) {
    const original = this[key];
    if (!(original instanceof RawJson)) return item;
    texts.push(original.text);
    return `\u0000${nonce}:${texts.length - 1}`;
  });
  return json.replace(new RegExp(`"\\\\u0000${nonce}:([0-9]+)"`, 'g'), (_whole, index: string) => texts[Number(index)] as string);
}

/**
 * JSON.stringify of a record whose only RawJson values are its own members
 * (a spec's payload as written, REQ-2): each member written on its own, the
 * RawJson ones as their text. The same text as stringifyKeepingRaw, without
 * its nonce, replacer and search (40 µs of a 1 KB spec): serializeRecord's
 * check has made sure that the record is a plain object of JSON values.
 */
export function joinKeepingRaw(value: Record<string, unknown>): string {
  let out = '{';
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const item = value[key];
    if (item === undefined) continue;
    out += `${out.length === 1 ? '' : ','}${JSON.stringify(key)}:${item instanceof RawJson ? item.text : JSON.stringify(item)}`;
  }
  return `${out}}`;
}
