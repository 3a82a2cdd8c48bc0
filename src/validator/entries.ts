/**
 * What a validator says about one directory entry before (or instead of)
 * reading it: its kind (SEC-2, SEC-3), owner (SEC-6), mode (SEC-5) and age
 * (TEMP-1), and the safe read of a record (REC-4) with every refusal turned
 * into a finding. Entries at record names get the RECORD_* codes that
 * `fsjob validate FILE` gives; every other entry gets the ENTRY_* codes.
 *
 * Nothing here writes, follows a link, or opens anything a listing did not
 * report as a regular file.
 */
import { readdirSync, type Stats } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { isFsjobError } from '../base/errors.ts';
import { type Finding, type FindingCode, makeFinding } from '../records/findings.ts';
import { inspectRecord, type DocumentByType, type RecordExpectations, type RecordType } from '../records/codec.ts';
import { type DirEntry, type EntryKind, lstatIfExistsSync, readBoundedSync } from '../fs/safefs.ts';
import { RECORD_MAX, TEMP_MAX_AGE } from '../base/constants.ts';
import { fastParseRecordBytes } from '../records/fast-json.ts';
import { acceptRecord } from './fast-record.ts';

const GROUP_OR_OTHER_WRITE = 0o022;
const GROUP_OR_OTHER_ANY = 0o077;

/** The state of one audit that every check needs. */
export interface AuditEnv {
  /** The queue root as the user named it: findings name paths under it. */
  readonly shownRoot: string;
  /** Absolute queue root: what is opened. */
  readonly root: string;
  /** join(root, 'jobs') and join(shownRoot, 'jobs'), computed once: entry paths below are plain concatenations of checked names. */
  readonly jobsDir: string;
  readonly shownJobsDir: string;
  /** The queue owner: the effective uid (SEC-1 refuses a root owned by anyone else). */
  readonly uid: number;
  /** The audit's clock reading, milliseconds since the epoch. */
  readonly nowMs: number;
  /** Reused read buffer for records (RECORD_MAX + 1 bytes). */
  readonly scratch: Buffer;
}

export function newScratch(): Buffer {
  return Buffer.allocUnsafe(RECORD_MAX + 1);
}

export function auditEnv(shownRoot: string, root: string, uid: number, nowMs: number): AuditEnv {
  return { shownRoot, root, jobsDir: join(root, 'jobs'), shownJobsDir: join(shownRoot, 'jobs'), uid, nowMs, scratch: newScratch() };
}

/** Collects findings and counts the files examined. */
export class Sink {
  readonly findings: Finding[] = [];
  files = 0;

  add(code: FindingCode, what: string, path: string, jobId: string | null, field?: string): void {
    this.findings.push(makeFinding(code, what, { path, jobId, ...(field === undefined ? {} : { field }) }));
  }
}

export type Expected = 'file' | 'dir' | 'any';

function describeKind(kind: EntryKind): string {
  switch (kind) {
    case 'symlink':
      return 'a symbolic link';
    case 'fifo':
      return 'a FIFO';
    case 'socket':
      return 'a socket';
    case 'dir':
      return 'a directory';
    case 'file':
      return 'a regular file';
    default:
      return 'a device or other special file';
  }
}

/**
 * SEC-2 and SEC-3 from the listing alone: true when the entry is of the
 * expected kind (and may be examined further), false after reporting it.
 */
export function checkKind(sink: Sink, path: string, kind: EntryKind, expected: Expected, jobId: string | null, record = false): boolean {
  if (kind === 'symlink') {
    sink.add(record ? 'RECORD_SYMLINK' : 'ENTRY_SYMLINK', `${path} is a symbolic link`, path, jobId);
    return false;
  }
  const wrong =
    expected === 'any' ? kind === 'fifo' || kind === 'socket' || kind === 'other' : kind !== expected;
  if (wrong) {
    const belongs = expected === 'dir' ? 'a directory' : expected === 'file' ? 'a regular file' : 'a file or directory';
    sink.add(record ? 'RECORD_NOT_REGULAR' : 'ENTRY_WRONG_TYPE', `${path} is ${describeKind(kind)} where ${belongs} belongs`, path, jobId);
    return false;
  }
  return true;
}

function octal(mode: number): string {
  return `0${(mode & 0o7777).toString(8)}`;
}

/** SEC-5, SEC-6 and SEC-9 from an lstat or fstat. Symlinks have no meaningful mode and are reported by kind. */
export function checkStats(sink: Sink, env: AuditEnv, path: string, stats: Stats, jobId: string | null, record = false): void {
  if (stats.isSymbolicLink()) return;
  if (stats.uid !== env.uid) {
    sink.add(record ? 'RECORD_OWNER' : 'ENTRY_OWNER', `${path} is owned by uid ${stats.uid}, not by the queue owner (uid ${env.uid})`, path, jobId);
  }
  if ((stats.mode & GROUP_OR_OTHER_WRITE) !== 0) {
    sink.add(record ? 'RECORD_MODE' : 'ENTRY_WRITABLE', `${path} has mode ${octal(stats.mode)}, writable by group or others`, path, jobId);
  } else if ((stats.mode & GROUP_OR_OTHER_ANY) !== 0) {
    sink.add('ENTRY_READABLE', `${path} has mode ${octal(stats.mode)}, open to group or others`, path, jobId);
  }
  if (stats.isFile() && stats.nlink > 1 && !basename(path).startsWith('.') && !linkedFromTemp(path, stats)) {
    sink.add('ENTRY_HARDLINK', `${path} has ${stats.nlink} hard links`, path, jobId);
  }
}

/** SEC-9: between PUB-3 and PUB-6 a record shares its inode with its temporary name in the same directory. */
function linkedFromTemp(path: string, stats: Stats): boolean {
  const dir = dirname(path);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return false;
  }
  return names.some((name) => {
    if (!name.startsWith('.')) return false;
    const other = lstatIfExistsSync(join(dir, name));
    return other !== undefined && other.ino === stats.ino && other.dev === stats.dev;
  });
}

/** lstat an entry (counted as examined) and apply SEC-5/SEC-6; undefined when it vanished. */
export function statEntry(sink: Sink, env: AuditEnv, path: string, shown: string, jobId: string | null): Stats | undefined {
  const stats = lstatIfExistsSync(path);
  if (stats === undefined) return undefined;
  sink.files += 1;
  checkStats(sink, env, shown, stats, jobId);
  return stats;
}

/** TEMP-1: a temporary name (or tmp/ entry) older than TEMP_MAX_AGE is stale; newer ones are in progress. */
export function checkTemp(sink: Sink, env: AuditEnv, path: string, shown: string, kind: EntryKind, jobId: string | null): void {
  checkKind(sink, shown, kind, 'any', jobId);
  const stats = statEntry(sink, env, path, shown, jobId);
  if (stats === undefined) return;
  const age = env.nowMs - stats.mtimeMs;
  if (age > TEMP_MAX_AGE) {
    sink.add('TEMP_STALE', `${shown} was last modified ${Math.round(age / 60_000)} minutes ago, over TEMP_MAX_AGE (60 minutes)`, shown, jobId);
  }
}

/** Errnos about this process, not the entry: out of descriptors or memory ends the audit (it could not run), never a finding. */
const PROCESS_ERRNOS = new Set(['EMFILE', 'ENFILE', 'ENOMEM']);

/**
 * CONF-3 (I8): an entry the filesystem refused to list or read (EACCES,
 * EIO, ...) is a finding of its own, with its errno, and the audit goes on
 * with everything else. True after reporting it; false for any other error,
 * which the caller rethrows.
 */
export function reportUnreadable(sink: Sink, error: unknown, shown: string, jobId: string | null): boolean {
  if (!isFsjobError(error, 'IO') || error.errno === undefined || PROCESS_ERRNOS.has(error.errno)) return false;
  const { errno } = error;
  sink.findings.push(makeFinding('ENTRY_UNREADABLE', `${shown} could not be read (${errno})`, { path: shown, jobId, errno }));
  return true;
}

/** What reading a record found: the value when it passed REC-4, and the stats of the file when it was opened. */
export interface RecordRead<T> {
  value: T | undefined;
  stats: Stats | undefined;
}

const REFUSAL_CODES: Record<string, FindingCode> = {
  SYMLINK_REFUSED: 'RECORD_SYMLINK',
  NOT_REGULAR: 'RECORD_NOT_REGULAR',
  TOO_LARGE: 'RECORD_TOO_LARGE',
  UNSAFE_MODE: 'RECORD_MODE',
  FOREIGN_OWNER: 'RECORD_OWNER',
};

/**
 * REC-4 for the record at `path` (shown as `shown`), whose listing said
 * `kind`: refused unopened unless it is a regular file, then read bounded
 * and checked in order. Every problem is a finding, an IO refusal too
 * (ENTRY_UNREADABLE); only the process's own limits (EMFILE, ...) throw.
 */
export function readRecordEntry<T extends RecordType>(
  sink: Sink,
  env: AuditEnv,
  path: string,
  shown: string,
  entry: DirEntry,
  type: T,
  expectations: RecordExpectations,
  jobId: string | null,
): RecordRead<DocumentByType[T]> {
  if (!checkKind(sink, shown, entry.kind, 'file', jobId, true)) return { value: undefined, stats: undefined };
  let read;
  try {
    read = readBoundedSync(path, RECORD_MAX, { scratch: env.scratch, uid: env.uid });
  } catch (error) {
    if (isFsjobError(error, 'NOT_FOUND')) return { value: undefined, stats: undefined };
    if (reportUnreadable(sink, error, shown, jobId)) return { value: undefined, stats: undefined };
    const code = isFsjobError(error) ? REFUSAL_CODES[error.code] : undefined;
    if (code === undefined || !isFsjobError(error)) throw error;
    sink.files += 1;
    // A refused file may still carry other hazards (a foreign file that is also world-writable).
    const stats = lstatIfExistsSync(path);
    if (stats !== undefined && (code === 'RECORD_OWNER' || code === 'RECORD_MODE')) checkStats(sink, env, shown, stats, jobId, true);
    else sink.add(code, error.message.split('; ')[0] ?? error.message, shown, jobId);
    return { value: undefined, stats };
  }
  sink.files += 1;
  const { stats, bytes } = read;
  if ((stats.mode & GROUP_OR_OTHER_ANY) !== 0 || stats.nlink > 1) checkStats(sink, env, shown, stats, jobId, true);
  // The common record, valid with nothing to say, costs no inspection (fast-record.ts); anything else gets the full one.
  const accepted = bytes === undefined ? undefined : acceptRecord(type, bytes, expectations);
  if (accepted !== undefined) return { value: accepted as unknown as DocumentByType[T], stats };
  const inspection = inspectRecord(type, bytes ?? Buffer.alloc(0), { ...expectations, path: shown, parse: fastParseRecordBytes });
  for (const finding of inspection.findings) {
    // Findings carry the job the directory names, even when the record itself names none.
    if (jobId !== null && finding.job_id === null) finding.job_id = jobId;
    sink.findings.push(finding);
  }
  return { value: inspection.ok ? inspection.value : undefined, stats };
}
