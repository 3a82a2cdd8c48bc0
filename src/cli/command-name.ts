/**
 * Which command a command line names, found as yargs finds it, before yargs
 * is loaded: the entry (bin/fsjob.mts) chooses the enqueue start-up script
 * by it, and main.ts which lone "-" to keep. yargs takes the first
 * positional argument of the top-level parse as the command, and options may
 * come before it (`fsjob --queue q enqueue -- true`): an option yargs does
 * not know at the top level (every command's own, `--queue` among them)
 * takes the next argument as its value unless that starts with "-", so the
 * value is never the command (`fsjob --lane enqueue status` runs status).
 * The rules are yargs-parser's (its parse loop, with yargs' default
 * configuration: short option groups, boolean negation).
 *
 * No imports: the entry bundles this and runs it on every start.
 */

/** Options whose value may be "-" (standard input); main.ts joins each to its "-" first (`--batch=-`), so that "-" is its value. */
export const DASH_VALUED: ReadonlySet<string> = new Set(['--stdin', '--batch', '--request']);

/**
 * The options main.ts declares as booleans before any command (--verbose
 * and -v, --quiet, --help and -h, --version): they take no value, except a
 * following "true" or "false". Keep in step with main.ts's yargs set-up.
 */
const TOP_LEVEL_BOOLEANS: ReadonlySet<string> = new Set(['verbose', 'v', 'quiet', 'help', 'h', 'version']);

/** A negative number is a value, not an option (yargs-parser's `negative`). */
const NEGATIVE = /^-([0-9]+(\.[0-9]+)?|\.[0-9]+)$/;

/** Whether the option `key` (no dashes; `long` for a --name) takes `next` as its value. */
function takesValue(key: string, next: string | undefined, long: boolean): boolean {
  if (next === undefined) return false;
  if (TOP_LEVEL_BOOLEANS.has(key)) return next === 'true' || next === 'false';
  if (next === '-' && long) return DASH_VALUED.has(`--${key}`);
  const looksLikeOption = long ? next.startsWith('-') : /^(-|--)[^-]/.test(next);
  return !looksLikeOption || NEGATIVE.test(next);
}

/** Where the command is in the arguments (the first positional before "--", past every option and its value); -1 when none is. */
export function commandIndex(argv: readonly string[]): number {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') return -1;
    if (/^--[^=]+=/.test(arg) || /^--no-./.test(arg)) continue; // --name=value; --no-name (a negation) takes nothing
    if (/^--./.test(arg)) {
      if (takesValue(arg.slice(2), argv[i + 1], true)) i++;
      continue;
    }
    if (/^-[^-]/.test(arg) && !NEGATIVE.test(arg)) {
      // A group of short options (-vq): only its last letter may take the next argument, and only when
      // the group is letters alone (-q=x and -n5 hold their values).
      if (/^-[A-Za-z]+$/.test(arg) && takesValue(arg.slice(-1), argv[i + 1], false)) i++;
      continue;
    }
    return i;
  }
  return -1;
}

/** The command the arguments name; undefined when none does. */
export function commandName(argv: readonly string[]): string | undefined {
  const at = commandIndex(argv);
  return at === -1 ? undefined : argv[at];
}
