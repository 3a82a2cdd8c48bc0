/**
 * Bytes that are not UTF-8 (SPEC-3). A command's arguments and environment
 * values are bytes (file names often are not UTF-8); a record is UTF-8 text
 * (REC-1). So an element of `argv` and a value of `env` is a string when its
 * bytes are valid UTF-8 and otherwise `{"base64": "..."}`: canonical padded
 * base64 of bytes that hold no NUL and are not valid UTF-8 (one form per
 * value, so two producers write the same record). A producer carries the
 * bytes it was given exactly; a consumer passes exactly these bytes; nothing
 * becomes U+FFFD on the way.
 *
 * The schemas state the rule as fsjob's keyword `nonUtf8Base64`
 * (nonUtf8Base64Problem is its check, which the generated validators inline).
 */
import { isUtf8 } from 'node:buffer';

/** An argument or an environment value as a record holds it (SPEC-3). */
export type RecordText = string | { base64: string };

/** Bytes as a record holds them: the string when they are valid UTF-8, else the base64 form (SPEC-3). */
export function textOfBytes(bytes: Uint8Array): RecordText {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return isUtf8(buffer) ? buffer.toString('utf8') : { base64: buffer.toString('base64') };
}

/** The exact bytes an argument or environment value of a record stands for. */
export function bytesOfText(text: RecordText): Buffer {
  return typeof text === 'string' ? Buffer.from(text, 'utf8') : Buffer.from(text.base64, 'base64');
}

/** Whether a record's text is the string form (its bytes are UTF-8). */
export function isPlainText(text: RecordText): text is string {
  return typeof text === 'string';
}

/**
 * Why `base64` is not what SPEC-3 allows for a value of at most `max` bytes,
 * or undefined when it is: canonical padded base64 (re-encoding the bytes
 * gives the same text, so no stray characters, missing padding or nonzero
 * bits after the last byte), no NUL, at most `max` bytes, not valid UTF-8.
 */
export function nonUtf8Base64Problem(base64: string, max: number): string | undefined {
  const bytes = Buffer.from(base64, 'base64');
  if (bytes.toString('base64') !== base64) return 'is not canonical padded base64 (RFC 4648)';
  if (bytes.length > max) return `decodes to ${bytes.length} bytes, over the bound of ${max}`;
  if (bytes.includes(0)) return 'decodes to bytes that hold a NUL';
  if (isUtf8(bytes)) return 'decodes to valid UTF-8, which a record holds as a string';
  return undefined;
}

/**
 * A JavaScript string holds UTF-16; one with a lone surrogate has no UTF-8
 * form (Buffer.from would write U+FFFD in its place). True when `text` has
 * none, so its UTF-8 bytes are exactly its characters.
 */
export function isWellFormed(text: string): boolean {
  return !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text);
}

/** A value for people: the string, or its bytes with each that is not UTF-8 written \xHH (status, logs). */
export function displayText(text: RecordText): string {
  if (typeof text === 'string') return text;
  return bytesOfText(text).toString('latin1').replace(/[\x80-\xff]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}
