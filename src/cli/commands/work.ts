/** `fsjob work`: run a consumer (src/consumer Worker) over one or more queues. */
import type { FsjobCommand } from '../command.ts';
import { EXIT } from '../exit.ts';
import { FsjobError } from '../../base/errors.ts';

const SYSTEMD_UNIT = `Keep a worker running under systemd (a user unit, ~/.config/systemd/user/fsjob-work.service):

  [Unit]
  Description=fsjob worker
  [Service]
  ExecStart=/usr/bin/env fsjob work --queue %h/.local/state/fsjob/default --concurrency 2
  Restart=on-failure
  RestartSec=2
  # SIGTERM to the worker alone: it stops its own commands (WORKER-3) ...
  KillMode=mixed
  # ... within CANCEL_GRACE (10 s) plus each job's kill grace: give it longer.
  TimeoutStopSec=30
  [Install]
  WantedBy=default.target

then: systemctl --user enable --now fsjob-work. If the worker is killed, its guardian stops its
commands within 10 s (WORKER-2) and the restarted worker recovers the orphaned jobs (RECOV-2).`;

export const workCommand: FsjobCommand = {
  command: 'work',
  describe: 'Claim and run jobs: until stopped (SIGTERM/SIGINT), until the queue is drained (--drain), or one job (--once)',
  builder: (yargs) =>
    yargs
      .option('queue', {
        describe: 'Queue directory to serve; repeat to serve several round-robin (default: $FSJOB_QUEUE, else ~/.local/state/fsjob/default)',
        type: 'string',
        array: true,
      })
      .option('concurrency', { describe: 'Jobs run at once (1 to 1024)', type: 'number', default: 1 })
      .option('drain', { describe: 'Exit 0 once no job remains that this worker can make progress on (retry delays are waited out; jobs held by other live consumers are not)', type: 'boolean' })
      .option('once', { describe: 'Run one job, then exit 0', type: 'boolean' })
      .conflicts('drain', 'once')
      .option('allow', {
        describe: `Run only commands this glob allows; repeatable. A pattern without "/" matches argv[0] as written, which then runs as found in this worker's own PATH (never the job's); a pattern with "/" matches that resolved path, or an argv[0] written with a "/". Jobs setting LD_*, DYLD_*, GCONV_PATH, BASH_ENV or ENV are refused (EXEC-15). "*" and "?" stop at "/", "**" crosses it, [a-z] and [!a-z] are sets. Refused jobs get a rejected receipt (not_allowed, EXEC-9)`,
        type: 'string',
        array: true,
      })
      .option('max-output', { describe: 'Bytes kept per output stream at most; a job keeps min(its max_output_bytes, this)', type: 'number' })
      .option('lease', { describe: 'Lease of claims and of the worker registration, in seconds (3 to 3600)', type: 'number', default: 30 })
      .option('json', { describe: 'Progress as JSON lines on stderr and the summary as JSON on stdout', type: 'boolean', default: false })
      .example('$0 work --drain', 'run everything runnable in the default queue, then exit')
      .example("$0 work --queue /srv/q --concurrency 4 --allow 'make' --allow '/usr/local/bin/*'", 'serve a queue, running only make and /usr/local/bin/* commands')
      .epilog(`${SYSTEMD_UNIT}\n\nExit status: 0 when drained, after --once, and after a clean shutdown on SIGTERM or SIGINT; 1 when the queue cannot be used.`),
  run: async (args, io) => {
    const { Worker } = await import('../../consumer/worker.ts');
    const { defaultQueuePath } = await import('../../model/queue.ts');
    const json = args['json'] === true;
    const queues = (args['queue'] as string[] | undefined) ?? [defaultQueuePath()];
    const concurrency = args['concurrency'] as number;
    const lease = args['lease'] as number;
    if (!Number.isFinite(lease)) throw new FsjobError('USAGE', '--lease takes a number of seconds');
    const maxOutput = args['max-output'] as number | undefined;
    if (maxOutput !== undefined && (!Number.isSafeInteger(maxOutput) || maxOutput < 0)) throw new FsjobError('USAGE', '--max-output takes a byte count');
    const allow = args['allow'] as string[] | undefined;
    const mode = args['drain'] === true ? 'drain' : args['once'] === true ? 'once' : 'serve';
    const worker = new Worker({
      queues,
      concurrency,
      mode,
      leaseMs: Math.round(lease * 1000),
      ...(allow === undefined ? {} : { allow }),
      ...(maxOutput === undefined ? {} : { maxOutputBytes: maxOutput }),
      onEvent: (event) => {
        if (json) {
          io.stderr(`${JSON.stringify(event.type === 'error' ? { ...event, error: event.error.toJSON() } : event)}\n`);
          return;
        }
        const line = describe(event);
        if (line !== null) io.stderr(`fsjob work: ${line}\n`);
      },
    });
    // WORKER-3. The handlers stay installed until the worker is done, so a second
    // signal (a supervisor repeating itself) cannot kill the shutdown half-way.
    const stop = (): void => worker.stop();
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    try {
      if (!json) io.stderr(`fsjob work: worker ${worker.id} (pid ${process.pid}) serving ${queues.join(', ')} in ${mode} mode\n`);
      const summary = await worker.run();
      io.stdout(json ? `${JSON.stringify(summary)}\n` : summaryText(summary));
      return EXIT.OK;
    } finally {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
    }
  },
};

type Event = import('../../consumer/context.ts').ConsumerEvent;

function describe(event: Event): string | null {
  switch (event.type) {
    case 'claimed':
      return `claimed ${event.job_id} (generation ${event.gen}${event.recovered ? ', recovered from a dead owner' : ''})`;
    case 'started':
      return null;
    case 'finished':
      return `finished ${event.job_id}: ${event.outcome} (exit ${event.exit_code}${event.reason === null ? '' : `, ${event.reason}`}, attempts ${event.attempts})`;
    case 'ended':
      return `requeued ${event.job_id}: ${event.reason}, runnable from ${new Date(event.retry_at_ms).toISOString()}`;
    case 'superseded':
      return `lost ${event.job_id}: claim ${event.gen} was superseded; its command was killed and nothing was published (OWN-1)`;
    case 'unproven':
      return `left alone ${event.job_id} (generation ${event.gen}): ${event.reason} (${event.clause})`;
    case 'skipped':
      return `skipped ${event.job_id}: ${event.reason}`;
    case 'guardian':
      return event.state === 'down' ? 'the guardian died; no command job is claimed until it is back (WORKER-2)' : 'the guardian is back';
    case 'error':
      return `error${event.job_id === null ? '' : ` on ${event.job_id}`}: ${event.error.message}`;
  }
}

function summaryText(summary: import('../../consumer/worker.ts').WorkerSummary): string {
  const list = (counts: Record<string, number>): string =>
    Object.keys(counts).length === 0 ? 'none' : Object.entries(counts).map(([name, n]) => `${name} ${n}`).join(', ');
  return [
    `claimed ${summary.claimed}`,
    `finished: ${list(summary.finished)}`,
    `requeued: ${list(summary.ended)}`,
    ...(summary.superseded > 0 ? [`superseded: ${summary.superseded}`] : []),
    ...(summary.unproven > 0 ? [`left alone (unproven): ${summary.unproven}`] : []),
    ...(summary.errors > 0 ? [`errors: ${summary.errors}`] : []),
  ].join('\n') + '\n';
}
