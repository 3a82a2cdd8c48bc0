/**
 * Entry point of the `fsjob` command. It parses arguments with yargs, runs
 * one command module and maps what comes back to an exit status (exit.ts).
 * Commands hold no logic of their own: they call library functions.
 */
import yargs from 'yargs';
import { FsjobError, errnoOf, isFsjobError } from '../base/errors.ts';
import { fsjobVersion } from '../base/version.ts';
import type { CliIo, FsjobCommand } from './command.ts';
import { EXIT, exitStatusOf } from './exit.ts';

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
  logs: async () => (await import('./commands/logs.ts')).logsCommand,
  gc: async () => (await import('./commands/gc.ts')).gcCommand,
  work: async () => (await import('./commands/work.ts')).workCommand,
  recover: async () => (await import('./commands/recover.ts')).recoverCommand,
  conformance: async () => (await import('./commands/conformance.ts')).conformanceCommand,
  validate: async () => (await import('./commands/validate.ts')).validateCommand,
};

/** Every command name; bin/compiled.js serves only these from its bundle. */
export const COMMAND_NAMES: readonly string[] = Object.keys(COMMANDS);

/** The command modules argv needs: the one it names, else all of them (for help and suggestions). */
export async function commandsFor(argv: readonly string[]): Promise<FsjobCommand[]> {
  const first = argv.find((arg) => !arg.startsWith('-'));
  const named = first !== undefined && Object.hasOwn(COMMANDS, first) ? [first] : Object.keys(COMMANDS);
  return Promise.all(named.map((name) => (COMMANDS[name] as () => Promise<FsjobCommand>)()));
}

const processIo: CliIo = {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
  stdoutBytes: (bytes) =>
    new Promise<void>((resolve, reject) => {
      // The write callback reports a reader that went away (fsjob logs ... | head);
      // without a listener the stream's 'error' event would crash the process.
      if (process.stdout.listenerCount('error') === 0) process.stdout.on('error', () => undefined);
      process.stdout.write(bytes, (error) => {
        if (error === null || error === undefined) resolve();
        else reject(new FsjobError('IO', `standard output was closed (${errnoOf(error) ?? 'EIO'}); stopped writing`, { errno: errnoOf(error) ?? 'EIO' }));
      });
    }),
};

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

/** Runs `fsjob <argv>` and resolves to the process exit status; never calls process.exit. */
export async function main(argv: string[], io: CliIo = processIo): Promise<number> {
  let status: number = EXIT.OK;
  const cli = yargs(joinDashValues(argv))
    .scriptName('fsjob')
    .usage('$0 <command> [options]\n\nfsjob hands durable jobs from one program to another through a directory (spec/fsjob-v1.md).')
    .version(fsjobVersion())
    .help()
    .alias('help', 'h')
    .strict()
    .recommendCommands()
    .demandCommand(1, 'name a command')
    .example('$0 init --queue q && $0 enqueue --queue q -- make test', 'create a queue and publish a job; prints its id')
    .example('$0 status --queue q', 'the jobs of queue q and its workers')
    .example('$0 validate q/jobs/*/*.json', 'check every record of every job in queue q')
    .example('$0 validate --help', 'what validate checks, with more examples')
    .epilog(
      'Every command takes --queue DIR (default: $FSJOB_QUEUE, else ~/.local/state/fsjob/default). ' +
        "Exit status: 0 success, 1 failure or findings, 2 usage error or invalid request, 3 dedupe key held, 4 no such job, 75 a wait timed out; fsjob wait exits with the job's own exit code. " +
        'Clause ids such as REC-1 refer to spec/fsjob-v1.md.',
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
  for (const command of await commandsFor(argv)) {
    cli.command(command.command, command.describe, command.builder, async (args) => {
      status = await command.run(args as Record<string, unknown>, io);
    });
  }
  try {
    await cli.parseAsync();
    return status;
  } catch (error) {
    if (isFsjobError(error)) {
      const hint = error.code === 'USAGE' ? ' (see fsjob --help)' : '';
      io.stderr(`fsjob: ${error.message}${hint}\n`);
      return exitStatusOf(error.code);
    }
    io.stderr(`fsjob: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    return EXIT.FAILURE;
  }
}
