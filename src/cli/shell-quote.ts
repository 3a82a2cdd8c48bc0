/**
 * A command line as a POSIX shell reads it back: `sh -c 'echo hi'`, not
 * `sh -c echo hi`, so what `fsjob status` shows can be pasted. Arguments with
 * control characters (a newline would break a table row) are written in the
 * $'...' form that bash, zsh, ksh and busybox sh read.
 */
import { bytesOfText, isPlainText, type RecordText } from '../records/bytes.ts';

const PLAIN = /^[A-Za-z0-9_@%+=:,./-]+$/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

function quoteControl(arg: string): string {
  const escaped = [...arg]
    .map((char) => {
      const code = char.charCodeAt(0);
      if (char === '\\' || char === "'") return `\\${char}`;
      if (char === '\n') return '\\n';
      if (char === '\t') return '\\t';
      if (code < 0x20 || code === 0x7f) return `\\x${code.toString(16).padStart(2, '0')}`;
      return char;
    })
    .join('');
  return `$'${escaped}'`;
}

export function shellQuoteArg(arg: string): string {
  if (arg === '') return "''";
  if (PLAIN.test(arg)) return arg;
  if (CONTROL.test(arg)) return quoteControl(arg);
  return `'${arg.replaceAll("'", `'\\''`)}'`;
}

/** Bytes that are not UTF-8 (SPEC-3) in the $'...' form, every byte outside printable ASCII as \\xHH: pasted back, it is those bytes. */
function quoteBytes(bytes: Buffer): string {
  let escaped = '';
  for (const byte of bytes) {
    if (byte === 0x5c || byte === 0x27) escaped += `\\${String.fromCharCode(byte)}`;
    else if (byte >= 0x20 && byte < 0x7f) escaped += String.fromCharCode(byte);
    else escaped += `\\x${byte.toString(16).padStart(2, '0')}`;
  }
  return `$'${escaped}'`;
}

export function shellQuote(argv: readonly RecordText[]): string {
  return argv.map((arg) => (isPlainText(arg) ? shellQuoteArg(arg) : quoteBytes(bytesOfText(arg)))).join(' ');
}
