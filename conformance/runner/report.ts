/**
 * Results of a conformance run: one result per case, each failure naming
 * the clauses it broke and the evidence on disk, and the report that
 * `--json` writes (schemas/conformance-report.schema.json).
 */
import { PROTOCOL_VERSION } from '../../src/base/constants.ts';

export type Level = 'producer' | 'consumer' | 'validator';
export type Strength = 'MUST' | 'SHOULD';
export type Status = 'ok' | 'fail' | 'skip';

export interface CrashPoint {
  k: number;
  op: string;
  path: string;
  path2?: string;
}

export interface Failure {
  /** Clause ids (and invariant ids I1..I8) the failure breaks; the first is the most specific. */
  clauses: string[];
  message: string;
  /** What is on disk and what the processes said: short lines. */
  evidence: string[];
  crash?: CrashPoint;
}

export interface CaseResult {
  name: string;
  clauses: string[];
  level: Level;
  strength: Strength;
  status: Status;
  durationMs: number;
  /** Why the case was skipped, or a one-line note (crash points checked). */
  note?: string;
  failures: Failure[];
  /** Where the case's files are, with --keep. */
  workdir?: string;
}

export interface Summary {
  passed: number;
  failed: number;
  skipped: number;
  mustFailed: number;
  crashPoints: number;
}

export interface Report {
  fsjob: string;
  tool: string;
  implementation: { name: string; manifest: string };
  options: { role: string; crash: string; power: string; only: string[] };
  started_ms: number;
  finished_ms: number;
  summary: { passed: number; failed: number; skipped: number; must_failed: number; crash_points: number };
  cases: {
    name: string;
    clauses: string[];
    level: Level;
    strength: Strength;
    status: Status;
    duration_ms: number;
    note: string | null;
    workdir: string | null;
    failures: { clauses: string[]; message: string; evidence: string[]; crash: CrashPoint | null }[];
  }[];
}

export function summarize(results: readonly CaseResult[], crashPoints: number): Summary {
  return {
    passed: results.filter((r) => r.status === 'ok').length,
    failed: results.filter((r) => r.status === 'fail').length,
    skipped: results.filter((r) => r.status === 'skip').length,
    mustFailed: results.filter((r) => r.status === 'fail' && r.strength === 'MUST').length,
    crashPoints,
  };
}

export function buildReport(input: {
  implementation: { name: string; manifest: string };
  options: { role: string; crash: string; power: string; only: string[] };
  startedMs: number;
  finishedMs: number;
  results: readonly CaseResult[];
  crashPoints: number;
}): Report {
  const summary = summarize(input.results, input.crashPoints);
  return {
    fsjob: PROTOCOL_VERSION,
    tool: 'fsjob conformance',
    implementation: input.implementation,
    options: input.options,
    started_ms: input.startedMs,
    finished_ms: input.finishedMs,
    summary: { passed: summary.passed, failed: summary.failed, skipped: summary.skipped, must_failed: summary.mustFailed, crash_points: summary.crashPoints },
    cases: input.results.map((r) => ({
      name: r.name,
      clauses: r.clauses,
      level: r.level,
      strength: r.strength,
      status: r.status,
      duration_ms: r.durationMs,
      note: r.note ?? null,
      workdir: r.workdir ?? null,
      failures: r.failures.map((f) => ({ clauses: f.clauses, message: f.message, evidence: f.evidence, crash: f.crash ?? null })),
    })),
  };
}

const MAX_FAILURES_SHOWN = 8;
const MAX_EVIDENCE_LINES = 14;

export function formatCrashPoint(point: CrashPoint): string {
  return `k=${point.k} ${point.op} ${point.path}${point.path2 === undefined ? '' : ` -> ${point.path2}`}`;
}

/** The text lines of one case: `ok`/`FAIL`/`skip`, its clauses, and for a failure what broke with evidence. */
export function formatCase(result: CaseResult): string[] {
  const tag = result.status === 'ok' ? 'ok  ' : result.status === 'fail' ? 'FAIL' : 'skip';
  const strength = result.strength === 'SHOULD' ? ' (SHOULD)' : '';
  const seconds = (result.durationMs / 1000).toFixed(1);
  const note = result.note === undefined ? '' : ` - ${result.note}`;
  const lines = [`${tag} ${result.name} [${result.clauses.join(' ')}]${strength} ${seconds}s${note}`];
  for (const failure of result.failures.slice(0, MAX_FAILURES_SHOWN)) {
    lines.push(`     broke ${failure.clauses.join(' ')}: ${failure.message}`);
    if (failure.crash !== undefined) lines.push(`       crash point: ${formatCrashPoint(failure.crash)}`);
    const evidence = failure.evidence.slice(0, MAX_EVIDENCE_LINES);
    for (const line of evidence) lines.push(`       ${line.length > 400 ? `${line.slice(0, 400)}...` : line}`);
    if (failure.evidence.length > evidence.length) lines.push(`       ... ${failure.evidence.length - evidence.length} more lines (--json has all)`);
  }
  if (result.failures.length > MAX_FAILURES_SHOWN) lines.push(`     ... and ${result.failures.length - MAX_FAILURES_SHOWN} more failures (--json has all)`);
  if (result.workdir !== undefined && result.status === 'fail') lines.push(`     files kept in ${result.workdir}`);
  return lines;
}

export function formatSummary(summary: Summary): string {
  return `${summary.passed} passed, ${summary.failed} failed, ${summary.skipped} skipped`;
}
