/**
 * `fsjob validate FILE...`: check record files one by one, from disk, as a
 * reader would (REC-4), and collect the findings into a report
 * (schemas/report.schema.json). Never writes anything (CONF-3).
 */
// Many records are checked here: with ajv's compiled code (src/records/compiled.ts).
import '../records/compiled.ts';
import { lstat } from 'node:fs/promises';
import { FsjobError, errnoOf } from '../base/errors.ts';
import type { Finding } from '../records/findings.ts';
import { type DocumentType, type RecordExpectations, type ValidateReport, readRecord, recordNameOf } from '../records/codec.ts';
import type { SafeFsSeam } from '../fs/safefs.ts';
import { buildReport } from './report.ts';

/** A record file to check, and the type its name (or --type) gives it. */
export interface FileTarget {
  /** The path as the user gave it; findings name it so. */
  path: string;
  type: DocumentType;
  /** What the file name fixes (REC-3, REC-7); empty when --type overrides the name. */
  expectations: RecordExpectations;
}

/** A checked record file: its findings and whether it is valid (no error). */
export interface FileResult extends FileTarget {
  findings: Finding[];
  valid: boolean;
}

/** What `validateFiles` returns: the report and each file's result. */
export interface FilesValidation {
  report: ValidateReport;
  files: FileResult[];
}

/**
 * Decide the type of each file: from its name (LAYOUT-5), or `type` for all.
 * Throws USAGE for a file that does not exist or whose type its name does
 * not tell. lstat only: nothing is opened, so a FIFO cannot block here.
 */
export async function planTargets(paths: readonly string[], type?: DocumentType): Promise<FileTarget[]> {
  if (paths.length === 0) throw new FsjobError('USAGE', 'no file to validate: name at least one');
  const targets: FileTarget[] = [];
  for (const path of paths) {
    try {
      await lstat(path);
    } catch (error) {
      if (errnoOf(error) === 'ENOENT') throw new FsjobError('USAGE', `${path}: no such file`, { path });
      throw error;
    }
    const named = recordNameOf(path);
    if (type !== undefined) {
      // The name's expectations apply only when it names the same type.
      targets.push({ path, type, expectations: named?.type === type ? named.expectations : {} });
    } else if (named !== undefined) {
      targets.push({ path, type: named.type, expectations: named.expectations });
    } else {
      throw new FsjobError(
        'USAGE',
        `${path}: cannot tell the record type from the name; pass --type (a record is named as LAYOUT-5 says: spec.json, claim.<g>.json, ...)`,
        { path },
      );
    }
  }
  return targets;
}

/** Options of `validateFiles`. */
export interface ValidateFilesOptions {
  /** Milliseconds since the epoch; injectable for tests. */
  now?: () => number;
  fs?: SafeFsSeam;
}

/**
 * Check every target and build the report. Findings are data: a bad file
 * never throws. A file that vanished since planTargets (NOT_FOUND) or a disk
 * error (IO) does: that is not a finding about a record.
 */
export async function validateFiles(targets: readonly FileTarget[], options: ValidateFilesOptions = {}): Promise<FilesValidation> {
  const now = options.now ?? Date.now;
  const startedMs = now();
  const files: FileResult[] = [];
  const jobs = new Set<string>();
  for (const target of targets) {
    const inspection = await readRecord(target.path, target.type, {
      ...target.expectations,
      path: target.path,
      ...(options.fs === undefined ? {} : { fs: options.fs }),
    });
    files.push({ ...target, findings: inspection.findings, valid: inspection.ok });
    const jobId = target.expectations.expectedJobId ?? (inspection.ok ? jobIdOf(inspection.value) : undefined);
    if (jobId !== undefined) jobs.add(jobId);
  }
  const report = buildReport({
    targets: targets.map((target) => target.path),
    findings: files.flatMap((file) => file.findings),
    files: files.length,
    jobs: jobs.size,
    startedMs,
    finishedMs: now(),
  });
  return { report, files };
}

function jobIdOf(value: object): string | undefined {
  const record = value as { job_id?: unknown; id?: unknown; type?: unknown };
  const id = record.type === 'spec' ? record.id : record.job_id;
  return typeof id === 'string' ? id : undefined;
}
