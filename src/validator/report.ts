/**
 * Validation reports (spec/tools.md, schemas/report.schema.json) and their
 * human form.
 */
import { fsjobVersion } from '../base/version.ts';
import type { Finding } from '../records/findings.ts';
import { type ValidateReport } from '../records/codec.ts';
import type { QueueAudit } from './queue.ts';
import { PROTOCOL_VERSION } from '../base/constants.ts';

/** What the human form needs of one checked file (validator/files.ts's FileResult is one). */
export interface FileOutcome {
  path: string;
  type: string;
  findings: readonly Finding[];
  valid: boolean;
}

/** REPORT-1: a report lists at most this many findings. */
export const FINDINGS_MAX = 1_000_000;

/** What `buildReport` makes a report from. */
export interface ReportInput {
  targets: string[];
  findings: Finding[];
  files: number;
  jobs: number;
  startedMs: number;
  finishedMs: number;
}

/** The JSON report of REPORT-1 (schemas/report.schema.json) for the findings of one validation. */
export function buildReport(input: ReportInput): ValidateReport {
  const count = (severity: Finding['severity']): number => input.findings.filter((finding) => finding.severity === severity).length;
  return {
    fsjob: PROTOCOL_VERSION,
    tool: 'fsjob',
    version: fsjobVersion(),
    targets: input.targets,
    started_ms: input.startedMs,
    finished_ms: input.finishedMs,
    summary: { errors: count('error'), warnings: count('warning'), infos: count('info'), files: input.files, jobs: input.jobs },
    // REPORT-1 bounds the list; the summary still counts every finding.
    findings: input.findings.slice(0, FINDINGS_MAX).map((finding) => ({ ...finding })),
  };
}

function findingLine(finding: Finding): string {
  const field = finding.field === undefined ? '' : ` ${finding.field === '' ? '(record)' : finding.field}`;
  return `  ${finding.severity} ${finding.code} [${finding.clause}] ${finding.path}${field}: ${finding.message}`;
}

/** One block per file: "OK" or each finding with its path, clause, field and message. */
export function formatFileBlocks(files: readonly FileOutcome[]): string {
  let out = '';
  for (const file of files) {
    const errors = file.findings.filter((finding) => finding.severity === 'error').length;
    const verdict = errors === 0 ? 'OK' : `INVALID (${errors} error${errors === 1 ? '' : 's'})`;
    out += `${file.path}: ${verdict} [${file.type}]\n`;
    for (const finding of file.findings) out += `${findingLine(finding)}\n`;
  }
  return out;
}

/** The file blocks, then a summary line. */
export function formatHuman(files: readonly FileOutcome[], report: ValidateReport): string {
  let out = formatFileBlocks(files);
  const { errors, warnings, infos, files: count } = report.summary;
  const invalid = files.filter((file) => !file.valid).length;
  out += `${count} file${count === 1 ? '' : 's'}: ${count - invalid} valid, ${invalid} invalid; ${errors} error${errors === 1 ? '' : 's'}, ${warnings} warning${warnings === 1 ? '' : 's'}, ${infos} info${infos === 1 ? '' : 's'}\n`;
  return out;
}

/** The human form of a queue audit: findings grouped by job (queue-wide ones first), then nothing else. */
export function formatQueueHuman(audit: QueueAudit): string {
  const count = (severity: Finding['severity']): number => audit.findings.filter((finding) => finding.severity === severity).length;
  const errors = count('error');
  const warnings = count('warning');
  let out = `queue ${audit.target}: ${audit.jobs} job${audit.jobs === 1 ? '' : 's'}, ${audit.files} file${audit.files === 1 ? '' : 's'} examined: `;
  out += errors + warnings === 0 ? 'clean' : errors > 0 ? `INVALID (${plural(errors, 'error')})` : `suspicious (${plural(warnings, 'warning')})`;
  out += '\n';
  const groups = new Map<string, Finding[]>();
  for (const finding of audit.findings) {
    const key = finding.job_id ?? '';
    const group = groups.get(key) ?? [];
    group.push(finding);
    groups.set(key, group);
  }
  for (const [jobId, findings] of groups) {
    out += jobId === '' ? '  queue\n' : `  job ${jobId}\n`;
    for (const finding of findings) out += `  ${findingLine(finding)}\n`;
  }
  return out;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** The last line of a run that audited a queue: `N jobs, N errors, N warnings, N infos`. */
export function formatSummaryLine(report: ValidateReport): string {
  const { jobs, errors, warnings, infos } = report.summary;
  return `${plural(jobs, 'job')}, ${plural(errors, 'error')}, ${plural(warnings, 'warning')}, ${plural(infos, 'info')}\n`;
}
