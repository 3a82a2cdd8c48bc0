/**
 * The command allowlist of EXEC-9: glob patterns matched against `argv[0]`
 * exactly as the spec wrote it (no PATH lookup, no realpath), over the whole
 * string.
 *
 * | pattern | matches |
 * | --- | --- |
 * | `*` | any run of characters except `/` |
 * | `**` | any run of characters, `/` included |
 * | `?` | one character except `/` |
 * | `[abc]`, `[a-z]`, `[!abc]` | one character of (or not of) the set |
 * | `\x` | the character x itself |
 *
 * So `--allow make` admits `make` but not `/usr/bin/make`; `--allow '/usr/bin/*'`
 * admits `/usr/bin/make` but not `/usr/bin/x/y`; `--allow '**'` admits all.
 * A job refused by the list is rejected with reason `not_allowed`, never
 * silently skipped (EXEC-9).
 */
import { FsjobError } from '../base/errors.ts';

/**
 * An allowlist pattern as a regular expression over the whole of argv[0]
 * (the table above). Throws USAGE (EXEC-9) for a malformed pattern.
 */
export function globToRegExp(pattern: string): RegExp {
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === '\\') {
      const next = pattern[i + 1];
      if (next === undefined) throw badPattern(pattern, 'ends with a lone backslash');
      out += escapeChar(next);
      i++;
    } else if (c === '*') {
      if (pattern[i + 1] === '*') {
        out += '.*';
        i++;
      } else out += '[^/]*';
    } else if (c === '?') {
      out += '[^/]';
    } else if (c === '[') {
      const close = pattern.indexOf(']', i + 2);
      if (close < 0) throw badPattern(pattern, 'has "[" without a closing "]"');
      let body = pattern.slice(i + 1, close);
      const negate = body.startsWith('!');
      if (negate) body = body.slice(1);
      out += `[${negate ? '^' : ''}${body.replace(/[\\\]^]/g, '\\$&')}]`;
      i = close;
    } else {
      out += escapeChar(c);
    }
  }
  return new RegExp(`^${out}$`, 'su');
}

function escapeChar(c: string): string {
  return /[.*+?^${}()|[\]\\/]/.test(c) ? `\\${c}` : c;
}

function badPattern(pattern: string, why: string): FsjobError {
  return new FsjobError('USAGE', `allow pattern ${JSON.stringify(pattern)} ${why} (EXEC-9)`, { clause: 'EXEC-9' });
}

/**
 * The allowlist of a consumer (EXEC-9, `ConsumerOptions.allow`): glob patterns that
 * a command job's argv[0] must match, compiled once.
 */
export class AllowList {
  readonly patterns: readonly string[];
  private readonly compiled: RegExp[];

  constructor(patterns: readonly string[]) {
    this.patterns = [...patterns];
    this.compiled = patterns.map(globToRegExp);
  }

  allows(argv0: string): boolean {
    return this.compiled.some((re) => re.test(argv0));
  }
}
