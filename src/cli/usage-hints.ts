/**
 * yargs' usage errors, said in fsjob's terms (issue 27 point 5). yargs says
 * "Unknown arguments: l, a" for `fsjob enqueue ls -la` (it read the job's
 * options as fsjob's) and "Unknown argument: max-attempt" for a misspelt
 * option; here the first becomes "put the command after --" and the second
 * gets "did you mean --max-attempts?"; an option given no value (yargs:
 * "Not enough arguments following: priority") and an unknown command (yargs:
 * "Did you mean logs?" alone) are named as such. main.ts pins yargs to English, so
 * its message names the unknown options in a known form; every other
 * message passes unchanged.
 */
import { commandIndex } from './command-name.ts';

/** What yargs knows of the current command's options (its getOptions()). */
export interface KnownOptions {
  key: Readonly<Record<string, unknown>>;
  alias: Readonly<Record<string, readonly string[]>>;
  string: readonly string[];
  number: readonly string[];
  array: readonly string[];
}

/** Commands whose positionals are a job's command (CMD [ARG...]). */
const TAKES_A_COMMAND = new Set(['enqueue']);

const UNKNOWN = /^Unknown arguments?: (.+)$/;
const NO_VALUE = /^Not enough arguments following: (.+)$/;
const SUGGESTED = /^Did you mean (\S+)\?$/;
const FEW = /^Not enough non-option arguments: got (\d+), need at least \d+$/;

function dashed(name: string): string {
  return name.length === 1 ? `-${name}` : `--${name}`;
}

/** Edit distance (insertions, deletions, substitutions), for suggestions. */
function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next[j] = Math.min((row[j] as number) + 1, (next[j - 1] as number) + 1, (row[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length] as number;
}

/** The known option a misspelt name most likely meant: the name starts it, or it is within an edit (two for names over three letters). */
function closest(name: string, known: readonly string[]): string | undefined {
  if (name.length < 2) return undefined;
  const limit = name.length <= 3 ? 1 : 2;
  let best: { option: string; cost: number } | undefined;
  for (const option of known) {
    if (option.length < 2) continue;
    const cost = option.startsWith(name) && name.length >= 3 ? 1 : distance(name, option);
    if (cost <= limit && (best === undefined || cost < best.cost)) best = { option, cost };
  }
  return best?.option;
}

/**
 * The words of argv that were meant as the job's command: from the first
 * word after the subcommand that is neither an option nor an option's
 * value, leaving out fsjob's own long options (and their values) among them.
 */
function jobCommandIn(argv: readonly string[], subcommand: number, options: KnownOptions): string[] {
  const takesValue = new Set([...options.string, ...options.number, ...options.array]);
  for (const [name, aliases] of Object.entries(options.alias)) if (takesValue.has(name)) for (const alias of aliases) takesValue.add(alias);
  const job: string[] = [];
  for (let i = subcommand + 1; i < argv.length; i++) {
    const word = argv[i] as string;
    const name = word.startsWith('-') && word !== '-' ? (word.replace(/^--?/, '').split('=')[0] as string) : undefined;
    const own = name !== undefined && (job.length === 0 || (word.startsWith('--') && Object.hasOwn(options.key, name)));
    if (own) {
      if (!word.includes('=') && takesValue.has(name)) i += 1;
    } else job.push(word);
  }
  return job;
}

/** Whether argv (before any "--") gives `name` as an option: --name, --name=V, --no-name, or a letter of -abc. */
function givenAsOption(name: string, argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).some((word) => {
    if (word.startsWith('--')) return [name, `no-${name}`].includes(word.slice(2).split('=')[0] as string);
    return name.length === 1 && /^-[A-Za-z]+$/.test(word) && word.includes(name);
  });
}

/** `message` (a usage error of yargs) with what to do about it, for `fsjob <argv>`. */
export function explainUsage(message: string, argv: readonly string[], options: KnownOptions | undefined): string {
  // requiresArg (option-values.ts): "Not enough arguments following: priority".
  const bare = NO_VALUE.exec(message);
  if (bare !== null) return `${dashed(bare[1] as string)} needs a value (a value that starts with "-" goes as ${dashed(bare[1] as string)}=VALUE)`;
  // recommendCommands: "Did you mean logs?" alone, for `fsjob bogus`; the word it could not run is named.
  const suggested = SUGGESTED.exec(message);
  const at = commandIndex(argv);
  if (suggested !== null && at !== -1) return `unknown command ${JSON.stringify(argv[at])}; did you mean fsjob ${suggested[1] as string}?`;
  // demandCommand of a command's positionals: "Not enough non-option arguments: got 0, need at least 1".
  const few = FEW.exec(message);
  if (few !== null && at !== -1) return `fsjob ${argv[at] as string} needs ${few[1] === '0' ? 'an argument' : 'more arguments'}: fsjob ${argv[at] as string} --help shows what it takes`;
  const match = UNKNOWN.exec(message);
  if (match === null || options === undefined) return message;
  const given = (match[1] as string).split(', ');
  // yargs lists a camel-case twin (maxAttempt) beside each unknown kebab-case name, and extra positionals too.
  const unknown = given.filter((name) => givenAsOption(name, argv));
  const command = at === -1 ? undefined : argv[at];
  if (unknown.length === 0 && command !== undefined) return `fsjob ${command} takes no more arguments than fsjob ${command} --help shows: ${given.map((word) => JSON.stringify(word)).join(', ')} left over`;
  if (unknown.length === 0 || unknown.length < given.filter((name) => !/[A-Z]/.test(name)).length) return message;
  const listed = unknown.map(dashed).join(', ');
  if (command !== undefined && TAKES_A_COMMAND.has(command) && !argv.includes('--')) {
    const job = jobCommandIn(argv, at, options);
    if (job.length > 0) {
      return `${listed} ${unknown.length === 1 ? 'is not an option' : 'are not options'} of fsjob ${command}; if ${unknown.length === 1 ? 'it belongs' : 'they belong'} to the job's command, put the command after --: fsjob ${command} [options] -- ${job.join(' ')}`;
    }
  }
  const known = Object.keys(options.key);
  const hints = unknown.flatMap((name) => {
    const meant = closest(name, known);
    return meant === undefined ? [] : [unknown.length === 1 ? `did you mean ${dashed(meant)}?` : `${dashed(name)}: did you mean ${dashed(meant)}?`];
  });
  const what = unknown.length === 1 ? `unknown option ${listed}` : `unknown options ${listed}`;
  return hints.length === 0 ? what : `${what}; ${hints.join('; ')}`;
}
