/**
 * Entry point of the `fsjob` command. It parses arguments with yargs, runs
 * one command module and maps what comes back to an exit status (exit.ts).
 * Commands hold no logic of their own: they call library functions.
 */
import yargs from 'yargs';
import { FsjobError, isFsjobError } from '../base/errors.ts';
import { descriptorFailure } from '../base/descriptors.ts';
import { fsjobVersion } from '../base/version.ts';
import type { CliIo, FsjobCommand } from './command.ts';
import { EXIT, exitStatusOf } from './exit.ts';
import { processIo } from './io.ts';
import { plainIo, withoutClauseIds } from './messages.ts';
import { requireText } from './command-line.ts';
export { commandLine } from './command-line.ts';

/**
 * Every subcommand, one per line, loaded on demand: a command's module pulls in
 * the producer, the consumer or the validator, and loading all of them costs
 * every `fsjob` start most of a second of CPU. A named command loads its own
 * module only; `fsjob --help` and unknown names load them all.
 */
const COMMANDS: Readonly<Record<string, () => Promise<FsjobCommand>>> = {
  demo: async () => (await import('./commands/demo.ts')).demoCommand,
  init: async () => (await import('./commands/init.ts')).initCommand,
  enqueue: async () => (await import('./commands/enqueue.ts')).enqueueCommand,
  status: async () => (await import('./commands/status.ts')).statusCommand,
  wait: async () => (await import('./commands/wait.ts')).waitCommand,
  cancel: async () => (await import('./commands/cancel.ts')).cancelCommand,
  release: async () => (await import('./commands/release.ts')).releaseCommand,
  retry: async () => (await import('./commands/retry.ts')).retryCommand,
  logs: async () => (await import('./commands/logs.ts')).logsCommand,
  gc: async () => (await import('./commands/gc.ts')).gcCommand,
  pause: async () => (await import('./commands/pause.ts')).pauseCommand,
  resume: async () => (await import('./commands/pause.ts')).resumeCommand,
  work: async () => (await import('./commands/work.ts')).workCommand,
  recover: async () => (await import('./commands/recover.ts')).recoverCommand,
  conformance: async () => (await import('./commands/conformance.ts')).conformanceCommand,
  validate: async () => (await import('./commands/validate.ts')).validateCommand,
};

/** Every command name. */
export const COMMAND_NAMES: readonly string[] = Object.keys(COMMANDS);

/** The command modules argv needs: the one it names, else all of them (for help and suggestions). */
export async function commandsFor(argv: readonly string[]): Promise<FsjobCommand[]> {
  const first = argv.find((arg) => !arg.startsWith('-'));
  const named = first !== undefined && Object.hasOwn(COMMANDS, first) ? [first] : Object.keys(COMMANDS);
  return Promise.all(named.map((name) => (COMMANDS[name] as () => Promise<FsjobCommand>)()));
}

/** Options whose value may be "-" (standard input). */
const DASH_VALUED = new Set(['--stdin', '--batch', '--request']);

/**
 * yargs drops a lone "-" given as an option's value (`--batch -`), so it is
 * joined to its option (`--batch=-`) first. Arguments after "--" belong to
 * the job's command and are left as they are.
 */
export function joinDashValues(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') return [...out, ...argv.slice(i)];
    if (DASH_VALUED.has(arg) && argv[i + 1] === '-') {
      out.push(`${arg}=-`);
      i += 1;
    } else out.push(arg);
  }
  return out;
}

/** Whether argv asks for JSON (before any "--": the job's own arguments are not ours). */
function wantsJson(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).some((arg) => arg === '--json' || arg === '--json=true');
}

function wantsVerbose(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).some((arg) => arg === '--verbose' || arg === '-v');
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

/** Runs `fsjob <argv>` and resolves to the process exit status; never calls process.exit. */
export async function main(argv: string[], io: CliIo = processIo()): Promise<number> {
  let status: number = EXIT.OK;
  const json = wantsJson(argv);
  const verbose = wantsVerbose(argv);
  let citesClauses = false;
  const cli = yargs(joinDashValues(argv))
    .scriptName('fsjob')
    .usage('$0 <command> [options]\n\nfsjob hands durable jobs from one program to another through a directory (the protocol: spec/README.md).')
    .version(fsjobVersion())
    .help()
    .alias('help', 'h')
    .option('verbose', { alias: 'v', describe: 'Cite the spec clause behind each message (e.g. EXEC-5)', type: 'boolean', global: true })
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
    .exitProcess(false)
    .wrap(null)
    .fail((message, error) => {
      // yargs calls this for usage errors (message) and for errors thrown by handlers (error).
      if (error !== undefined && error !== null) throw error;
      throw new FsjobError('USAGE', message);
    });
  try {
    for (const command of await commandsFor(argv)) {
      cli.command(command.command, command.describe, command.builder, async (args) => {
        citesClauses = command.citesClauses === true;
        refuseBytes(args, command.bytes ?? []);
        status = await command.run(args as Record<string, unknown>, verbose || citesClauses ? io : plainIo(io));
      });
    }
    await cli.parseAsync();
    return status;
  } catch (error) {
    // The reader of standard output went away (fsjob logs ID | head): what it
    // wanted it has; stopping there is not a failure, and says nothing.
    if (io.stdoutClosed?.() === true && isFsjobError(error, 'IO')) return status;
    // Descriptors that ran out where nothing expected it (a command's module loaded late, an open
    // before the command's own handling): the one clear line, never a loader's stack trace.
    const known = isFsjobError(error) ? error : descriptorFailure(error);
    const exit = known === undefined ? EXIT.FAILURE : exitStatusOf(known.code);
    if (json) {
      // Under --json the failure is data too: one object on stdout (schemas/output/error.schema.json).
      const body = known === undefined ? { code: 'INTERNAL', message: error instanceof Error ? error.message : String(error) } : known.toJSON();
      io.stdout(`${JSON.stringify({ error: { ...body, exit_status: exit } })}\n`);
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
