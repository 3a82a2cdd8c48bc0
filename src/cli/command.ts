/**
 * The shape of one `fsjob` subcommand. Each lives in src/cli/commands/ and
 * only declares its arguments and calls library functions; main.ts turns
 * the status `run` returns into the process exit status.
 */
import type { Argv } from 'yargs';

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Raw bytes to standard output (a job's output need not be UTF-8); resolves once written. */
  stdoutBytes?: (bytes: Uint8Array) => Promise<void>;
  /** True once standard output's reader went away (EPIPE): a command may stop producing output. */
  stdoutClosed?: () => boolean;
}

export interface FsjobCommand {
  /** yargs command string, for example "validate <files..>". */
  command: string;
  describe: string;
  builder: (yargs: Argv) => Argv;
  /** The command is about the spec itself (validate, conformance): its messages keep clause ids without --verbose. */
  citesClauses?: boolean;
  /**
   * The arguments (yargs keys) whose values may hold bytes that are not
   * UTF-8, which the command carries exactly (SPEC-3, command-line.ts); main
   * refuses such bytes in every other argument, naming it. @default none
   */
  bytes?: readonly string[];
  /** Runs the command with yargs' parsed arguments; resolves to the exit status. */
  run: (args: Record<string, unknown>, io: CliIo) => Promise<number>;
}
