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
  /** Clause id in spec/fsjob-v1.md (a test checks that it exists). */
  readonly clause: string;
  /** What to do about it: the second half of every message. */
  readonly fix: string;
}

const spec = (severity: Severity, clause: string, fix: string): FindingSpec => ({ severity, clause, fix });

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
  RECORD_VERSION: spec('error', 'VER-1', 'this reader supports fsjob 1.x; use an implementation of that major, or write "fsjob":"1.0"'),
  RECORD_NEWER_MINOR: spec('info', 'VER-3', 'members unknown to fsjob 1.0 were ignored; upgrade the reader to check them'),
  RECORD_TYPE_MISMATCH: spec('error', 'REC-3', 'store each record under the name of its type (LAYOUT-5)'),
  RECORD_SCHEMA: spec('error', 'REC-5', 'fix the member to match the schema in schemas/'),
  RECORD_UNKNOWN_MEMBER: spec('error', 'VER-2', 'remove the member, or prefix its name with "x-" if it is an extension'),
  RECORD_ID_MISMATCH: spec('error', 'REC-7', 'a record lives in the directory of the job it names; move it or fix its id'),
  RECORD_GEN_MISMATCH: spec('error', 'REC-7', 'a record of generation g is named after g; fix the name or the gen member'),
  RECORD_NAME_MISMATCH: spec('error', 'REC-7', 'the member must agree with the file name or directory the record is stored under'),
} as const satisfies Record<string, FindingSpec>;

export type FindingCode = keyof typeof FINDING_CODES;

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
}

export interface FindingContext {
  path: string;
  jobId?: string | null | undefined;
  field?: string | undefined;
  /** Overrides the code's default clause (a schema rule that cites its own clause). */
  clause?: string | undefined;
  severity?: Severity | undefined;
}

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
  return finding;
}

export function hasErrors(findings: readonly Finding[]): boolean {
  return findings.some((finding) => finding.severity === 'error');
}

/** JSON pointer of a member path (RFC 6901: "~" is "~0", "/" is "~1"). */
export function jsonPointer(segments: readonly (string | number)[]): string {
  return segments.map((segment) => `/${String(segment).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}
