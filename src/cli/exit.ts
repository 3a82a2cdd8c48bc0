/**
 * Exit statuses of the `fsjob` command, the one place that maps an
 * FsjobError code to one, and the line a refusal prints under --json.
 *
 * | status | meaning |
 * | --- | --- |
 * | 0 | success; `validate`: no finding of severity error (with --strict: no warning either) |
 * | 1 | failure: `validate` found errors, or an operation was refused or failed (the message says why) |
 * | 2 | usage: unknown command or option, missing argument, invalid request, unknown record type, a file whose type the name does not tell; `validate`: a queue it cannot audit (not a queue, an unsafe root) |
 * | 3 | `enqueue` refused the job because its dedupe key is held (DEDUPE-1) |
 * | 4 | no such job (or record) in the queue |
 * | 75 | a bounded wait ran out: `wait --timeout` elapsed before the job finished (EX_TEMPFAIL) |
 *
 * `fsjob wait` exits with the job's own `exit_code` (EXEC-10) when the job
 * has finished: the command's status, 124 timed out or expired, 125 lost,
 * 126 rejected, 130 cancelled, 137 force-stopped. Those overlap the statuses
 * above; `wait --json` prints the receipt when the difference matters.
 */
import type { FsjobErrorCode } from '../base/errors.ts';

export const EXIT = {
  OK: 0,
  FAILURE: 1,
  USAGE: 2,
  DEDUPE_HELD: 3,
  NOT_FOUND: 4,
  TIMEOUT: 75,
} as const;

export type ExitStatus = (typeof EXIT)[keyof typeof EXIT];

// A Record over every code, so that a new error code cannot be added without choosing its status.
const STATUS_OF: Record<FsjobErrorCode, ExitStatus> = {
  USAGE: EXIT.USAGE,
  DEDUPE_HELD: EXIT.DEDUPE_HELD,
  NOT_FOUND: EXIT.NOT_FOUND,
  TIMEOUT: EXIT.TIMEOUT,
  NOT_A_QUEUE: EXIT.FAILURE,
  UNSAFE_QUEUE: EXIT.FAILURE,
  SYMLINK_REFUSED: EXIT.FAILURE,
  NOT_REGULAR: EXIT.FAILURE,
  TOO_LARGE: EXIT.FAILURE,
  UNSAFE_MODE: EXIT.FAILURE,
  FOREIGN_OWNER: EXIT.FAILURE,
  INVALID_ID: EXIT.FAILURE,
  INVALID_RECORD: EXIT.FAILURE,
  UNSUPPORTED_VERSION: EXIT.FAILURE,
  EXISTS: EXIT.FAILURE,
  FINISHED: EXIT.FAILURE,
  NOT_HELD: EXIT.FAILURE,
  SUPERSEDED: EXIT.FAILURE,
  UNPROVEN: EXIT.FAILURE,
  IO: EXIT.FAILURE,
};

export function exitStatusOf(code: FsjobErrorCode): ExitStatus {
  return STATUS_OF[code];
}

/** A refusal under --json (schemas/output/error.schema.json): one line for stdout, the error's JSON form (FsjobError.toJSON) with the exit status it ends with. */
export function errorJsonLine(error: Readonly<Record<string, unknown>>, exitStatus: number): string {
  return `${JSON.stringify({ error: { ...error, exit_status: exitStatus } })}\n`;
}
