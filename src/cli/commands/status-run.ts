/** What `fsjob status` does once its options are parsed (commands/status.ts declares them). */
import type { JobStatus } from '../../model/job.ts';
import type { IndexCounts, JobCounts, JobList, JobReport, JobSort, JobSummary, Outcome, WorkerView } from '../../producer/index.ts';
import type { CliIo } from '../command.ts';
import { EXIT } from '../exit.ts';
import { withoutClauseIds } from '../messages.ts';
import { progressWanted, startProgress } from '../progress.ts';
import { pauseState } from '../../model/pause.ts';
import { dependencyState, heldUpstream } from '../../model/gates.ts';
import type { Queue } from '../../model/queue.ts';
import { jobStatus, liveWorkers } from '../../producer/inspect.ts';
import { listJobs } from '../../producer/job-list.ts';
import { jobIdOf, jsonText, openQueueOf } from '../queue-arg.ts';
import { shellQuote } from '../shell-quote.ts';
import { formatAge, formatBytes, formatClock, formatDuration, formatElapsed, parseInteger, parsePairs } from '../../base/units.ts';
import { jobReportJson, jobSummaryJson, workerViewJson } from '../json-out.ts';
import { DEFAULT_LIMIT, EXACT_COUNT_MAX, OUTCOMES, STATUSES } from './status-options.ts';

/** A COMMAND cell longer than this is cut (the whole command: fsjob status ID). */
const COMMAND_WIDTH = 60;

export function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length))) ?? [];
  return rows.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0))).join('  ')).join('\n') + '\n';
}

function resultOf(job: JobSummary): string {
  if (job.outcome === null) return '-';
  return `${job.outcome} (exit ${job.exitCode ?? '?'})`;
}

/** What a job runs, as a shell would read it back: `sh -c 'echo hi'`. */
export function commandCell(job: Pick<JobSummary, 'argv' | 'handler'>, width = COMMAND_WIDTH): string {
  const text = job.argv !== null ? shellQuote(job.argv) : job.handler !== null ? `handler:${job.handler}` : '?';
  return text.length > width ? `${text.slice(0, width - 3)}...` : text;
}

export function jobsTable(jobs: JobSummary[], now: number): string {
  const rows = [['ID', 'STATUS', 'ATTEMPTS', 'LANE', 'PRI', 'AGE', 'STARTED', 'FINISHED', 'DURATION', 'RESULT', 'COMMAND']];
  for (const job of jobs) {
    const what = commandCell(job);
    rows.push([
      job.id,
      job.status,
      `${job.attempts}/${job.maxAttempts ?? '?'}`,
      job.lane ?? '-',
      job.priority === null ? '?' : String(job.priority),
      job.createdMs === null ? '?' : formatAge(now - job.createdMs),
      job.startedMs === null ? '-' : formatClock(job.startedMs, now),
      job.finishedMs === null ? '-' : formatClock(job.finishedMs, now),
      job.durationMs === null ? '-' : formatElapsed(job.durationMs),
      resultOf(job),
      what,
    ]);
  }
  return table(rows);
}

/** The summary of a queue too big to count by default: what the ready index says. */
export function indexLine(index: IndexCounts | undefined, total: number): string {
  const jobs = `${total} job${total === 1 ? '' : 's'}`;
  if (index === undefined) return `${jobs} (ready/ cannot be listed, so they are not summed up: fsjob validate says why; --exact counts every job)\n`;
  return `${jobs}: ${index.unfinished} unfinished, ${index.finished} finished, by the ready index (over ${EXACT_COUNT_MAX} jobs; --exact counts every status and outcome, one look at each job)\n`;
}

/** "12 jobs: 3 queued, 1 running, 8 finished (5 succeeded, 2 failed, 1 lost)". */
export function countsLine(counts: JobCounts, total: number): string {
  const parts = (map: Partial<Record<string, number>>, order: readonly string[]): string[] => order.filter((name) => (map[name] ?? 0) > 0).map((name) => `${map[name] ?? 0} ${name}`);
  const statuses = parts(counts.statuses, STATUSES);
  const outcomes = parts(counts.outcomes, OUTCOMES);
  const finishedAt = statuses.findIndex((part) => part.endsWith(' finished'));
  if (finishedAt !== -1 && outcomes.length > 0) statuses[finishedAt] += ` (${outcomes.join(', ')})`;
  return `${total} job${total === 1 ? '' : 's'}${statuses.length === 0 ? '' : `: ${statuses.join(', ')}`}\n`;
}

/** PAUSE-1: the first line of fsjob status on a paused queue. */
function pausedLine(record: import('../../records/codec.ts').PauseRecord | null, now: number): string {
  if (record === null) return 'PAUSED (pause.json is there but unreadable): no job is claimed until fsjob resume';
  const why = record.reason === null ? '' : `: ${record.reason}`;
  return `PAUSED since ${new Date(record.paused_ms).toISOString()} (${formatAge(now - record.paused_ms)} ago, by pid ${record.by.pid} on ${record.by.host})${why}; no job is claimed until fsjob resume`;
}

function workersText(workers: WorkerView[], now: number, counts: JobCounts | undefined): string {
  if (workers.length === 0) return 'no workers registered\n';
  const rows = [['WORKER', 'OWNER', 'MODE', 'JOBS', 'HEARTBEAT', 'STATE']];
  for (const view of workers) {
    const record = view.record;
    // JOBS from the open claims that name the worker (current), not from its registration (renewed every lease/3).
    const running = counts === undefined ? record?.jobs.length : (counts.workers[view.workerId] ?? 0);
    rows.push([
      view.workerId,
      record === null ? '?' : `pid ${record.owner.pid} on ${record.owner.host}`,
      record?.mode ?? '?',
      record === null ? '?' : `${running ?? 0}/${record.concurrency}`,
      record === null ? '?' : `${formatAge(now - record.heartbeat_ms)} ago`,
      record === null ? 'invalid registration' : view.stale ? `stale: ${view.reason}` : view.verdict,
    ]);
  }
  return table(rows);
}

/** What each dependency of a job says now (AFTER-1), and the held job it waits for further up, if any: status ID shows both, --json too. */
interface Dependencies {
  dependencies: { job_id: string; when: string; state: 'satisfied' | 'pending' | 'never'; what: string | null }[];
  /** A blocked job's held dependency, or one further up (HOLD-1): it runs only once that one is released. */
  held_upstream: string | null;
}

async function dependenciesOf(queue: Queue, report: JobReport): Promise<Dependencies> {
  const dependencies: Dependencies['dependencies'] = [];
  for (const dependency of report.spec?.after ?? []) {
    const state = await dependencyState(queue, dependency);
    dependencies.push({ job_id: dependency.job_id, when: dependency.when, state: state.kind, what: state.kind === 'never' ? state.what : null });
  }
  return { dependencies, held_upstream: report.status === 'blocked' ? ((await heldUpstream(queue, report.id)) ?? null) : null };
}

function when(ms: number | null | undefined, now: number): string {
  if (ms === null || ms === undefined) return '-';
  return `${new Date(ms).toISOString()} (${formatAge(now - ms)} ago)`;
}

function detail(report: JobReport, after: Dependencies, now: number): string {
  const spec = report.spec;
  const lines: string[] = [];
  const add = (label: string, value: string): void => void lines.push(`${label.padEnd(10)}${value}`);
  add('job', report.id);
  let status: string = report.status;
  if (report.receipt !== null) status += `: ${report.receipt.outcome}, exit code ${report.receipt.exit_code}${report.receipt.reason === null ? '' : ` (${report.receipt.reason})`}`;
  if (report.owner !== null) status += ` (owner ${report.owner.verdict}: ${report.owner.reason})`;
  add('status', status);
  if (report.pending !== null) add('pending', report.pending);
  if (spec === null) add('spec', 'missing or invalid (see findings)');
  else {
    add('command', spec.argv !== undefined ? shellQuote(spec.argv) : `handler ${spec.handler ?? '?'} with payload ${JSON.stringify(spec.payload).slice(0, 200)}`);
    add('cwd', spec.cwd);
    add('created', when(spec.created_ms, now));
    add('attempts', `${report.attempts} of ${spec.max_attempts}`);
    const deadline = spec.queue_deadline_ms === null ? 'none' : formatDuration(spec.queue_deadline_ms);
    add('limits', `timeout ${formatDuration(spec.timeout_ms)}, kill grace ${formatDuration(spec.kill_grace_ms)}, queue deadline ${deadline}, retry delay ${formatDuration(spec.retry_delay_ms)}, output ${formatBytes(spec.max_output_bytes)} bytes per stream`);
    const slots = spec.lane_slots !== undefined && spec.lane_slots > 1 ? ` (${spec.lane_slots} slots)` : '';
    add('keys', `priority ${spec.priority}, lane ${spec.lane ?? '-'}${slots}, dedupe ${spec.dedupe ?? '-'}${spec.preemptible ? ', preemptible' : ''}`);
    // AFTER-1, HOLD-1: what a gated job waits for.
    if (after.dependencies.length > 0) add('after', after.dependencies.map((dep) => `${dep.job_id} (${dep.when}: ${dep.state === 'never' ? `never, it ${dep.what ?? ''}` : dep.state})`).join(', '));
    if (after.held_upstream !== null) add('waits', `for job ${after.held_upstream}, which is held: it runs once that one is released (fsjob release ${after.held_upstream})`);
    if (spec.hold === true) add('hold', report.status === 'held' ? `held: it runs once released (fsjob release ${report.id})` : 'enqueued held, released');
    if (spec.output_keep !== undefined && spec.output_keep !== 'head') add('keeps', `the ${spec.output_keep === 'tail' ? 'tail' : 'head and the tail'} of longer output (output_keep ${spec.output_keep})`);
    const notBefore = spec.not_before_ms ?? null;
    if (notBefore !== null) add('starts', `not before ${new Date(notBefore).toISOString()} (${notBefore > now ? `in ${formatAge(notBefore - now)}` : `${formatAge(now - notBefore)} ago`})`);
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

/** Runs `fsjob status` with yargs' parsed arguments; resolves to the exit status. */
export async function runStatus(args: Record<string, unknown>, io: CliIo): Promise<number> {
  const queue = await openQueueOf(args);
  const json = args['json'] === true;
  const now = Date.now();
  if (args['id'] !== undefined) {
    const report = await jobStatus(queue, await jobIdOf(args, queue));
    const after = await dependenciesOf(queue, report);
    if (json) io.stdout(jsonText({ ...jobReportJson(report), ...after }));
    else io.stdout(args['verbose'] === true ? detail(report, after, now) : withoutClauseIds(detail(report, after, now)));
    return EXIT.OK;
  }
  // 0 is "all" (as the help says); a negative count is a typo, not a wish for everything.
  const limitArg = args['limit'] === undefined ? DEFAULT_LIMIT : parseInteger(args['limit'], 'limit', { min: 0 });
  const limit = limitArg <= 0 ? Number.POSITIVE_INFINITY : limitArg;
  const wanted = (args['status'] as string[] | undefined) ?? [];
  const statuses = wanted.filter((name): name is JobStatus => (STATUSES as readonly string[]).includes(name));
  const outcomes = wanted.filter((name): name is Outcome => (OUTCOMES as readonly string[]).includes(name));
  const exact = args['exact'] === true;
  const labels = parsePairs(args['label'], 'label');
  const sort = (args['sort'] as JobSort | undefined) ?? 'age';
  // Every job's records are read: with ajv's compiled code (src/records/compiled.ts).
  if (exact) await import('../../records/compiled.ts');
  // --sort duration reads every receipt (lightly), --exact every job: worth a progress line.
  const progress = startProgress(io, 'status', 'jobs', (exact || sort === 'duration') && progressWanted(io, args));
  let list: JobList;
  try {
    list = await listJobs(queue, {
      limit,
      counts: exact ? true : EXACT_COUNT_MAX,
      ...(wanted.length === 0 ? {} : { statuses, outcomes }),
      ...(labels === undefined ? {} : { labels }),
      sort,
      onProgress: (done, total) => {
        progress.total(total);
        if (done > 0) progress.add();
      },
    });
  } finally {
    progress.end();
  }
  const workers = await liveWorkers(queue);
  const pause = await pauseState(queue);
  // As gc's failed list: a view that lacks a job the filesystem refused to read is incomplete, exit 1.
  const shownAll = list.unreadable.length === 0 ? EXIT.OK : EXIT.FAILURE;
  if (json) {
    io.stdout(
      jsonText({
        queue: queue.root,
        paused: pause.paused,
        pause: pause.paused ? pause.record : null,
        total: list.total,
        counts: list.counts === undefined ? null : { statuses: list.counts.statuses, outcomes: list.counts.outcomes },
        index: list.index ?? null,
        jobs: list.jobs.map(jobSummaryJson),
        more: list.more,
        foreign: list.foreign,
        workers: workers.map((view) => workerViewJson(view, list.counts === undefined ? null : (list.counts.workers[view.workerId] ?? 0))),
        unreadable: list.unreadable,
      }),
    );
    return shownAll;
  }
  if (pause.paused) io.stdout(`${pausedLine(pause.record, now)}\n`);
  io.stdout(`${list.counts !== undefined ? countsLine(list.counts, list.total) : indexLine(list.index, list.total)}\n`);
  const filter = [...(wanted.length === 0 ? [] : [wanted.join(' or ')]), ...Object.entries(labels ?? {}).map(([name, value]) => `labelled ${name}=${value}`)].join(', ');
  io.stdout(list.jobs.length === 0 ? (filter === '' ? 'no jobs\n' : `no job is ${filter}\n`) : jobsTable(list.jobs, now));
  const shown = `${list.jobs.length} job${list.jobs.length === 1 ? '' : 's'}${filter === '' ? '' : ` ${filter}`}`;
  const showing = sort === 'age' ? `showing the newest ${shown}` : `showing ${shown}, the first by ${sort}`;
  const notes = [
    ...(list.more ? [`${showing}; --limit 0 shows all`] : filter !== '' ? [shown] : []),
    ...(list.foreign.length > 0 ? [`${list.foreign.length} foreign name(s) in jobs/ left alone`] : []),
    ...(list.unreadable.length > 0 ? [`${list.unreadable.length} job(s) could not be read and are not shown (listed on standard error)`] : []),
  ];
  for (const job of list.unreadable) io.stderr(`fsjob: could not read job ${job.id}: ${job.reason}\n`);
  io.stdout(`${notes.length === 0 ? '' : `${notes.join('; ')}\n`}\n`);
  io.stdout(workersText(workers, now, list.counts));
  return shownAll;
}
