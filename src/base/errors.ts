/**
 * One error class for everything fsjob refuses or fails at. Callers and tests
 * branch on `code` (a closed set), never on the message; the structured fields
 * say where (path, jobId) and which spec clause was at stake.
 */
/** Every code an FsjobError can have, each with what it means (the set is closed: a new code is a new version). */
export const ERROR_CODES = [
  'USAGE', // a caller passed something that is not a valid request
  'NOT_A_QUEUE', // the directory is not an fsjob queue (no valid fsjob.json)
  'UNSAFE_QUEUE', // queue root is a symlink, foreign-owned, group/other-writable, or inside another queue
  'SYMLINK_REFUSED', // a path inside the queue is a symbolic link
  'NOT_REGULAR', // a FIFO, socket, device or directory where a file belongs
  'TOO_LARGE', // a file is over the bound the spec sets for it
  'UNSAFE_MODE', // a file or directory has wider permissions than the spec allows
  'FOREIGN_OWNER', // a file or directory is owned by another user
  'INVALID_ID', // a job id, generation or file name outside the spec's charset
  'INVALID_RECORD', // malformed JSON, not compact, or fails its schema
  'UNSUPPORTED_VERSION', // a record or queue of another protocol major
  'EXISTS', // an exclusive create lost: the name already exists
  'NOT_FOUND', // no such job or record
  'DEDUPE_HELD', // a non-terminal job already holds the dedupe key
  'FINISHED', // the job already has a receipt: it cannot be cancelled (CANCEL-1)
  'NOT_HELD', // the job was not enqueued held: there is nothing to release (HOLD-1)
  'SUPERSEDED', // this owner's claim is no longer the current one
  'UNPROVEN', // an execution could not be proven stopped; left alone
  'TIMEOUT', // a bounded wait ran out
  'IO', // the filesystem failed (ENOSPC, EACCES, EROFS, EMFILE, ...): see errno
] as const;

/** The code of an FsjobError: one of ERROR_CODES. */
export type FsjobErrorCode = (typeof ERROR_CODES)[number];

/** Where an error happened and why: the structured fields of an FsjobError. */
export interface FsjobErrorFields {
  /** The file or directory at fault. */
  path?: string;
  /** The job at stake. */
  jobId?: string;
  /** The spec clause id this error enforces, e.g. "SEC-2". */
  clause?: string;
  /** The underlying errno code (ENOSPC, EACCES, ...) for code IO. */
  errno?: string;
  /**
   * The member of a request or record that was refused, as a JSON pointer
   * ("/env/FSJOB_X"); for an option a library call refused, the option
   * within its options object ("/pollMs", "/queues/0").
   */
  field?: string;
  /** Every job at stake where there are several, in the order given (a wait on many that timed out: each job still unfinished). */
  jobIds?: readonly string[];
  /** The status (STATUS-1) of the job at stake (jobId) where it decides what to do next (DEDUPE_HELD: the holder's; held waits for a release). */
  jobStatus?: string;
  cause?: unknown;
}

/**
 * Marks an FsjobError of any copy of this module: the command's bundle and
 * the conformance suite it loads from beside itself hold one copy each (and
 * an app may install two fsjob versions), so `instanceof` alone would call
 * one copy's refusal another's internal error.
 */
const BRAND = Symbol.for('fsjob.FsjobError');

/**
 * What every fsjob function throws (or rejects with) when it refuses or
 * fails: branch on `code`, never on `message`.
 *
 *   try { await enqueue(queue, request); }
 *   catch (error) { if (isFsjobError(error, 'DEDUPE_HELD')) console.log('held by', error.jobId); }
 */
export class FsjobError extends Error {
  readonly code: FsjobErrorCode;
  /** The file or directory at fault. */
  readonly path: string | undefined;
  /** The job at stake. */
  readonly jobId: string | undefined;
  /** The spec clause this error enforces, e.g. "SEC-2". */
  readonly clause: string | undefined;
  /** The underlying errno code (ENOSPC, EACCES, ...) for code IO. */
  readonly errno: string | undefined;
  /** The member of a request or record that was refused, as a JSON pointer ("/env/FSJOB_X"), or the option of a call ("/pollMs"). */
  readonly field: string | undefined;
  /** Every job at stake where there are several, in the order given (a wait on many that timed out: each job still unfinished). */
  readonly jobIds: readonly string[] | undefined;
  /** The status (STATUS-1) of the job at stake (jobId) where it decides what to do next (DEDUPE_HELD: the holder's; held waits for a release). */
  readonly jobStatus: string | undefined;

  constructor(code: FsjobErrorCode, message: string, fields: FsjobErrorFields = {}) {
    super(message, fields.cause === undefined ? undefined : { cause: fields.cause });
    this.name = 'FsjobError';
    this.code = code;
    this.path = fields.path;
    this.jobId = fields.jobId;
    this.clause = fields.clause;
    this.errno = fields.errno;
    this.field = fields.field;
    this.jobIds = fields.jobIds === undefined ? undefined : [...fields.jobIds];
    this.jobStatus = fields.jobStatus;
    Object.defineProperty(this, BRAND, { value: true });
  }

  /** The error as data, in the records' snake_case (fsjob --json, schemas/output/error.schema.json). */
  toJSON(): Record<string, unknown> {
    return {
      code: this.code,
      message: this.message,
      ...(this.path === undefined ? {} : { path: this.path }),
      ...(this.jobId === undefined ? {} : { job_id: this.jobId }),
      ...(this.clause === undefined ? {} : { clause: this.clause }),
      ...(this.errno === undefined ? {} : { errno: this.errno }),
      ...(this.field === undefined ? {} : { field: this.field }),
      ...(this.jobIds === undefined ? {} : { job_ids: [...this.jobIds] }),
      ...(this.jobStatus === undefined ? {} : { job_status: this.jobStatus }),
    };
  }
}

/** True when `value` is an FsjobError (of this or another copy of fsjob), and when `code` is given, one with that code. */
export function isFsjobError(value: unknown, code?: FsjobErrorCode): value is FsjobError {
  const branded = value instanceof FsjobError || (typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true);
  return branded && (code === undefined || (value as FsjobError).code === code);
}

/** The errno string of a Node system error, or undefined for anything else. */
export function errnoOf(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = (error as { code: unknown }).code;
    return typeof code === 'string' ? code : undefined;
  }
  return undefined;
}
