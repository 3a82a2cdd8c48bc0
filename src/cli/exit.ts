/**
 * Exit statuses of the `fsjob` command, and the one place that maps an
 * FsjobError code to one.
 *
 * | status | meaning |
 * | --- | --- |
 * | 0 | success; `validate`: no finding of severity error (with --strict: no warning either) |
 * | 1 | failure: `validate` found errors, or an operation was refused or failed (the message says why) |
 * | 2 | usage: unknown command or option, missing argument, unknown record type, a file whose type the name does not tell; `validate`: a queue it cannot audit (not a queue, an unsafe root) |
 * | 3 | `enqueue` refused the job because its dedupe key is held (DEDUPE-1) |
 */
import type { FsjobErrorCode } from '../core/errors.ts';

export const EXIT = {
  OK: 0,
  FAILURE: 1,
  USAGE: 2,
  DEDUPE_HELD: 3,
} as const;

export type ExitStatus = (typeof EXIT)[keyof typeof EXIT];

// A Record over every code, so that a new error code cannot be added without choosing its status.
const STATUS_OF: Record<FsjobErrorCode, ExitStatus> = {
  USAGE: EXIT.USAGE,
  DEDUPE_HELD: EXIT.DEDUPE_HELD,
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
  NOT_FOUND: EXIT.FAILURE,
  SUPERSEDED: EXIT.FAILURE,
  UNPROVEN: EXIT.FAILURE,
  TIMEOUT: EXIT.FAILURE,
  IO: EXIT.FAILURE,
};

export function exitStatusOf(code: FsjobErrorCode): ExitStatus {
  return STATUS_OF[code];
}
