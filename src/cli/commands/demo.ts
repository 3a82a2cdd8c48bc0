/**
 * `fsjob demo`: the quickstart. It creates a queue in a temporary directory,
 * enqueues a handful of jobs that show what fsjob does (one succeeds, one
 * fails, one times out, one is cancelled while it runs, one is retried, one
 * reads stdin, two share a lane), runs a worker until the queue is drained,
 * prints the status table, and says what to try next. Nothing here is special:
 * it calls the same producer and consumer libraries the other commands use.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { JobRequest } from '../../producer/index.ts';
import type { FsjobCommand } from '../command.ts';
import { EXIT } from '../exit.ts';
import { jobsTable } from './status.ts';

interface DemoJob {
  label: string;
  request: JobRequest;
  /** Cancel it this long after it starts. */
  cancelAfterMs?: number;
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

export const demoCommand: FsjobCommand = {
  command: 'demo',
  describe: 'Watch jobs flow through a fresh queue: enqueue, run, time out, cancel, retry, status',
  builder: (yargs) =>
    yargs
      .option('queue', { alias: 'q', type: 'string', describe: 'Create the demo queue here (default: a new temporary directory)' })
      .example('$0 demo', 'run the quickstart in a temporary directory')
      .epilog('The queue is kept afterwards so you can explore it with the commands the demo prints.'),
  run: async (args, io) => {
    const { initQueue, enqueue, cancel, listJobs, readLogs } = await import('../../producer/index.ts');
    const { Worker } = await import('../../consumer/index.ts');
    const scratch = await mkdtemp(path.join(tmpdir(), 'fsjob-demo-'));
    const root = typeof args['queue'] === 'string' ? path.resolve(args['queue']) : path.join(scratch, 'queue');
    const { queue } = await initQueue(root);
    io.stdout(`queue: ${queue.root}\n\nenqueued:\n`);

    const jobs = demoJobs(scratch);
    const labels = new Map<string, string>();
    const cancelAfter = new Map<string, number>();
    for (const job of jobs) {
      const { id } = await enqueue(queue, job.request, { cwd: scratch });
      labels.set(id, job.label);
      if (job.cancelAfterMs !== undefined) cancelAfter.set(id, job.cancelAfterMs);
      io.stdout(`  ${id}  ${job.label}\n`);
    }

    io.stdout('\nworker (3 at a time, until the queue is drained):\n');
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
                io.stdout(`  ${stamp()}  cancel    ${event.job_id}  requested\n`);
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
    await worker.run();
    await Promise.all(pending);

    const list = await listJobs(queue, {});
    io.stdout(`\nstatus:\n${jobsTable(list.jobs, Date.now())}`);

    const first = [...labels.keys()][0] as string;
    const stdinJob = [...labels.entries()].find(([, label]) => label === 'reads its stdin')?.[0] ?? first;
    for (const id of [first, stdinJob]) {
      let text = '';
      for await (const chunk of readLogs(queue, id, {})) text += chunk.bytes.toString('utf8');
      io.stdout(`\nfsjob logs ${id}:\n  ${text.trimEnd()}\n`);
    }

    const q = `--queue ${queue.root}`;
    io.stdout(
      [
        '',
        'try next:',
        `  fsjob status ${q} ${first}      # one job in full: every generation, the receipt`,
        `  fsjob validate ${q}             # audit the queue: exit 0 only when clean`,
        `  fsjob enqueue ${q} --timeout 600 -- sleep 60`,
        `  fsjob work ${q} & sleep 2; kill -9 $!     # kill a worker mid-job...`,
        `  fsjob recover ${q}              # ...and recover it: exactly one receipt`,
        `  rm -rf ${scratch}               # when you are done`,
        '',
      ].join('\n'),
    );
    return EXIT.OK;
  },
};
