/**
 * Entry point of the `fsjob` command. It parses arguments with yargs, runs
 * one command module and maps what comes back to an exit status (exit.ts).
 * Commands hold no logic of their own: they call library functions.
 */
import yargs from 'yargs';
import { FsjobError, errnoOf, isFsjobError } from '../core/errors.ts';
import { fsjobVersion } from '../validator/report.ts';
import type { CliIo, FsjobCommand } from './command.ts';
import { cancelCommand } from './commands/cancel.ts';
import { conformanceCommand } from './commands/conformance.ts';
import { demoCommand } from './commands/demo.ts';
import { enqueueCommand } from './commands/enqueue.ts';
import { gcCommand } from './commands/gc.ts';
import { initCommand } from './commands/init.ts';
import { logsCommand } from './commands/logs.ts';
import { statusCommand } from './commands/status.ts';
import { validateCommand } from './commands/validate.ts';
import { waitCommand } from './commands/wait.ts';
import { workCommand } from './commands/work.ts';
import { recoverCommand } from './commands/recover.ts';
import { EXIT, exitStatusOf } from './exit.ts';

/** Every subcommand, one per line. */
const COMMANDS: readonly FsjobCommand[] = [
  demoCommand,
  initCommand,
  enqueueCommand,
  statusCommand,
  waitCommand,
  cancelCommand,
  logsCommand,
  gcCommand,
  workCommand,
  recoverCommand,
  conformanceCommand,
  validateCommand,
];

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
  for (const command of COMMANDS) {
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
