/**
 * Findings: what a reader or validator reports about something on disk. A
 * finding is data, never an exception: the record layer returns findings for
 * bad input and `fsjob validate` prints them or writes them as a JSON report
 * (schemas/report.schema.json).
 *
 * The registry below is the closed set of codes. Each code has a default
 * severity, the spec clause it enforces, and what to do about it; the
 * finding's message says what is wrong and ends with that advice. To add a
 * code, add one line to FINDING_CODES.
 */

export type Severity = 'error' | 'warning' | 'info';

export interface FindingSpec {
  readonly severity: Severity;
  /** Clause id of the spec (spec/clauses.json; a test checks that it exists). */
  readonly clause: string;
  /** What to do about it: the second half of every message. */
  readonly fix: string;
}

const spec = (severity: Severity, clause: string, fix: string): FindingSpec => ({ severity, clause, fix });

/** Every finding code a validator reports, with its severity, the clause it cites and what to do about it. */
export const FINDING_CODES = {
  // Reading the file (REC-4 steps 1 and 2).
  RECORD_SYMLINK: spec('error', 'SEC-2', 'remove the link; fsjob never follows one inside a queue'),
  RECORD_NOT_REGULAR: spec('error', 'SEC-3', 'remove it; a record must be a regular file'),
  RECORD_TOO_LARGE: spec('error', 'SEC-4', 'a record is at most RECORD_MAX (1048576) bytes; shrink the payload or the result'),
  RECORD_MODE: spec('error', 'SEC-5', 'if the content is yours, run chmod go-w on it; records are written with mode 0600'),
  RECORD_OWNER: spec('error', 'SEC-6', 'only the queue owner may write records; remove it or run as its owner'),
  // Compact form (REC-1).
  RECORD_EMPTY: spec('error', 'REC-1', 'a record is never empty; a writer must publish complete files only (PUB-2, PUB-3)'),
  RECORD_BAD_UTF8: spec('error', 'REC-1', 'write records in UTF-8'),
  RECORD_BOM: spec('error', 'REC-1', 'remove the byte order mark; records start with "{"'),
  RECORD_BAD_JSON: spec('error', 'REC-1', 'write one JSON object, for example with JSON.stringify or jq -c'),
  RECORD_TRAILING_DATA: spec('error', 'REC-1', 'a record is one JSON object and one line feed, nothing after it'),
  RECORD_NO_FINAL_LF: spec('error', 'REC-1', 'end the record with exactly one line feed (0x0A)'),
  RECORD_NOT_OBJECT: spec('error', 'REC-1', 'a record is a JSON object'),
  RECORD_DUPLICATE_KEY: spec('error', 'REC-1', 'write each member name once per object'),
  RECORD_NOT_COMPACT: spec('error', 'REC-1', 'write compact JSON as JSON.stringify or jq -c does: no whitespace, no optional escapes, plain integers'),
  RECORD_TOO_DEEP: spec('error', 'REC-1', 'arrays and objects nest at most 128 deep; flatten the payload'),
  // Content (REC-4 steps 3 and 4, REC-3, REC-7).
  RECORD_VERSION: spec('error', 'VER-1', 'this reader supports fsjob 1.x; use an implementation of that major, or write "fsjob":"1.2"'),
  RECORD_NEWER_MINOR: spec('info', 'VER-3', 'members unknown to this reader were ignored; upgrade the reader to check them'),
  RECORD_TYPE_MISMATCH: spec('error', 'REC-3', 'store each record under the name of its type (LAYOUT-5)'),
  RECORD_SCHEMA: spec('error', 'REC-5', 'fix the member to match the schema in schemas/'),
  RECORD_UNKNOWN_MEMBER: spec('error', 'VER-2', 'remove the member, or prefix its name with "x-" if it is an extension'),
  RECORD_ID_MISMATCH: spec('error', 'REC-7', 'a record lives in the directory of the job it names; move it or fix its id'),
  RECORD_GEN_MISMATCH: spec('error', 'REC-7', 'a record of generation g is named after g; fix the name or the gen member'),
  RECORD_NAME_MISMATCH: spec('error', 'REC-7', 'the member must agree with the file name or directory the record is stored under'),
  // Whole-queue audit (fsjob validate QUEUE). The queue as a whole (LAYOUT-1, LAYOUT-2, VER-1).
  QUEUE_RECORD_INVALID: spec('error', 'LAYOUT-2', 'other implementations refuse this directory; restore fsjob.json from a valid queue record (fsjob init never overwrites one)'),
  QUEUE_VERSION: spec('error', 'VER-1', 'nothing inside was checked; use a validator of that protocol major'),
  QUEUE_DIR_MISSING: spec('error', 'LAYOUT-1', 'run fsjob init on the queue to create the missing directory'),
  QUEUE_TMP_OTHER_FS: spec('error', 'LAYOUT-3', 'every enqueue fails with EXDEV: unmount what is mounted over tmp/ (or move it back onto the filesystem of jobs/)'),
  ROOT_UNKNOWN_ENTRY: spec('warning', 'LAYOUT-1', 'nothing in fsjob reads it; move it out of the queue root'),
  // Names (LAYOUT-4..LAYOUT-9): unknown names are never opened, followed or deleted.
  JOB_BAD_ID: spec('warning', 'LAYOUT-4', 'readers treat it as foreign and never open it; move it out of jobs/'),
  JOB_UNKNOWN_ENTRY: spec('warning', 'LAYOUT-6', 'readers never open it; move it out of the job directory'),
  READY_BAD_NAME: spec('warning', 'LAYOUT-7', 'consumers skip it; remove it (ready entries are <P>-<id>)'),
  READY_NOT_EMPTY: spec('warning', 'LAYOUT-7', 'ready entries are empty files and nothing reads their content; remove it and let fsjob recover rebuild it'),
  READY_PRIORITY: spec('error', 'LAYOUT-7', 'consumers would take the job out of priority order; remove the entry and run fsjob recover to rebuild it from spec.json'),
  HOLD_BAD_NAME: spec('warning', 'LAYOUT-8', 'nothing reads it; move it out of the hold directory (holds are <sha256>/<n>.json)'),
  WORKER_BAD_NAME: spec('warning', 'LAYOUT-9', 'nothing reads it; move it out of workers/ (registrations are <16 hex>.json)'),
  // Hazards anywhere in the queue (SEC-2..SEC-6, TEMP-1); records use the RECORD_* codes above.
  ENTRY_SYMLINK: spec('error', 'SEC-2', 'remove the link; fsjob never follows one inside a queue'),
  ENTRY_WRONG_TYPE: spec('error', 'SEC-3', 'remove it; fsjob never opens it (a FIFO or socket would block or mislead a reader)'),
  ENTRY_TOO_LARGE: spec('error', 'SEC-4', 'readers refuse it unread; remove it or shrink it within its bound'),
  ENTRY_WRITABLE: spec('error', 'SEC-5', 'readers refuse it; run chmod go-w on it if its content is yours (directories are 0700, files 0600)'),
  ENTRY_READABLE: spec('warning', 'SEC-5', 'others can read job data; run chmod go-rwx on it (directories are 0700, files 0600)'),
  ENTRY_HARDLINK: spec('warning', 'SEC-9', 'the file shares its content with a name outside this entry (maybe outside the queue), which can change it after publication; replace it with a copy of its own (cp, then mv over it) or remove it'),
  ENTRY_OWNER: spec('error', 'SEC-6', 'readers refuse it; only the queue owner may write inside the queue: remove it, or chown it if it is yours'),
  ENTRY_UNREADABLE: spec('error', 'CONF-3', 'nothing in it was checked and no reader can use it; give it back its mode (directories 0700, files 0600) or repair the filesystem (EIO), then validate again'),
  TEMP_STALE: spec('warning', 'TEMP-1', 'a writer died mid-write; fsjob gc or recover may remove it'),
  // One job's records against each other (spec/claim.md, spec/running.md, spec/control.md).
  JOB_NO_SPEC: spec('error', 'ENQ-5', 'a job is published whole by renaming its staged directory; this one is incomplete: restore spec.json or move the directory out of jobs/'),
  STDIN_MISMATCH: spec('error', 'EXEC-7', 'the job will be rejected (stdin_unusable); restore the stdin file the spec describes'),
  CLAIM_GAP: spec('error', 'CLAIM-5', 'claims are published for generation g+1 only after g; a claim was removed or written out of turn'),
  CLAIM_LIMIT: spec('warning', 'CLAIM-4', 'the job can never be claimed again; cancel it or enqueue it anew'),
  GEN_WITHOUT_CLAIM: spec('error', 'LAYOUT-5', 'only the owner of claim g writes the records of generation g; find what wrote it'),
  EXEC_NO_OUTPUT: spec('error', 'EXEC-1', 'the owner of a command job creates stdout.<g> and stderr.<g> before recording the execution; the outputs were lost or never made'),
  EXEC_ATTEMPT: spec('error', 'RETRY-1', 'the attempt number of an execution is the attempts used before it plus one'),
  EXEC_GROUP: spec('error', 'EXEC-3', 'a command execution records its process group; a payload execution (PAYLOAD-1) records null'),
  STATE_ATTEMPT: spec('warning', 'RETRY-1', 'state records are advisory and fsjob ignores this one; the exec record is what counts'),
  OUTPUT_OVER_BOUND: spec('error', 'EXEC-1', 'an owner keeps at most max_output_bytes of each stream; the writer ignored the bound'),
  ATTEMPTS_EXCEEDED: spec('error', 'RETRY-2', 'the job was executed more often than max_attempts allows; check the consumer that ran it'),
  STARTED_TWICE: spec('error', 'RETRY-2', 'a job with max_attempts 1 that is not preemptible is started at most once (I2); check the consumer that ran it'),
  RECEIPT_NO_CLAIM: spec('error', 'RCPT-3', 'only the owner of a claim publishes a receipt; the receipt names a generation nobody claimed'),
  RECEIPT_ENDED_GEN: spec('error', 'RCPT-3', 'a generation ends with an end record or a receipt, never both; its owner broke the protocol'),
  RECEIPT_ATTEMPTS: spec('error', 'RETRY-1', 'a receipt reports the attempts used as RETRY-1 counts them from the exec and end records'),
  RECEIPT_OUTPUT: spec('error', 'RCPT-5', 'the output files are not what the receipt describes (I4): they were changed after the receipt, or the receipt was published before they were complete'),
  RECEIPT_CANCEL_UNREQUESTED: spec('warning', 'CANCEL-3', 'a job is cancelled only on a cancel record (cancel-force.json for force_stopped); find what cancelled it'),
  RECEIPT_TIME_ORDER: spec('warning', 'LEASE-4', "the writer's wall clock went back between the two instants (elapsed time is measured on a monotonic clock): the two are not a duration; check the clock of the host the receipt's by names"),
  // Across jobs: the ready index, dedupe keys, lanes, holds.
  GATED_RECORD: spec('error', 'GATE-2', 'a gated job is never claimed: a claim, generation record, output or receipt there was written by a consumer that ignored the gate; find it'),
  GATED_NO_GATE: spec('warning', 'GATE-1', 'a job is gated for its dependencies or its hold; a consumer opens this one at once'),
  AFTER_INVALID: spec('error', 'AFTER-2', 'a producer refuses such an after; cancel the job and enqueue it again'),
  AFTER_UNSATISFIED: spec('error', 'AFTER-3', 'the job was opened before its dependency was satisfied; find the consumer or releaser that opened it'),
  JOB_HELD: spec('info', 'HOLD-1', 'it runs once released (fsjob release and its id), or is cancelled'),
  HOLD_UNRELEASED: spec('error', 'HOLD-1', 'a held job is opened only once release.json exists or a cancel was asked for; find what opened it'),
  READY_MISSING: spec('warning', 'READY-1', 'consumers only find jobs through ready/; run fsjob recover to rebuild the entry'),
  READY_FINISHED: spec('info', 'READY-3', 'the job is finished; the entry is garbage that fsjob gc or recover removes'),
  READY_NO_JOB: spec('warning', 'READY-3', 'no job directory has existed for this entry for over TEMP_MAX_AGE; fsjob gc or recover removes it'),
  DEDUPE_CONFLICT: spec('error', 'DEDUPE-1', 'at most one unfinished job holds a dedupe key; cancel the duplicates'),
  DEDUPE_UNHELD: spec('error', 'DEDUPE-2', 'an enqueued job with a dedupe key holds the key until it finishes; its hold is missing or was overtaken'),
  LANE_CONFLICT: spec('error', 'LANE-1', 'at most one job of a lane runs at a time; cancel one of them'),
  LANE_UNHELD: spec('error', 'LANE-2', 'a running job holds its lane with the highest hold of the key; its hold is missing or was overtaken'),
  HOLD_JOB_MISSING: spec('info', 'LANE-3', 'the highest hold outlives its job by design; nothing to do'),
  // Liveness (spec/identity.md and spec/recovery-and-gc.md).
  ORPHANED_CLAIM: spec('warning', 'RECOV-1', 'its owner is dead; run fsjob recover (a consumer also recovers it when it meets the job)'),
  ORPHAN_RUNNING: spec('warning', 'RECOV-1', 'its owner is dead but the command it started still runs; run fsjob recover to stop it and requeue or finish the job'),
  ORPHAN_UNPROVEN: spec('error', 'RECOV-1', 'its owner is dead and its execution cannot be proven stopped, so nobody may break the claim (quarantined); stop the process group yourself, then run fsjob recover'),
  OWNER_UNKNOWN: spec('info', 'ID-6', 'the process table cannot tell whether the owner lives; run validate with access to /proc (same user, no hidepid)'),
  WORKER_STALE: spec('info', 'WORKER-1', 'the worker is gone; fsjob recover removes its registration'),
} as const satisfies Record<string, FindingSpec>;

/** A finding code: a key of FINDING_CODES. */
export type FindingCode = keyof typeof FINDING_CODES;

/**
 * One problem (or note) found in a record, a file or a queue (CONF-3): data, never an exception.
 * The `--json` report lists these (schemas/report.schema.json).
 */
export interface Finding {
  code: FindingCode;
  severity: Severity;
  /** The file (or directory) concerned, as the caller named it. */
  path: string;
  job_id: string | null;
  clause: string;
  /** What is wrong, then what to do. */
  message: string;
  /** JSON pointer (RFC 6901) of the offending member, when there is one. */
  field?: string;
  /** The errno code (EACCES, EIO, ...) of an entry the validator could not read (ENTRY_UNREADABLE). */
  errno?: string;
}

export interface FindingContext {
  path: string;
  jobId?: string | null | undefined;
  field?: string | undefined;
  /** Overrides the code's default clause (a schema rule that cites its own clause). */
  clause?: string | undefined;
  severity?: Severity | undefined;
  errno?: string | undefined;
}

/** True when `value` is a finding code of FINDING_CODES. */
export function isFindingCode(value: string): value is FindingCode {
  return Object.hasOwn(FINDING_CODES, value);
}

/** Build a finding: `what` says what is wrong; the registry adds what to do. */
export function makeFinding(code: FindingCode, what: string, context: FindingContext): Finding {
  const entry: FindingSpec = FINDING_CODES[code];
  const finding: Finding = {
    code,
    severity: context.severity ?? entry.severity,
    path: context.path,
    job_id: context.jobId ?? null,
    clause: context.clause ?? entry.clause,
    message: `${what}; ${entry.fix}`,
  };
  if (context.field !== undefined) finding.field = context.field;
  if (context.errno !== undefined) finding.errno = context.errno;
  return finding;
}

/** True when a finding of severity `error` is among them. */
export function hasErrors(findings: readonly Finding[]): boolean {
  return findings.some((finding) => finding.severity === 'error');
}

/** JSON pointer of a member path (RFC 6901: "~" is "~0", "/" is "~1"). */
export function jsonPointer(segments: readonly (string | number)[]): string {
  return segments.map((segment) => `/${String(segment).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}
