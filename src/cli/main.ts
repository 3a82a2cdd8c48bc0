/**
 * Entry point of the `fsjob` command. It parses arguments with yargs, runs
 * one command module and maps what comes back to an exit status (exit.ts).
 * Commands hold no logic of their own: they call library functions.
 *
 * A start costs what its command needs, no more (issue 29 point 2). The
 * list below is what `fsjob --help` shows; each command declares its
 * options and help in commands/<name>.ts (together one module,
 * commands/declarations.ts), which loads when a command runs or its own
 * help is asked for (yargs awaits a builder that returns a promise), and
 * does its work in commands/<name>-run.ts, which loads only when it runs:
 * `fsjob X --help` loads no queue code. yargs renders
 * a command's help before running its handler, in case the handler asks for
 * it; nothing here does, so that render is switched off (the layout
 * modules it needs cost more than the rest of yargs). The conformance
 * command is the suite's (conformance/runner/command.ts): the caller hands
 * its loader in (bin/fsjob.mts does), so nothing in src/ imports the suite.
 */
import yargs from 'yargs';
import { FsjobError, isFsjobError } from '../base/errors.ts';
import { descriptorFailure } from '../base/descriptors.ts';
import { fsjobVersion } from '../base/version.ts';
import type { CliIo, FsjobCommand } from './command.ts';
import { errorJsonLine, EXIT, exitStatusOf } from './exit.ts';
import { preloadHelpLayout } from './help-layout.ts';
import { processIo } from './io.ts';
import { plainIo, withoutClauseIds } from './messages.ts';
import { explainUsage, type KnownOptions } from './usage-hints.ts';
import { requireText, STDIN_POSITIONAL } from './command-line.ts';
import { commandName, DASH_VALUED } from './command-name.ts';
import { requireOptionValues } from './option-values.ts';
export { commandLine } from './command-line.ts';

/** One subcommand: its yargs command string, its line in `fsjob --help`, and its module. */
interface CommandEntry {
  command: string;
  describe: string;
  load: () => Promise<FsjobCommand>;
}

/**
 * The declarations of every command (commands/declarations.ts): one module,
 * so that a command's help loads one file and no command's code.
 */
const declared = (): Promise<typeof import('./commands/declarations.ts')> => import('./commands/declarations.ts');

/** Every subcommand, in the order `fsjob --help` lists them. */
const COMMANDS: Readonly<Record<string, CommandEntry>> = {
  demo: {
    command: 'demo',
    describe: 'Watch jobs flow through a fresh queue: enqueue, run, time out, cancel, retry, status',
    load: async () => (await declared()).demoCommand,
  },
  init: {
    command: 'init',
    describe: 'Create a queue directory (or check an existing one); safe to run again',
    load: async () => (await declared()).initCommand,
  },
  enqueue: {
    command: 'enqueue [cmd..]',
    describe: 'Publish a job: print its id once it is durable (exit 3 when its dedupe key is held)',
    load: async () => (await declared()).enqueueCommand,
  },
  status: {
    command: 'status [id]',
    describe: 'Show the jobs of a queue and its workers, or everything about one job',
    load: async () => (await declared()).statusCommand,
  },
  wait: {
    command: 'wait [ids..]',
    describe: "Wait until jobs finish (ids, - for ids on stdin, --all, --lane, --label); exit 0 only when all succeeded",
    load: async () => (await declared()).waitCommand,
  },
  cancel: {
    command: 'cancel <ids..>',
    describe: 'Cancel jobs: at once if nobody claimed one, else its owner stops it',
    load: async () => (await declared()).cancelCommand,
  },
  release: {
    command: 'release [ids..]',
    describe: 'Release held jobs (enqueued with --hold) so that they run: by id, or every held job of a lane or with a label',
    load: async () => (await declared()).releaseCommand,
  },
  retry: {
    command: 'retry <id>',
    describe: 'Enqueue a finished job again as a new job (same command, stdin and options), labelled retry-of=ID; prints the new id',
    load: async () => (await declared()).retryCommand,
  },
  logs: {
    command: 'logs <ids..>',
    describe: "Print a job's captured standard output (or error)",
    load: async () => (await declared()).logsCommand,
  },
  gc: {
    command: 'gc [ids..]',
    describe: 'Remove finished jobs (never an unfinished one), stale ready entries, old holds and stale temporaries',
    load: async () => (await declared()).gcCommand,
  },
  pause: {
    command: 'pause',
    describe: 'Pause the queue: no consumer claims a job until fsjob resume; running jobs go on',
    load: async () => (await declared()).pauseCommand,
  },
  resume: {
    command: 'resume',
    describe: 'Resume a paused queue: consumers claim again at their next look',
    load: async () => (await declared()).resumeCommand,
  },
  work: {
    command: 'work',
    describe: 'Claim and run jobs: until stopped (SIGTERM, SIGINT or SIGHUP), until the queue is drained (--drain), or one job (--once)',
    load: async () => (await declared()).workCommand,
  },
  recover: {
    command: 'recover',
    describe:
      'Break the claims of dead owners whose commands are proven stopped, rebuild the ready index, remove stale temporary files and registrations (exit 1 when something could not be proven or the filesystem refused a write)',
    load: async () => (await declared()).recoverCommand,
  },
  conformance: {
    command: 'conformance',
    describe: 'Test an implementation of the protocol (any language) through a manifest, with crash injection; exit 0 when every MUST case passes',
    load: () => Promise.reject(new FsjobError('USAGE', 'the conformance suite is not part of this fsjob (its command is conformance/runner/command.ts, which bin/fsjob.mts hands to main)')),
  },
  validate: {
    command: 'validate [targets..]',
    describe: 'Audit queues and check record files against the spec; never modifies anything (exit 0 when clean, 1 on errors, 2 when it cannot run)',
    load: async () => (await declared()).validateCommand,
  },
};

/** Every command name. */
export const COMMAND_NAMES: readonly string[] = Object.keys(COMMANDS);

/** What the caller of main adds: the suite's command, which src/ does not import; the commands known. */
export interface MainOptions {
  /** Loads the `fsjob conformance` command (conformance/runner/command.ts). */
  conformance?: () => Promise<FsjobCommand>;
  /**
   * Only these commands are known (default: all). The enqueue start-up
   * script (start-script.ts) runs command lines whose command is `enqueue` (command-name.ts)
   * and that ask for no help, which no other command's registration changes,
   * and registering 16 commands costs yargs a parse of each.
   */
  commands?: readonly string[];
}

/** Commands whose positionals may be "-" (ids on standard input: fsjob wait -). */
const DASH_POSITIONAL = new Set(['wait']);

/**
 * yargs drops a lone "-" given as an option's value (`--batch -`), so it is
 * joined to its option (`--batch=-`) first; it drops one given as a
 * positional too, so for the commands that take it (`fsjob wait -`) it
 * becomes STDIN_POSITIONAL. Arguments after "--" belong to the job's command
 * and are left as they are.
 */
export function joinDashValues(argv: readonly string[]): string[] {
  const out: string[] = [];
  const dashPositional = DASH_POSITIONAL.has(commandName(argv) ?? '');
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') return [...out, ...argv.slice(i)];
    if (DASH_VALUED.has(arg) && argv[i + 1] === '-') {
      out.push(`${arg}=-`);
      i += 1;
    } else out.push(dashPositional && arg === '-' ? STDIN_POSITIONAL : arg);
  }
  return out;
}

/** The arguments before any "--": the job's own arguments are not ours. */
function ownArgs(argv: readonly string[]): readonly string[] {
  const end = argv.indexOf('--');
  return end === -1 ? argv : argv.slice(0, end);
}

/** Whether argv asks for JSON. */
function wantsJson(argv: readonly string[]): boolean {
  return ownArgs(argv).some((arg) => arg === '--json' || arg === '--json=true');
}

function wantsVerbose(argv: readonly string[]): boolean {
  return ownArgs(argv).some((arg) => arg === '--verbose' || arg === '-v');
}

/** Whether argv asks for help, the one time yargs lays text out in columns; yargs takes the word help (fsjob help, fsjob status help) as asking too. */
function wantsHelp(argv: readonly string[]): boolean {
  return ownArgs(argv).some((arg) => arg === '--help' || arg === '-h' || arg.startsWith('--help=') || arg === 'help');
}

/**
 * yargs renders the help of a command before it runs the command's handler
 * (so that a handler could show it), which costs every command the layout
 * of its whole help. No handler here shows help, so the cache is never
 * filled; shown help is rendered when asked for, as before. The method is
 * yargs' own (getInternalMethods is public on the instance, its usage
 * object the same one for the instance's life); should a yargs release
 * drop it, help still works and only the cost comes back
 * (test/cli/start-up.test.ts notices).
 */
function skipHelpCache(cli: unknown): void {
  const internal = (cli as { getInternalMethods?: () => { getUsageInstance?: () => { cacheHelpMessage?: unknown } } }).getInternalMethods?.();
  const usage = internal?.getUsageInstance?.();
  if (usage !== undefined && typeof usage.cacheHelpMessage === 'function') usage.cacheHelpMessage = () => undefined;
}

/**
 * SPEC-3: an argument that holds bytes that are not UTF-8 (command-line.ts
 * keeps them) is refused, naming it, unless the command carries such bytes
 * exactly (`bytes`): a path or a key that node would turn into U+FFFD names
 * something else.
 */
function refuseBytes(args: Record<string, unknown>, allowed: readonly string[]): void {
  for (const [key, value] of Object.entries(args)) {
    if (allowed.includes(key) || key === '$0') continue;
    const name = key.length === 1 ? `-${key}` : `--${key}`;
    for (const item of Array.isArray(value) ? value : [value]) if (typeof item === 'string') requireText(item, key === '_' ? `the argument ${JSON.stringify(item)}` : name);
  }
}

/**
 * A command's own parse throws its parser's errors past fail() as a YError
 * (an option given no value: option-values.ts); they are usage errors.
 */
function parserRefusal(error: unknown, argv: readonly string[]): FsjobError | undefined {
  if (!(error instanceof Error) || error.name !== 'YError') return undefined;
  return new FsjobError('USAGE', explainUsage(error.message, argv, undefined));
}

/** Runs `fsjob <argv>` and resolves to the process exit status; never calls process.exit. */
export async function main(argv: string[], io: CliIo = processIo(), options: MainOptions = {}): Promise<number> {
  let status: number = EXIT.OK;
  const json = wantsJson(argv);
  const verbose = wantsVerbose(argv);
  let citesClauses = false;
  if (wantsHelp(argv)) await preloadHelpLayout();
  const cli = yargs(joinDashValues(argv))
    .scriptName('fsjob')
    .usage('$0 <command> [options]\n\nfsjob hands durable jobs from one program to another through a directory (the protocol: spec/README.md).')
    .version(fsjobVersion())
    .help()
    .alias('help', 'h')
    .option('verbose', { alias: 'v', describe: 'Cite the spec clause behind each message (e.g. EXEC-5); gc and recover list every job they touched', type: 'boolean', global: true })
    .option('quiet', { describe: 'No progress line: long work (validate, recover, gc, enqueue --batch, status --exact, conformance) shows one on a terminal after a second', type: 'boolean', global: true })
    .strict()
    .recommendCommands()
    .demandCommand(1, 'name a command')
    .example('$0 init --queue q && $0 enqueue --queue q -- make test', 'create a queue and publish a job; prints its id')
    .example('$0 status --queue q', 'the jobs of queue q and its workers')
    .example('$0 validate q/jobs/*/*.json', 'check every record of every job in queue q')
    .example('$0 validate --help', 'what validate checks, with more examples')
    .epilog(
      'Every command takes --queue DIR or -q DIR (default: $FSJOB_QUEUE, else ~/.local/state/fsjob/default), and --json for machine-readable output (schemas/output/). ' +
        "Exit status: 0 success, 1 failure or findings, 2 usage error or invalid request, 3 dedupe key held, 4 no such job, 75 a wait timed out; fsjob wait exits with the job's own exit code. " +
        'With --verbose, messages cite the spec clause they enforce (REC-1, EXEC-5, ...; spec/README.md names the file of each family).',
    )
    // Keep "007" a string: positionals are file names, ids and command arguments.
    .parserConfiguration({ 'parse-positional-numbers': false })
    // fsjob speaks English; usage-hints.ts reads yargs' messages in it.
    .locale('en')
    .exitProcess(false)
    .wrap(null)
    .fail((message, error) => {
      // yargs calls this for usage errors (message) and for errors thrown by handlers (error).
      if (error !== undefined && error !== null) throw error;
      throw new FsjobError('USAGE', explainUsage(message, argv, (cli as unknown as { getOptions(): KnownOptions }).getOptions()));
    });
  skipHelpCache(cli);
  for (const [name, entry] of Object.entries(COMMANDS)) {
    if (options.commands !== undefined && !options.commands.includes(name)) continue;
    const load = name === 'conformance' && options.conformance !== undefined ? options.conformance : entry.load;
    let loaded: Promise<FsjobCommand> | undefined;
    const command = (): Promise<FsjobCommand> => (loaded ??= load());
    cli.command(
      entry.command,
      entry.describe,
      async (inner) => requireOptionValues((await command()).builder(inner), entry.command, argv),
      async (args) => {
        const { run, citesClauses: cites, bytes } = await command();
        citesClauses = cites === true;
        refuseBytes(args, bytes ?? []);
        status = await run(args as Record<string, unknown>, verbose || citesClauses ? io : plainIo(io));
      },
    );
  }
  try {
    // A command's module loads in here (its builder and its handler): a load that fails is handled below.
    await cli.parseAsync();
    return status;
  } catch (error) {
    // The reader of standard output went away (fsjob logs ID | head): what it
    // wanted it has; stopping there is not a failure, and says nothing.
    if (io.stdoutClosed?.() === true && isFsjobError(error, 'IO')) return status;
    // Descriptors that ran out where nothing expected it (a command's module loaded late, an open
    // before the command's own handling): the one clear line, never a loader's stack trace.
    const known = isFsjobError(error) ? error : (parserRefusal(error, argv) ?? descriptorFailure(error));
    const exit = known === undefined ? EXIT.FAILURE : exitStatusOf(known.code);
    if (json) {
      // Under --json the failure is data too: one object on stdout (schemas/output/error.schema.json).
      const body = known === undefined ? { code: 'INTERNAL', message: error instanceof Error ? error.message : String(error) } : known.toJSON();
      io.stdout(errorJsonLine(body, exit));
    }
    if (known !== undefined) {
      const hint = known.code === 'USAGE' ? ' (see fsjob --help)' : '';
      const text = verbose || citesClauses ? known.message : withoutClauseIds(known.message);
      io.stderr(`fsjob: ${text}${hint}\n`);
      return exit;
    }
    io.stderr(`fsjob: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    return EXIT.FAILURE;
  }
}
