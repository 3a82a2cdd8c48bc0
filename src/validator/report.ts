/**
 * Validation reports (spec section 17, schemas/report.schema.json) and their
 * human form.
 */
import { readFileSync } from 'node:fs';
import type { Finding } from '../core/findings.ts';
import { PROTOCOL_VERSION, type ValidateReport } from '../core/records.ts';
import type { FileResult } from './files.ts';

let toolVersion: string | undefined;

/** The version of this fsjob package, for reports. */
export function fsjobVersion(): string {
  toolVersion ??= (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  return toolVersion;
}

export interface ReportInput {
  targets: string[];
  findings: Finding[];
  files: number;
  jobs: number;
  startedMs: number;
  finishedMs: number;
}

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
    findings: input.findings.map((finding) => ({ ...finding })),
  };
}

function findingLine(finding: Finding): string {
  const field = finding.field === undefined ? '' : ` ${finding.field === '' ? '(record)' : finding.field}`;
  return `  ${finding.severity} ${finding.code} [${finding.clause}] ${finding.path}${field}: ${finding.message}`;
}

/** One block per file: "OK" or each finding with its path, clause, field and message; then a summary line. */
export function formatHuman(files: readonly FileResult[], report: ValidateReport): string {
  let out = '';
  for (const file of files) {
    const errors = file.findings.filter((finding) => finding.severity === 'error').length;
    const verdict = errors === 0 ? 'OK' : `INVALID (${errors} error${errors === 1 ? '' : 's'})`;
    out += `${file.path}: ${verdict} [${file.type}]\n`;
    for (const finding of file.findings) out += `${findingLine(finding)}\n`;
  }
  const { errors, warnings, infos, files: count } = report.summary;
  const invalid = files.filter((file) => !file.valid).length;
  out += `${count} file${count === 1 ? '' : 's'}: ${count - invalid} valid, ${invalid} invalid; ${errors} error${errors === 1 ? '' : 's'}, ${warnings} warning${warnings === 1 ? '' : 's'}, ${infos} info${infos === 1 ? '' : 's'}\n`;
  return out;
}
