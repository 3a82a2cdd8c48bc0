/**
 * What `--json` prints, in one key style: the records' snake_case. The
 * library's TypeScript API keeps its camelCase; these builders are the one
 * place that turns its results into the CLI's JSON, member by member (never a
 * blanket key rewrite: `env`, `labels` and `payload` hold the job's own
 * names). Each command's output is described by a schema in schemas/output/,
 * and test/cli/json-output.test.ts validates real output against it.
 * Records (spec, receipt, claim...) appear as they are on disk.
 */
import type { CancelResult, GcResult, JobReport, JobSummary, WorkerView } from '../producer/index.ts';

export function jobSummaryJson(job: JobSummary): Record<string, unknown> {
  return {
    id: job.id,
    status: job.status,
    attempts: job.attempts,
    max_attempts: job.maxAttempts,
    lane: job.lane,
    created_ms: job.createdMs,
    argv: job.argv,
    handler: job.handler,
    outcome: job.outcome,
    exit_code: job.exitCode,
    worker_id: job.workerId,
    priority: job.priority,
    labels: job.labels,
    started_ms: job.startedMs,
    finished_ms: job.finishedMs,
    duration_ms: job.durationMs,
  };
}

/** A registration with its owner judged; `running` counts the open claims that name the worker (current, unlike record.jobs), null when the jobs were not counted. */
export function workerViewJson(view: WorkerView, running: number | null): Record<string, unknown> {
  return {
    worker_id: view.workerId,
    record: view.record,
    verdict: view.verdict,
    stale: view.stale,
    reason: view.reason,
    running,
    findings: view.findings,
  };
}

export function jobReportJson(report: JobReport): Record<string, unknown> {
  return {
    id: report.id,
    dir: report.dir,
    status: report.status,
    gen: report.gen,
    attempts: report.attempts,
    spec: report.spec,
    owner: report.owner,
    receipt: report.receipt,
    cancel: report.cancel,
    generations: report.generations.map((gen) => ({
      gen: gen.gen,
      claim: gen.claim,
      exec: gen.exec,
      state: gen.state,
      end: gen.end,
      stdout_bytes: gen.stdoutBytes,
      stderr_bytes: gen.stderrBytes,
      findings: gen.findings,
    })),
    outputs: report.outputs,
    unknown: report.unknown,
    hazards: report.hazards,
    pending: report.pending,
    findings: report.findings,
  };
}

export function gcJson(result: GcResult, dryRun: boolean): Record<string, unknown> {
  return {
    dry_run: dryRun,
    jobs: result.jobs,
    ready_entries: result.readyEntries,
    holds: result.holds,
    temps: result.temps,
    kept: result.kept,
    skipped: result.skipped,
    failed: result.failed,
  };
}

export function cancelJson(result: CancelResult): Record<string, unknown> {
  return {
    id: result.id,
    record: result.record,
    published: result.published,
    next: result.next.replaceAll('-', '_'),
    receipt: result.receipt,
  };
}
