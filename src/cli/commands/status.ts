/** `fsjob status [ID]`: a table of jobs and workers, or one job in full (STATUS-1, WORKER-1). */
import type { JobStatus } from '../../model/job.ts';
import type { JobReport, JobSummary, WorkerView } from '../../producer/index.ts';
import type { FsjobCommand } from '../command.ts';
import { EXIT } from '../exit.ts';
import { jobIdOf, jsonText, openQueueOf, producer, withQueue } from '../queue-arg.ts';
import { formatAge, parseInteger } from '../units.ts';

const STATUSES: readonly JobStatus[] = ['queued', 'retrying', 'claimed', 'running', 'cancelling', 'expired', 'orphaned', 'finished', 'damaged'];
const DEFAULT_LIMIT = 20;

export function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length))) ?? [];
  return rows.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0))).join('  ')).join('\n') + '\n';
}

function resultOf(job: JobSummary): string {
  if (job.outcome === null) return '-';
  return `${job.outcome} (exit ${job.exitCode ?? '?'})`;
}

export function jobsTable(jobs: JobSummary[], now: number): string {
  const rows = [['ID', 'STATUS', 'ATTEMPTS', 'LANE', 'AGE', 'RESULT', 'COMMAND']];
  for (const job of jobs) {
    const what = job.what === null ? '?' : job.what.length > 48 ? `${job.what.slice(0, 45)}...` : job.what;
    rows.push([
      job.id,
      job.status,
      `${job.attempts}/${job.maxAttempts ?? '?'}`,
      job.lane ?? '-',
      job.createdMs === null ? '?' : formatAge(now - job.createdMs),
      resultOf(job),
      what,
    ]);
  }
  return table(rows);
}

function workersText(workers: WorkerView[], now: number): string {
  if (workers.length === 0) return 'no workers registered\n';
  const rows = [['WORKER', 'OWNER', 'MODE', 'JOBS', 'HEARTBEAT', 'STATE']];
  for (const view of workers) {
    const record = view.record;
    rows.push([
      view.workerId,
      record === null ? '?' : `pid ${record.owner.pid} on ${record.owner.host}`,
      record?.mode ?? '?',
      record === null ? '?' : `${record.jobs.length}/${record.concurrency}`,
      record === null ? '?' : `${formatAge(now - record.heartbeat_ms)} ago`,
      record === null ? 'invalid registration' : view.stale ? `stale: ${view.reason}` : view.verdict,
    ]);
  }
  return table(rows);
}

function when(ms: number | null | undefined, now: number): string {
  if (ms === null || ms === undefined) return '-';
  return `${new Date(ms).toISOString()} (${formatAge(now - ms)} ago)`;
}

function detail(report: JobReport, now: number): string {
  const spec = report.spec;
  const lines: string[] = [];
  const add = (label: string, value: string): void => void lines.push(`${label.padEnd(10)}${value}`);
  add('job', report.id);
  let status: string = report.status;
  if (report.receipt !== null) status += `: ${report.receipt.outcome}, exit code ${report.receipt.exit_code}${report.receipt.reason === null ? '' : ` (${report.receipt.reason})`}`;
  if (report.owner !== null) status += ` (owner ${report.owner.verdict}: ${report.owner.reason})`;
  add('status', status);
  if (spec === null) add('spec', 'missing or invalid (see findings)');
  else {
    add('command', spec.argv !== undefined ? JSON.stringify(spec.argv) : `handler ${spec.handler ?? '?'} with payload ${JSON.stringify(spec.payload).slice(0, 200)}`);
    add('cwd', spec.cwd);
    add('created', when(spec.created_ms, now));
    add('attempts', `${report.attempts} of ${spec.max_attempts}`);
    add('limits', `timeout ${spec.timeout_ms} ms, queue deadline ${spec.queue_deadline_ms ?? 'none'}, retry delay ${spec.retry_delay_ms} ms, output ${spec.max_output_bytes} bytes`);
    add('keys', `priority ${spec.priority}, lane ${spec.lane ?? '-'}, dedupe ${spec.dedupe ?? '-'}${spec.preemptible ? ', preemptible' : ''}`);
    if (spec.stdin !== null) add('stdin', `${spec.stdin.bytes} bytes, sha256 ${spec.stdin.sha256}`);
    const labels = Object.entries(spec.labels);
    if (labels.length > 0) add('labels', labels.map(([name, value]) => `${name}=${value}`).join(' '));
  }
  if (report.cancel.graceful || report.cancel.force) add('cancel', report.cancel.force ? 'force requested' : 'requested');
  for (const gen of report.generations) {
    const parts: string[] = [];
    if (gen.claim !== null) parts.push(`claimed by pid ${gen.claim.owner.pid} on ${gen.claim.owner.host} ${when(gen.claim.claimed_ms, now)}`);
    if (gen.exec !== null) parts.push(`attempt ${gen.exec.attempt} recorded ${when(gen.exec.recorded_ms, now)}`);
    if (gen.state !== null) parts.push(`${gen.state.phase}, heartbeat ${when(gen.state.heartbeat_ms, now)}`);
    if (gen.end !== null) {
      const how = gen.end.status === null ? '' : gen.end.status.exit !== null ? ` exit ${gen.end.status.exit}` : ` ${gen.end.status.signal ?? ''}`;
      parts.push(`ended: ${gen.end.reason}${how}${gen.end.counted ? '' : ' (not counted)'}, retry at ${when(gen.end.retry_at_ms, now)}`);
    }
    if (gen.stdoutBytes !== null || gen.stderrBytes !== null) parts.push(`output ${gen.stdoutBytes ?? 0} + ${gen.stderrBytes ?? 0} bytes`);
    if (gen.findings.length > 0) parts.push(`${gen.findings.length} invalid record(s)`);
    add(`gen ${gen.gen}`, parts.join('; ') || '-');
  }
  const receipt = report.receipt;
  if (receipt !== null) {
    add('finished', when(receipt.finished_ms, now));
    if (receipt.message !== null) add('message', receipt.message);
  }
  for (const name of report.unknown) add('unknown', `${name} (not a protocol name: left alone, LAYOUT-6)`);
  for (const name of report.hazards) add('refused', `${name} is not a regular file (SEC-2, SEC-3)`);
  for (const finding of report.findings) add('finding', `${finding.path}: ${finding.message} (${finding.clause})`);
  return `${lines.join('\n')}\n`;
}

export const statusCommand: FsjobCommand = {
  command: 'status [id]',
  describe: 'Show the jobs of a queue and its workers, or everything about one job',
  builder: (yargs) =>
    withQueue(yargs)
      .positional('id', { describe: 'A job id: show that job in full', type: 'string' })
      .option('limit', { describe: `Show at most N jobs, newest first (default ${DEFAULT_LIMIT}; 0 for all)`, type: 'number' })
      .option('status', { describe: 'Only jobs in these statuses', choices: STATUSES, type: 'string', array: true })
      .option('json', { describe: 'Print the data as JSON', type: 'boolean', default: false })
      .example('$0 status', 'the 20 newest jobs and the registered workers')
      .example('$0 status --status queued running --limit 0', 'every queued or running job')
      .example('$0 status 1764476044123456789-3fa2c1d09b8e7f64', 'one job: spec, every generation, receipt, outputs')
      .example('$0 status --json | jq ".jobs[] | select(.status==\\"orphaned\\")"', 'machine-readable')
      .epilog('Statuses are derived from the records on disk (STATUS-1). Exit status: 0 shown, 1 the queue cannot be read, 4 no such job.'),
  run: async (args, io) => {
    const queue = await openQueueOf(args);
    const { jobStatus, listJobs, liveWorkers } = await producer();
    const json = args['json'] === true;
    const now = Date.now();
    if (args['id'] !== undefined) {
      const report = await jobStatus(queue, jobIdOf(args));
      io.stdout(json ? jsonText(report) : detail(report, now));
      return EXIT.OK;
    }
    const limitArg = args['limit'] === undefined ? DEFAULT_LIMIT : parseInteger(args['limit'], 'limit');
    const limit = limitArg <= 0 ? Number.POSITIVE_INFINITY : limitArg;
    const statuses = args['status'] as JobStatus[] | undefined;
    const list = await listJobs(queue, { limit, ...(statuses === undefined ? {} : { statuses }) });
    const workers = await liveWorkers(queue);
    if (json) {
      io.stdout(jsonText({ queue: queue.root, ...list, workers }));
      return EXIT.OK;
    }
    io.stdout(list.jobs.length === 0 ? 'no jobs\n' : jobsTable(list.jobs, now));
    const shown = `${list.jobs.length} of ${list.total} job${list.total === 1 ? '' : 's'}`;
    io.stdout(`${list.more ? `showing ${shown}; --limit 0 shows all` : `${shown}${statuses === undefined ? '' : ' matched'}`}${list.foreign.length > 0 ? `; ${list.foreign.length} foreign name(s) in jobs/ left alone` : ''}\n\n`);
    io.stdout(workersText(workers, now));
    return EXIT.OK;
  },
};
