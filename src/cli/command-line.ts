/**
 * The command line and environment as the bytes this process was given
 * (SPEC-3). Node decodes argv and the environment as UTF-8 and writes U+FFFD
 * for every byte that is not, so `fsjob enqueue -- printf %s $'\xff'` would
 * publish other bytes than it was given. On Linux /proc/self/cmdline and
 * /proc/self/environ hold the bytes themselves: they are decoded here as
 * Python's surrogateescape does (each byte that is not part of valid UTF-8
 * becomes U+DC80..U+DCFF), so the strings yargs parses keep every byte, and
 * `textOf` turns a value back into what a record holds: the string, or the
 * base64 form of its bytes. A value that must be text (a file name of the
 * producer's, a key, a label) and holds such a byte is refused, naming it.
 *
 * Without /proc (macOS), or when cmdline does not end with the arguments
 * node reports, node's strings are all there is: an argument holding U+FFFD
 * may be a byte that was not UTF-8, so `textOf` refuses it rather than
 * publish a guess.
 */
import { readFileSync, readlinkSync } from 'node:fs';
import { isUtf8 } from 'node:buffer';
import { FsjobError } from '../base/errors.ts';
import { textOfBytes, type RecordText } from '../records/bytes.ts';

/** The code unit standing for byte b (0x80..0xff) that is not part of valid UTF-8. */
const ESCAPE_BASE = 0xdc00;
const ESCAPED = /(?<![\ud800-\udbff])[\udc80-\udcff]/;
const REPLACEMENT = '\ufffd';

/** Whether the bytes this process was given could be read (else node's lossy strings are used). */
let exact = true;

/** `bytes` as a string: valid UTF-8 decoded, every other byte as its escape (surrogateescape). */
export function decodeEscaped(bytes: Uint8Array): string {
  let out = '';
  let i = 0;
  while (i < bytes.length) {
    const length = sequenceLength(bytes, i);
    if (length === 0) {
      out += String.fromCharCode(ESCAPE_BASE + (bytes[i] as number));
      i += 1;
    } else {
      out += Buffer.from(bytes.subarray(i, i + length)).toString('utf8');
      i += length;
    }
  }
  return out;
}

/** The length of the valid UTF-8 sequence (RFC 3629) at `i`, or 0 when the byte there starts none. */
function sequenceLength(bytes: Uint8Array, i: number): number {
  const b0 = bytes[i] as number;
  if (b0 < 0x80) return 1;
  const cont = (k: number, lo = 0x80, hi = 0xbf): boolean => {
    const b = bytes[i + k];
    return b !== undefined && b >= lo && b <= hi;
  };
  if (b0 >= 0xc2 && b0 <= 0xdf) return cont(1) ? 2 : 0;
  if (b0 >= 0xe0 && b0 <= 0xef) {
    // No overlong forms (E0 80..9F) and no surrogates (ED A0..BF).
    const lo = b0 === 0xe0 ? 0xa0 : 0x80;
    const hi = b0 === 0xed ? 0x9f : 0xbf;
    return cont(1, lo, hi) && cont(2) ? 3 : 0;
  }
  if (b0 >= 0xf0 && b0 <= 0xf4) {
    const lo = b0 === 0xf0 ? 0x90 : 0x80;
    const hi = b0 === 0xf4 ? 0x8f : 0xbf;
    return cont(1, lo, hi) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

/** The bytes a string of decodeEscaped stands for. */
export function encodeEscaped(text: string): Buffer {
  if (!ESCAPED.test(text)) return Buffer.from(text, 'utf8');
  const parts: Buffer[] = [];
  let run = '';
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    const escaped = unit >= 0xdc80 && unit <= 0xdcff && !(i > 0 && /[\ud800-\udbff]/.test(text[i - 1] as string));
    if (!escaped) {
      run += text[i];
      continue;
    }
    parts.push(Buffer.from(run, 'utf8'), Buffer.from([unit - ESCAPE_BASE]));
    run = '';
  }
  parts.push(Buffer.from(run, 'utf8'));
  return Buffer.concat(parts);
}

/** A string of decodeEscaped for a message: JSON-quoted, each byte that is not UTF-8 as \\xHH. */
function shown(text: string): string {
  return JSON.stringify(text).replace(/\\udc([89a-f][0-9a-f])/g, '\\x$1');
}

/** NUL-separated entries of a /proc file, as bytes. */
function entries(file: string): Buffer[] | undefined {
  try {
    const bytes = readFileSync(file);
    const list: Buffer[] = [];
    let start = 0;
    for (let i = 0; i < bytes.length; i++) {
      if (bytes[i] !== 0) continue;
      list.push(bytes.subarray(start, i));
      start = i + 1;
    }
    if (start < bytes.length) list.push(bytes.subarray(start));
    return list;
  } catch {
    return undefined;
  }
}

/**
 * process.argv.slice(2) with every byte kept: /proc/self/cmdline ends with
 * the script's arguments (node's own options come before the script). Each
 * is checked against node's string of it, so a process title that rewrote
 * cmdline falls back to node's strings.
 */
export function commandLine(argv: readonly string[] = process.argv.slice(2)): string[] {
  const raw = entries('/proc/self/cmdline');
  const tail = raw === undefined || raw.length < argv.length ? undefined : raw.slice(raw.length - argv.length);
  if (tail === undefined || tail.some((bytes, i) => bytes.toString('utf8') !== argv[i])) {
    exact = false;
    return [...argv];
  }
  return tail.map(decodeEscaped);
}

/** The value of environment variable `name` with every byte kept (/proc/self/environ), else node's. */
export function environmentValue(name: string): string | undefined {
  const raw = entries('/proc/self/environ');
  const prefix = Buffer.from(`${name}=`);
  const entry = raw?.findLast((bytes) => bytes.subarray(0, prefix.length).equals(prefix));
  if (entry === undefined) return process.env[name];
  const value = entry.subarray(prefix.length);
  // environ is the environment the process started with; a change since then is node's to tell.
  return value.toString('utf8') === process.env[name] ? decodeEscaped(value) : process.env[name];
}

/**
 * SPEC-3: a value of the command line as a record holds it: the string when
 * its bytes are UTF-8, else `{"base64": ...}`. `what` names it for the
 * refusal of a value whose bytes could not be read (no /proc).
 */
export function textOf(value: string, what: string): RecordText {
  if (!exact && value.includes(REPLACEMENT)) {
    throw new FsjobError('USAGE', `${what} holds U+FFFD, which may stand for bytes that are not UTF-8: this system does not show fsjob its arguments' bytes (no /proc/self/cmdline), so it refuses rather than publish other bytes (SPEC-3)`, { clause: 'SPEC-3' });
  }
  return ESCAPED.test(value) ? textOfBytes(encodeEscaped(value)) : value;
}

/**
 * SPEC-3: a value that must be text (a path, a key, a label) is refused,
 * naming it, when it holds bytes that are not UTF-8: a record could only
 * hold other bytes.
 */
export function requireText(value: string, what: string): string {
  if (ESCAPED.test(value)) {
    throw new FsjobError('USAGE', `${what} is not valid UTF-8 (${shown(value)}): fsjob takes it as text, and only a job's command and --env values may hold other bytes (SPEC-3)`, { clause: 'SPEC-3' });
  }
  return value;
}

/**
 * The working directory, the default `cwd` of a job: refused, with what to
 * do, when its path is not UTF-8 (SPEC-3: node would name another directory).
 */
export function workingDirectory(): string {
  let bytes: Buffer | undefined;
  try {
    bytes = readlinkSync('/proc/self/cwd', { encoding: 'buffer' });
  } catch {
    bytes = undefined; // no /proc: node's string is all there is
  }
  if (bytes !== undefined && !isUtf8(bytes)) {
    throw new FsjobError('USAGE', `this shell's working directory ${shown(decodeEscaped(bytes))} is not valid UTF-8, and a job's cwd is text (SPEC-3): give --cwd with a directory whose path is, and cd from there in the command if needed`, { clause: 'SPEC-3' });
  }
  return process.cwd();
}

/** What main makes of a lone "-" positional (`fsjob wait -`, which yargs would drop): a word no command line can hold (argv strings end at a NUL), so never a real argument. */
export const STDIN_POSITIONAL = '\u0000-';
