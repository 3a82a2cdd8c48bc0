/**
 * The command policy of EXEC-9 and EXEC-15: glob patterns that judge the
 * program that will run, never the text a job wrote. An `argv[0]` without
 * `/` is resolved against the consumer's own trusted PATH (not the job's
 * env.PATH) and the resolved absolute path is what runs; a pattern without
 * `/` matches such an argv[0] as written, a pattern with `/` matches the
 * resolved path, or an argv[0] written with a `/` (made absolute against cwd,
 * lexically). A job whose env names a dynamic loader or shell start-up
 * variable (LD_*, DYLD_*, GCONV_PATH, BASH_ENV, ENV) is refused: it would
 * change what an allowed program does.
 *
 * | pattern | matches |
 * | --- | --- |
 * | `*` | any run of characters except `/` |
 * | `**` | any run of characters, `/` included |
 * | `?` | one character except `/` |
 * | `[abc]`, `[a-z]`, `[!abc]` | one character of (or not of) the set |
 * | `\x` | the character x itself |
 *
 * So `--allow make` admits `make` (running the trusted PATH's make) but not
 * `/tmp/evil/make`; `--allow '/usr/bin/*'` admits `/usr/bin/make` and `make`
 * when the trusted PATH finds it there, not `/usr/bin/x/y`; `--allow '**'`
 * admits every program the trusted PATH or a path names.
 * A job refused by the list is rejected with reason `not_allowed`, never
 * silently skipped (EXEC-9).
 */
import { displayText, isPlainText, type RecordText } from '../records/bytes.ts';
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
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

/** EXEC-15: environment variables that change what an allowed program does. */
export function isLoaderVariable(name: string): boolean {
  return name.startsWith('LD_') || name.startsWith('DYLD_') || name === 'GCONV_PATH' || name === 'BASH_ENV' || name === 'ENV';
}

/** The consumer's trusted PATH (EXEC-15): its own PATH, else EXEC-6's default. */
export function trustedPath(env: NodeJS.ProcessEnv = process.env): string {
  return env['PATH'] ?? '/usr/local/bin:/usr/bin:/bin';
}

export type PolicyVerdict = { ok: true; program: string } | { ok: false; why: string };

/**
 * The allowlist of a consumer (EXEC-9, `ConsumerOptions.allow`): glob patterns that
 * a command job's argv[0] must match, compiled once.
 */
export class AllowList {
  readonly patterns: readonly string[];
  private readonly bare: RegExp[];
  private readonly pathed: RegExp[];
  private readonly searchPath: string;

  constructor(patterns: readonly string[], searchPath: string = trustedPath()) {
    this.patterns = [...patterns];
    this.bare = patterns.filter((p) => !p.includes('/')).map(globToRegExp);
    this.pathed = patterns.filter((p) => p.includes('/')).map(globToRegExp);
    this.searchPath = searchPath;
  }

  /** EXEC-9, EXEC-15: may this job's command run, and which program runs. */
  judge(argv0Text: RecordText, cwd: string, env: Readonly<Record<string, unknown>>): PolicyVerdict {
    const loader = Object.keys(env).filter(isLoaderVariable);
    if (loader.length > 0) return { ok: false, why: `its env sets ${loader.join(', ')}, which would change what an allowed program does (EXEC-15)` };
    // SPEC-3: patterns are text; a program name whose bytes are not UTF-8 matches none of them.
    if (!isPlainText(argv0Text)) return { ok: false, why: `argv[0] (${displayText(argv0Text)}) is not UTF-8, and allow patterns match UTF-8 names only (EXEC-9)` };
    const argv0 = argv0Text;
    if (argv0.includes('/')) {
      const absolute = path.resolve(cwd, argv0);
      return this.pathed.some((re) => re.test(absolute)) ? { ok: true, program: argv0 } : { ok: false, why: `${absolute} matches no allow pattern (EXEC-9)` };
    }
    const program = resolveIn(this.searchPath, argv0);
    if (program === undefined) return { ok: false, why: `${JSON.stringify(argv0)} is not an executable file in the consumer's trusted PATH ${this.searchPath} (EXEC-15)` };
    if (this.bare.some((re) => re.test(argv0)) || this.pathed.some((re) => re.test(program))) return { ok: true, program };
    return { ok: false, why: `${JSON.stringify(argv0)} (${program}) matches no allow pattern (EXEC-9)` };
  }
}

/** The first executable regular file named `name` in the directories of `searchPath`. */
function resolveIn(searchPath: string, name: string): string | undefined {
  for (const dir of searchPath.split(':')) {
    if (!path.isAbsolute(dir)) continue; // a relative PATH entry would depend on the job's cwd
    const candidate = path.join(dir, name);
    try {
      if (statSync(candidate).isFile()) {
        accessSync(candidate, constants.X_OK);
        return candidate;
      }
    } catch {
      // not here
    }
  }
  return undefined;
}
