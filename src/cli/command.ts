/**
 * The shape of one `fsjob` subcommand. Each is declared in
 * src/cli/commands/<name>.ts (the suite's in conformance/runner/command.ts):
 * its arguments and help, and a `run` that loads the module doing the work
 * (<name>-run.ts, which calls library functions) only when the command
 * runs, so that its --help loads no queue code. main.ts names it and lists
 * it in `fsjob --help`, loads it when it runs or its help is asked for, and
 * turns the status `run` returns into the process exit status.
 */
import type { Argv } from 'yargs';

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Raw bytes to standard output (a job's output need not be UTF-8); resolves once written. */
  stdoutBytes?: (bytes: Uint8Array) => Promise<void>;
  /** True once standard output's reader went away (EPIPE): a command may stop producing output. */
  stdoutClosed?: () => boolean;
  /** True when standard error is a terminal: where progress lines may show (progress.ts). */
  stderrIsTerminal?: () => boolean;
  /** True when standard output is a terminal (a progress line on stderr is cleared before output there). */
  stdoutIsTerminal?: () => boolean;
}

export interface FsjobCommand {
  /** Declares the command's positionals and options (its name and line of help are main.ts's). */
  builder: (yargs: Argv) => Argv;
  /** The command is about the spec itself (validate, conformance): its messages keep clause ids without --verbose. */
  citesClauses?: boolean;
  /**
   * The arguments (yargs keys) whose values may hold bytes that are not
   * UTF-8, which the command carries exactly (SPEC-3, command-line.ts); main
   * refuses such bytes in every other argument, naming it. @default none
   */
  bytes?: readonly string[];
  /** Runs the command with yargs' parsed arguments (loading its code: <name>-run.ts); resolves to the exit status. */
  run: (args: Record<string, unknown>, io: CliIo) => Promise<number>;
}
