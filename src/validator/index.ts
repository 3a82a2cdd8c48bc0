/**
 * `fsjob/validator`: what `fsjob validate` does, as a library (spec section
 * 17, CONF-3). It only reads: nothing is written, no link is followed, no
 * FIFO is opened. Every problem is a finding (data: code, severity, path,
 * job, clause, message); only a target that cannot be examined at all
 * throws (NOT_A_QUEUE, UNSAFE_QUEUE, USAGE, IO).
 *
 *   const audit = await auditQueue('/srv/q');                   // a whole queue
 *   const errors = audit.findings.filter((f) => f.severity === 'error');
 *
 *   const { report } = await validateFiles(await planTargets(['q/jobs/ID/spec.json']));
 *   // report matches schemas/report.schema.json, as `fsjob validate --json` writes it
 */
// Many records are checked here: with ajv's compiled code (src/records/compiled.ts).
import '../records/compiled.ts';
export { auditQueue, holdsQueueRecord, PARALLEL_MIN_JOBS, type QueueAudit, type QueueAuditOptions } from './queue.ts';
export { planTargets, validateFiles, type FileResult, type FileTarget, type FilesValidation, type ValidateFilesOptions } from './files.ts';
export { buildReport, FINDINGS_MAX, type ReportInput } from './report.ts';
export type { ValidateReport, ReportFinding } from '../records/generated/types.ts';
export { FINDING_CODES, type Finding, type FindingCode, type Severity } from '../records/findings.ts';
export { FsjobError, isFsjobError, ERROR_CODES, type FsjobErrorCode, type FsjobErrorFields } from '../base/errors.ts';
