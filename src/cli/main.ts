/**
 * Entry point of the `fsjob` command. It parses arguments with yargs, runs
 * one command module and maps what comes back to an exit status (exit.ts).
 * Commands hold no logic of their own: they call library functions.
 */
import yargs from 'yargs';
import { FsjobError, isFsjobError } from '../core/errors.ts';
import { fsjobVersion } from '../validator/report.ts';
import type { CliIo, FsjobCommand } from './command.ts';
import { validateCommand } from './commands/validate.ts';
import { workCommand } from './commands/work.ts';
import { recoverCommand } from './commands/recover.ts';
import { EXIT, exitStatusOf } from './exit.ts';

/** Every subcommand, one per line. */
const COMMANDS: readonly FsjobCommand[] = [
  validateCommand,
  workCommand,
  recoverCommand,
];

const processIo: CliIo = {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
};

/** Runs `fsjob <argv>` and resolves to the process exit status; never calls process.exit. */
export async function main(argv: string[], io: CliIo = processIo): Promise<number> {
  let status: number = EXIT.OK;
  const cli = yargs(argv)
    .scriptName('fsjob')
    .usage('$0 <command> [options]\n\nfsjob hands durable jobs from one program to another through a directory (spec/fsjob-v1.md).')
    .version(fsjobVersion())
    .help()
    .alias('help', 'h')
    .strict()
    .recommendCommands()
    .demandCommand(1, 'name a command')
    .example('$0 validate q/jobs/*/*.json', 'check every record of every job in queue q')
    .example('$0 validate --help', 'what validate checks, with more examples')
    .epilog('Exit status: 0 success, 1 failure or findings, 2 usage error, 3 dedupe key held. Clause ids such as REC-1 refer to spec/fsjob-v1.md.')
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
