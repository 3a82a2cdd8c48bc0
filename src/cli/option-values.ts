/**
 * Every option that takes a value is given one, or the command line is a
 * usage error. Left to itself, yargs reads an option with nothing after it
 * (`--priority -- make`, `--cwd` before another option, `--concurrency` at
 * the end) as no option at all for a number and as "" for a string (a
 * `--cwd` that then meant the current directory), and reads `--priority=`
 * or `--priority ""` (a shell variable that was empty) as 0: a job enqueued
 * or a worker started with a setting the user did not write. requiresArg
 * makes the first a usage error (usage-hints.ts says it in fsjob's terms);
 * an empty text given to a number option is refused here, and one given to
 * --queue, which would otherwise mean the default queue (enqueue) or the
 * current directory (work): `-q "$QUEUE"` with QUEUE unset.
 */
import type { Argv } from 'yargs';
import { FsjobError } from '../base/errors.ts';
import type { KnownOptions } from './usage-hints.ts';

/** What yargs' getOptions() says of the kinds of the options. */
interface OptionKinds extends KnownOptions {
  boolean: readonly string[];
  count: readonly string[];
}

/** The positionals of a yargs command string (`enqueue [cmd..]` → cmd): their values are not options'. */
function positionalsOf(command: string): Set<string> {
  return new Set([...command.matchAll(/[<[]([^\]>.]+)(?:\.\.)?[\]>]/g)].map((match) => match[1] as string));
}

/** The names argv may give `key` by: --key and each alias. */
function spellings(key: string, options: OptionKinds): string[] {
  return [key, ...(options.alias[key] ?? [])].map((name) => (name.length === 1 ? `-${name}` : `--${name}`));
}

/**
 * Marks every option of `yargs` that takes a value (not a boolean, a count
 * or one of `command`'s positionals) as requiring one, and refuses an empty
 * text for a number option or --queue in `argv` (the words before "--");
 * returns `yargs`.
 */
export function requireOptionValues(yargs: Argv, command: string, argv: readonly string[]): Argv {
  const options = (yargs as unknown as { getOptions(): OptionKinds }).getOptions();
  const positionals = positionalsOf(command);
  const flags = new Set([...options.boolean, ...options.count]);
  const valued = [...new Set([...options.string, ...options.number, ...options.array])].filter((key) => !flags.has(key) && !positionals.has(key));
  if (valued.length > 0) yargs.requiresArg(valued);
  const end = argv.indexOf('--');
  const own = end === -1 ? argv : argv.slice(0, end);
  const emptyRefused = [...options.number.map((key) => [key, 'give a number'] as const), ...(valued.includes('queue') ? [['queue', 'name the queue directory'] as const] : [])];
  for (const [key, what] of emptyRefused) {
    for (const name of spellings(key, options)) {
      const at = own.findIndex((word, i) => word === `${name}=` || (word === name && own[i + 1] === ''));
      if (at !== -1) throw new FsjobError('USAGE', `--${key} was given an empty value; ${what}, or leave the option out for its default`);
    }
  }
  return yargs;
}
