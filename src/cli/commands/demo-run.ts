/**
 * `fsjob demo`: the quickstart. It creates a queue in a temporary directory,
 * enqueues a handful of jobs that show what fsjob does (one succeeds, one
 * fails, one times out, one is cancelled while it runs, one is retried, one
 * reads stdin, two share a lane), runs a worker until the queue is drained,
 * prints the status table, and says what to try next. Nothing here is special:
 * it calls the same producer and consumer libraries the other commands use,
 * and prints before each step the `fsjob` command line that does the same
 * (as git's porcelain shows its plumbing), written the way this demo was
 * started: `fsjob` when it ran as `fsjob`, else `node bin/fsjob.js`, so that
 * every line can be pasted as it is (test/cli/demo.test.ts runs them).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Worker } from '../../consumer/index.ts';
import { cancel, enqueue, initQueue, listJobs, readLogs, type JobRequest } from '../../producer/index.ts';
import type { CliIo } from '../command.ts';
import { EXIT } from '../exit.ts';
import { shellQuoteArg } from '../shell-quote.ts';
import { formatBytes, formatDuration } from '../../base/units.ts';
import { jobsTable } from './status-run.ts';

interface DemoJob {
  label: string;
  request: JobRequest;
  /** Cancel it this long after it starts. */
  cancelAfterMs?: number;
}

/**
 * How to write the fsjob command in what the demo prints: `fsjob` when it runs
 * as a command of that name (npm link, npx, an installed package), else
 * `node` and the script it was started as, relative to the working directory
 * when it lies inside it (`node bin/fsjob.js` in a fresh clone).
 */
export function invokedAs(script: string | undefined = process.argv[1], cwd: string = process.cwd()): string {
  if (script === undefined || path.basename(script) === 'fsjob') return 'fsjob';
  const relative = path.relative(cwd, script);
  return `node ${shellQuoteArg(relative !== '' && !relative.startsWith('..') && !path.isAbsolute(relative) ? relative : script)}`;
}

/** The `fsjob enqueue` arguments that make `request` (the inverse of the enqueue command's flags; stdin comes from a pipe: `--stdin -`). */
export function enqueueArgs(request: JobRequest): string[] {
  const args: string[] = [];
  const flag = (name: string, value: string | number | undefined): void => {
    if (value !== undefined) args.push(`--${name}`, String(value));
  };
  flag('cwd', request.cwd);
  flag('timeout', request.timeout_ms === undefined ? undefined : formatDuration(request.timeout_ms));
  flag('kill-grace', request.kill_grace_ms === undefined ? undefined : formatDuration(request.kill_grace_ms));
  flag('max-attempts', request.max_attempts);
  flag('retry-delay', request.retry_delay_ms === undefined ? undefined : formatDuration(request.retry_delay_ms));
  flag('lane', request.lane ?? undefined);
  flag('dedupe', request.dedupe ?? undefined);
  flag('max-output', request.max_output_bytes === undefined ? undefined : formatBytes(request.max_output_bytes));
  if (request.stdin_text !== undefined || request.stdin_base64 !== undefined) args.push('--stdin', '-');
  if (request.argv !== undefined) {
    // The demo's own jobs hold text arguments; the byte form (SPEC-3) has no command line to show here.
    args.push('--');
    for (const arg of request.argv) {
      if (typeof arg !== 'string') throw new Error('the demo shows jobs with text arguments only');
      args.push(arg);
    }
  }
  return args;
}

/** `request` as a shell command line: `fsjob enqueue ...`, behind `printf ... |` when it has a standard input. */
function enqueueLine(fsjob: string, request: JobRequest): string {
  const line = `${fsjob} enqueue ${enqueueArgs(request).map(shellQuoteArg).join(' ')}`;
  if (request.stdin_text === undefined) return line;
  // printf '%s\n' for a last line break: a POSIX sh has no $'...' to quote one.
  const text = request.stdin_text;
  const lines = text.endsWith('\n') ? `'%s\\n' ${shellQuoteArg(text.slice(0, -1))}` : `'%s' ${shellQuoteArg(text)}`;
  return `printf ${lines} | ${line}`;
}

function demoJobs(scratch: string): DemoJob[] {
  return [
    { label: 'succeeds', request: { argv: ['sh', '-c', 'echo "hello from job $FSJOB_JOB_ID"'] } },
    { label: 'fails with exit 3', request: { argv: ['sh', '-c', 'echo "something went wrong" >&2; exit 3'] } },
    { label: 'times out after 1 s', request: { argv: ['sleep', '30'], timeout_ms: 1000, kill_grace_ms: 500 } },
    { label: 'is cancelled while it runs', request: { argv: ['sleep', '30'] }, cancelAfterMs: 300 },
    {
      label: 'fails once, then succeeds on its retry',
      request: { argv: ['sh', '-c', 'test -e retried || { touch retried; echo "first attempt fails" >&2; exit 1; }; echo "second attempt works"'], cwd: scratch, max_attempts: 2 },
    },
    { label: 'reads its stdin', request: { argv: ['tr', 'a-z', 'A-Z'], stdin_text: 'fsjob shouts what it reads\n' } },
    { label: 'runs in lane "deploy" (one at a time)', request: { argv: ['sh', '-c', 'echo deploy step 1; sleep 0.3'], lane: 'deploy' } },
    { label: 'runs in lane "deploy" after it', request: { argv: ['sh', '-c', 'echo deploy step 2; sleep 0.3'], lane: 'deploy' } },
  ];
}

interface DemoResult {
  queue: string;
  /** Whether the queue is still there afterwards. */
  kept: boolean;
  jobs: { job_id: string; label: string; outcome: string | null; exit_code: number | null }[];
}

async function runDemo(scratch: string, root: string, kept: boolean, io: CliIo): Promise<DemoResult> {
  const fsjob = invokedAs();
  const step = (line: string): void => io.stdout(`  $ ${line}\n`);
  const queue = await initQueue(root);
  io.stdout(`queue: ${queue.root}\n`);
  step(`export FSJOB_QUEUE=${shellQuoteArg(queue.root)}      # the default of --queue`);
  step(`${fsjob} init`);
  io.stdout('\nenqueued (each prints its id once the job is durable):\n');

  const jobs = demoJobs(scratch);
  const labels = new Map<string, string>();
  const cancelAfter = new Map<string, number>();
  for (const job of jobs) {
    step(enqueueLine(fsjob, job.request));
    const { id } = await enqueue(queue, job.request);
    labels.set(id, job.label);
    if (job.cancelAfterMs !== undefined) cancelAfter.set(id, job.cancelAfterMs);
    io.stdout(`    ${id}  ${job.label}\n`);
  }

  io.stdout('\nworker (3 at a time, until the queue is drained):\n');
  step(`${fsjob} work --concurrency 3 --drain`);
  const started = Date.now();
  const stamp = (): string => `${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s`;
  const pending: Promise<unknown>[] = [];
  const worker = new Worker({
    queues: [queue],
    concurrency: 3,
    mode: 'drain',
    onEvent: (event) => {
      if (event.type === 'started') {
        io.stdout(`  ${stamp()}  started   ${event.job_id}  attempt ${event.attempt}  (${labels.get(event.job_id) ?? ''})\n`);
        const delay = cancelAfter.get(event.job_id);
        if (delay !== undefined) {
          cancelAfter.delete(event.job_id);
          pending.push(
            new Promise((resolve) => setTimeout(resolve, delay)).then(async () => {
              await cancel(queue, event.job_id, { reason: 'the demo cancels it' });
              io.stdout(`  ${stamp()}  cancel    ${event.job_id}  requested: ${fsjob} cancel ${event.job_id} --reason 'the demo cancels it'\n`);
            }),
          );
        }
      } else if (event.type === 'finished') {
        io.stdout(`  ${stamp()}  finished  ${event.job_id}  ${event.outcome}, exit code ${event.exit_code}\n`);
      } else if (event.type === 'ended') {
        io.stdout(`  ${stamp()}  ended     ${event.job_id}  ${event.reason}: queued again for a retry\n`);
      }
    },
  });
  // Interrupted, the demo still ends cleanly (WORKER-3) and removes what it made.
  const interrupt = (): void => worker.stopNow();
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  try {
    await worker.run();
  } finally {
    process.off('SIGINT', interrupt);
    process.off('SIGTERM', interrupt);
  }
  await Promise.all(pending);

  const list = await listJobs(queue, {});
  io.stdout('\nstatus:\n');
  step(`${fsjob} status`);
  io.stdout(jobsTable(list.jobs, Date.now()));

  const first = [...labels.keys()][0] as string;
  const stdinJob = [...labels.entries()].find(([, label]) => label === 'reads its stdin')?.[0] ?? first;
  for (const id of [first, stdinJob]) {
    let text = '';
    for await (const chunk of readLogs(queue, id, {})) text += chunk.bytes.toString('utf8');
    io.stdout('\n');
    step(`${fsjob} logs ${id}`);
    io.stdout(`    ${text.trimEnd()}\n`);
  }

  // Each line works as it is, pasted where the demo ran: a kept queue is named, else the
  // user's own queue is the default one (--queue, FSJOB_QUEUE or ~/.local/state/fsjob/default).
  const q = kept ? ` -q ${shellQuoteArg(queue.root)}` : '';
  io.stdout(
    [
      '',
      kept ? `the queue is kept: ${queue.root}` : 'the demo queue was removed (fsjob demo --keep keeps it to explore)',
      `try next${fsjob === 'fsjob' ? '' : ` (${fsjob} is the fsjob command of this checkout; \`npm link\` here once puts it on PATH as fsjob)`}:`,
      ...(kept
        ? [`  ${fsjob} status${q} ${first.slice(20, 28)}      # one job in full, by a short id`, `  ${fsjob} validate${q}             # audit the queue: exit 0 only when clean`]
        : [`  ${fsjob} init                 # a queue of your own: ~/.local/state/fsjob/default, or -q DIR, or FSJOB_QUEUE=DIR`]),
      `  ${fsjob} enqueue${q} --env PATH --timeout 10m -- make test`,
      `  ${fsjob} work${q} --shutdown-grace 10m &      # a worker; SIGTERM lets running jobs finish`,
      `  ${fsjob} status${q} --status failed           # what failed; ${fsjob} retry ID runs one again`,
      '',
    ].join('\n'),
  );
  return {
    queue: queue.root,
    kept,
    jobs: list.jobs.map((job) => ({ job_id: job.id, label: labels.get(job.id) ?? '', outcome: job.outcome, exit_code: job.exitCode })),
  };
}

/** Runs `fsjob demo` with yargs' parsed arguments; resolves to the exit status. */
export async function runDemoCommand(args: Record<string, unknown>, io: CliIo): Promise<number> {
  const scratch = await mkdtemp(path.join(tmpdir(), 'fsjob-demo-'));
  const keep = args['keep'] === true;
  const json = args['json'] === true;
  const out = json ? { ...io, stdout: () => undefined } : io;
  try {
    const result = await runDemo(scratch, typeof args['queue'] === 'string' ? path.resolve(args['queue']) : path.join(scratch, 'queue'), keep || typeof args['queue'] === 'string', out);
    if (json) io.stdout(`${JSON.stringify({ queue: result.queue, kept: result.kept, jobs: result.jobs })}\n`);
    return EXIT.OK;
  } finally {
    if (!keep) await rm(scratch, { recursive: true, force: true });
  }
}
