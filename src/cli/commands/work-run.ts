/** What `fsjob work` does once its options are parsed (commands/work.ts declares them). */
import type { CliIo } from '../command.ts';
import { EXIT } from '../exit.ts';
import { LEASE_MAX, LEASE_MIN, OUTPUT_MAX, TIMEOUT_MAX } from '../../base/constants.ts';
import { Worker } from '../../consumer/index.ts';
import { defaultQueuePath, openQueue } from '../../model/queue.ts';
import { formatDuration, parseBytes, parseDuration, parseInteger } from '../../base/units.ts';

/** --cgroup: DIR as given, `off`, or `auto` (the default): the worker's own cgroup when it is delegated to it (EXEC-16). */
async function containmentOf(value: string): Promise<{ dir?: string; why: string }> {
  if (value === 'off') return { why: '--cgroup off' };
  if (value !== 'auto') return { dir: value, why: '' };
  const { delegatedCgroup } = await import('../../consumer/cgroup.ts');
  const found = await delegatedCgroup();
  return 'base' in found ? { dir: found.base.dir, why: '' } : { why: `--cgroup auto: ${found.off}` };
}

async function defaultQueue(): Promise<string> {
  return defaultQueuePath();
}

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
    case 'pending':
      return `pending ${event.job_id} (generation ${event.gen}): ${PENDING_STEP[event.step]} was refused: ${event.reason}; trying again while the lease holds (RCPT-7)`;
    case 'left':
      return `unfinished ${event.job_id} (generation ${event.gen}): ${event.reason}; its claim stays open: once this worker is gone, fsjob recover ends it (RECOV-1)`;
    case 'skipped':
      return `skipped ${event.job_id}: ${event.reason}`;
    case 'guardian':
      return event.state === 'down' ? 'the guardian died; no command job is claimed until it is back (WORKER-2)' : 'the guardian is back';
    case 'spawner':
      return event.state === 'down'
        ? `the spawner died${event.reason === undefined ? '' : ` (${event.reason})`}; no command job is claimed until a new one answers`
        : event.state === 'restarted'
          ? 'the spawner is back'
          : `the spawner cannot run here (${event.reason ?? 'unknown reason'}); this process forks each command itself, which is slower`;
    case 'paused':
      return `${event.queue} is paused (pause.json exists): claiming nothing there until fsjob resume (PAUSE-1)`;
    case 'resumed':
      return `${event.queue} is resumed: claiming again`;
    case 'shutdown':
      return event.phase === 'draining'
        ? `${event.reason}: ${plural(event.running, 'running job')} get${event.running === 1 ? 's' : ''} up to ${formatDuration(event.grace_ms)} to finish (--shutdown-grace), then ${event.running === 1 ? 'it is' : 'they are'} stopped (WORKER-3)`
        : `${event.reason}: stopping ${plural(event.running, 'running job')} (SIGTERM, then SIGKILL after its kill grace); ${event.running === 1 ? 'it ends' : 'each ends'} with reason shutdown: requeued if an attempt remains, else lost (WORKER-3)`;
    case 'error':
      return `error${event.job_id === null ? '' : ` on ${event.job_id}`}: ${event.error.message}`;
  }
}

const PENDING_STEP = { receipt: 'publishing its receipt', end: 'publishing its end record', proof: 'proving its process group stopped (EXEC-11)' } as const;

const plural = (n: number, one: string): string => `${n} ${one}${n === 1 ? '' : 's'}`;

type GatedCounts = import('../../producer/gated-counts.ts').GatedCounts;

/** The summary in the records' snake_case (schemas/output/work.schema.json); `left` (drain and once modes) adds the held and blocked jobs left behind. */
function summaryJson(summary: import('../../consumer/worker.ts').WorkerSummary, gated: GatedCounts | undefined): Record<string, unknown> {
  return {
    worker_id: summary.workerId,
    claimed: summary.claimed,
    finished: summary.finished,
    ended: summary.ended,
    superseded: summary.superseded,
    unproven: summary.unproven,
    errors: summary.errors,
    left: summary.left,
    ...(gated === undefined ? {} : { held: gated.held, blocked: gated.blocked }),
  };
}

function summaryText(summary: import('../../consumer/worker.ts').WorkerSummary, gated: GatedCounts | undefined): string {
  const list = (counts: Record<string, number>): string =>
    Object.keys(counts).length === 0 ? 'none' : Object.entries(counts).map(([name, n]) => `${name} ${n}`).join(', ');
  return [
    `claimed ${summary.claimed}`,
    `finished: ${list(summary.finished)}`,
    `requeued: ${list(summary.ended)}`,
    ...(summary.superseded > 0 ? [`superseded: ${summary.superseded}`] : []),
    ...(summary.unproven > 0 ? [`left alone (unproven): ${summary.unproven}`] : []),
    ...(summary.errors > 0 ? [`errors: ${summary.errors}`] : []),
    ...(summary.left.length > 0 ? [`unfinished (claims left open): ${summary.left.map((job) => job.job_id).join(', ')}`] : []),
    ...(gated !== undefined && gated.held + gated.blocked > 0
      ? [`left waiting: ${gated.held} held (they run once released: fsjob release), ${gated.blocked} blocked (behind a dependency or a held job; fsjob status --status held blocked lists them)`]
      : []),
  ].join('\n') + '\n';
}

/**
 * A drain ends when nothing claimable remains, which is not an empty queue:
 * held jobs wait for fsjob release, blocked ones for a dependency. Read once,
 * after the worker is done, summed over its queues.
 */
async function gatedLeft(queues: readonly import('../../model/queue.ts').Queue[]): Promise<GatedCounts> {
  const { gatedCounts } = await import('../../producer/gated-counts.ts');
  const total: GatedCounts = { held: 0, blocked: 0 };
  for (const queue of queues) {
    const counts = await gatedCounts(queue);
    total.held += counts.held;
    total.blocked += counts.blocked;
  }
  return total;
}

/** Runs `fsjob work` with yargs' parsed arguments; resolves to the exit status. */
export async function runWork(args: Record<string, unknown>, io: CliIo): Promise<number> {
  const json = args['json'] === true;
  const queues = (args['queue'] as string[] | undefined) ?? [await defaultQueue()];
  const concurrency = parseInteger(args['concurrency'], 'concurrency', { min: 1, max: 1024 });
  const leaseMs = parseDuration(args['lease'], 'lease', { min: LEASE_MIN, max: LEASE_MAX });
  const shutdownGraceMs = parseDuration(args['shutdown-grace'], 'shutdown-grace', { min: 0, max: TIMEOUT_MAX });
  const maxOutput = args['max-output'] === undefined ? undefined : parseBytes(args['max-output'], 'max-output', { min: 0, max: OUTPUT_MAX });
  const allow = args['allow'] as string[] | undefined;
  const containment = await containmentOf(String(args['cgroup'] ?? 'auto'));
  const cgroup = containment.dir;
  const mode = args['drain'] === true ? 'drain' : args['once'] === true ? 'once' : 'serve';
  const stamped = args['log-time'] !== 'none';
  const log = (line: string, fields: Record<string, unknown>): void => {
    if (json) io.stderr(`${JSON.stringify({ time_ms: Date.now(), ...fields })}\n`);
    else io.stderr(`${stamped ? `${new Date().toISOString()} ` : ''}fsjob work: ${line}\n`);
  };
  // Each queue is opened (and so checked: SEC-1, LAYOUT-2) before the worker
  // says it serves it: a mistyped --queue fails with its reason alone.
  const opened = [];
  for (const queue of queues) opened.push(await openQueue(queue));
  // FS-2: an operation the filesystem cannot do left work undone; a drain
  // that met one must not exit 0 as if nothing remained.
  let lacked = false;
  const worker = new Worker({
    queues,
    concurrency,
    mode,
    leaseMs,
    shutdownGraceMs,
    ...(allow === undefined ? {} : { allow }),
    ...(cgroup === undefined ? {} : { cgroup }),
    ...(maxOutput === undefined ? {} : { maxOutputBytes: maxOutput }),
    onEvent: (event) => {
      if (event.type === 'error' && event.error.clause === 'FS-2') lacked = true;
      const line = describe(event);
      if (json) log('', event.type === 'error' ? { ...event, error: event.error.toJSON() } : event);
      else if (line !== null) log(line, {});
    },
  });
  // WORKER-3, and SIGHUP as SIGTERM (WORKER-6): a closed terminal or a
  // supervisor's hangup must not turn running jobs into losses. The handlers
  // stay installed until the worker is done: a second signal ends the grace
  // and stops the running jobs at once, through the same clean shutdown.
  let signals = 0;
  const onSignal = (name: NodeJS.Signals): void => {
    signals += 1;
    if (signals === 1) {
      log(`${name}: stopping; no new claims`, { type: 'signal', signal: name, action: 'drain' });
      worker.stop(name);
    } else {
      log(`${name} again: stopping the running jobs now`, { type: 'signal', signal: name, action: 'stop_now' });
      worker.stopNow();
    }
  };
  const handlers = (['SIGTERM', 'SIGINT', 'SIGHUP'] as const).map((name) => [name, () => onSignal(name)] as const);
  for (const [name, handler] of handlers) process.on(name, handler);
  try {
    const contained = cgroup !== undefined ? `commands contained in cgroup ${cgroup}` : `no cgroup containment (${containment.why}): a process that leaves its job's group can outlive the job`;
    log(`worker ${worker.id} (pid ${process.pid}) serving ${queues.join(', ')} in ${mode} mode; ${contained}`, {
      type: 'serving',
      worker_id: worker.id,
      pid: process.pid,
      queues,
      mode,
      cgroup: cgroup ?? null,
      ...(cgroup === undefined ? { cgroup_off: containment.why } : {}),
    });
    const summary = await worker.run();
    // Not in serve mode: it ends on a signal, with jobs of every kind left on purpose.
    const gated = mode === 'serve' ? undefined : await gatedLeft(opened);
    io.stdout(json ? `${JSON.stringify(summaryJson(summary, gated))}\n` : summaryText(summary, gated));
    return summary.left.length === 0 && !lacked ? EXIT.OK : EXIT.FAILURE;
  } finally {
    for (const [name, handler] of handlers) process.off(name, handler);
  }
}
