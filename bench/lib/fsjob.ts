/**
 * fsjob itself, measured as users run it: at library level (payload jobs,
 * src/producer enqueue and the src/consumer Worker, no command spawned) and
 * through `fsjob work` with command jobs.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { initQueue } from '../../src/model/queue.ts';
import { buildQueue } from './fixtures.ts';
import { latencySample, runCycle, type Ctx, type Sample, type System } from './harness.ts';
import { Peer, REPO_DIR, run, runJson, tsNode } from './proc.ts';
import { percentile } from './stats.ts';
import { timeCommand, type Timed, type TimedOptions } from './timed.ts';
import { metered } from './cgroup-cpu.ts';
import type { Sizes } from './baselines.ts';
import { ensureDist } from '../../tools/build/build.ts';
import { CONSUMER_PROCESSES, PROCESS_CONCURRENCY } from './targets-hotpath.ts';
import { WORK_CONCURRENCY } from './commands.ts';

export const FSJOB_DURABILITY = 'fsync per step (spec/writing.md, spec/producer.md, spec/claim.md and spec/running.md)';
/** The command in this checkout: it runs dist/, built first here (a JavaScript-only build when a source changed), so no start goes through tsx. */
export const FSJOB_BIN = path.join(REPO_DIR, 'bin', 'fsjob.js');
await ensureDist({ types: false });

/** What bin/fsjob.js prints on stderr when it runs the sources through tsx instead of dist/. */
export const TSX_FALLBACK = 'running them through tsx';

/**
 * `node bin/fsjob.js ARGS` timed (lib/timed.ts). bin/fsjob.js runs the
 * sources through tsx, a second slower per start, when dist/ is stale (a
 * source changed during the run): such a start is not the built command's
 * and fails here, with the note it printed.
 */
export function fsjobTimed(args: readonly string[], options: TimedOptions = {}): Timed {
  const r = timeCommand([process.execPath, FSJOB_BIN, ...args], options);
  if (r.stderr.includes(TSX_FALLBACK)) throw new Error(`fsjob ${args[0]} did not run the built command (dist/ went stale during the run: npm run build): ${r.stderr.trim().slice(0, 300)}`);
  return r;
}

/** Whether the reference producer and consumer are in this tree (they are merged from their branches). */
export async function fsjobMissing(): Promise<string | null> {
  for (const f of ['src/producer/index.ts', 'src/consumer/index.ts']) {
    if (!existsSync(path.join(REPO_DIR, f))) return `${f} is not in this tree yet (its branch is not merged)`;
  }
  return null;
}

async function freshQueue(ctx: Ctx, name: string): Promise<string> {
  const root = path.join(ctx.fresh(name), 'q');
  await initQueue(root);
  return root;
}

/** How the producer of a full cycle enqueues: one `enqueue` at a time, or `enqueueBatch`/`enqueueMany` calls of `size`. */
export type ProducerShape = { kind: 'enqueue' } | { kind: 'batch' | 'many'; size: number };

/**
 * The pool threads a consumer process gets: what spec/design-hot-path.md
 * advises for a Worker running `concurrency` jobs at once, 4 (libuv's
 * default) at least. Set in the child's environment, as a user would.
 */
export function poolFor(concurrency: number): NodeJS.ProcessEnv {
  return { ...process.env, UV_THREADPOOL_SIZE: String(Math.max(4, Math.min(128, concurrency))) };
}

/** One producer process and `consumers` consumer processes (each a Worker with `concurrency`), with their CPU per job. */
export async function fsjobCycle(root: string, n: number, consumers: number, concurrency: number, shape: ProducerShape = { kind: 'enqueue' }): Promise<Sample> {
  const flags = shape.kind === 'enqueue' ? [] : [`--${shape.kind}`, String(shape.size)];
  const producer = new Peer('fsjob producer', tsNode('fsjob-lib.ts', ['producer', root, String(n), ...flags]));
  const cs = Array.from(
    { length: consumers },
    (_, i) => new Peer(`fsjob consumer ${i}`, tsNode('fsjob-lib.ts', ['consumer', root, '--concurrency', String(concurrency)]), { env: poolFor(concurrency) }),
  );
  const r = await runCycle(producer, cs, n, true);
  return { rate: r.cycleRate, enqueue_rate: r.enqueueRate, cpu_ms: r.cpuMsPerJob, scans_per_job: r.scansPerJob, raced_per_job: r.racedPerJob, ...latencySample(r.latencies) };
}

export function fsjobLibrarySystems(size: Sizes): System[] {
  const n = size.fsjobJobs;
  const enqueueOnly = (id: string, label: string, shape: ProducerShape): System => ({
    id,
    label,
    durability: FSJOB_DURABILITY,
    refs: { floor: 'floor-enq', sqlite: 'sqlite-full-insert' },
    skip: fsjobMissing,
    run: async (ctx) => {
      const flags = shape.kind === 'enqueue' ? [] : [`--${shape.kind}`, String(shape.size)];
      const producer = new Peer('fsjob producer', tsNode('fsjob-lib.ts', ['producer', await freshQueue(ctx, id), String(n), ...flags]));
      const r = await runCycle(producer, [], n, false);
      return { rate: r.enqueueRate, cpu_ms: r.cpuMsPerJob };
    },
  });
  const out: System[] = [
    enqueueOnly('fsjob-enq', 'fsjob: enqueue only (library, 1 process, one `enqueue` at a time)', { kind: 'enqueue' }),
    enqueueOnly('fsjob-enq-many', 'fsjob: enqueue only (library, 1 process, `enqueueMany` of 64 requests)', { kind: 'many', size: 64 }),
  ];
  // Issue 24: consumers that scale. A serving Worker per process, concurrency 1.
  for (const consumers of CONSUMER_PROCESSES) {
    out.push({
      id: `fsjob-c${consumers}`,
      label: `fsjob: full cycle, ${consumers} consumer process${consumers > 1 ? 'es' : ''}`,
      durability: FSJOB_DURABILITY,
      refs: { floor: 'floor-1t', sqlite: `sqlite-full-c${Math.min(consumers, 8)}` },
      skip: fsjobMissing,
      run: async (ctx) => fsjobCycle(await freshQueue(ctx, `fsjob-c${consumers}`), size.scaleJobs, consumers, 1),
    });
  }
  // One process running many jobs at once (UV_THREADPOOL_SIZE as poolFor says).
  for (const concurrency of PROCESS_CONCURRENCY) {
    out.push({
      id: `fsjob-a${concurrency}`,
      label: `fsjob: full cycle, 1 consumer process with concurrency ${concurrency} (async)`,
      durability: FSJOB_DURABILITY,
      refs: { floor: 'floor-1t', sqlite: 'sqlite-full-c2' },
      skip: fsjobMissing,
      run: async (ctx) => fsjobCycle(await freshQueue(ctx, `fsjob-a${concurrency}`), size.scaleJobs, 1, concurrency),
    });
  }
  // The producer free to choose too: enqueueBatch shares the fsync of jobs/ among the lines of a batch (spec/producer.md, "Sharing step 8").
  out.push({
    id: 'fsjob-b16',
    label: 'fsjob: full cycle, 1 consumer process with concurrency 16 (async), producer enqueueBatch of 64 lines',
    durability: FSJOB_DURABILITY,
    refs: { floor: 'floor-1t', sqlite: 'sqlite-full-c2' },
    skip: fsjobMissing,
    run: async (ctx) => fsjobCycle(await freshQueue(ctx, 'fsjob-b16'), size.scaleJobs, 1, 16, { kind: 'batch', size: 64 }),
  });
  out.push({
    id: 'fsjob-latency',
    label: 'fsjob: enqueue-to-receipt latency, 1 idle consumer (fs.watch wake-up)',
    durability: FSJOB_DURABILITY,
    skip: fsjobMissing,
    run: async (ctx) => latencyRun(await freshQueue(ctx, 'fsjob-lat'), size.latencySamples, []),
  });
  return out;
}

/** Closed loop: one job at a time, the next after the previous one's receipt. */
async function latencyRun(root: string, samples: number, consumerFlags: readonly string[]): Promise<Sample> {
  const producer = new Peer('fsjob producer', tsNode('fsjob-lib.ts', ['producer', root, String(samples), '--latency']));
  const consumer = new Peer('fsjob consumer', tsNode('fsjob-lib.ts', ['consumer', root, ...consumerFlags]));
  const r = await runCycle(producer, [consumer], samples, true);
  return latencySample(r.latencies);
}

/** Polling only: fs.watch made unavailable in the consumer, which then polls at the Worker's default 1000 ms. */
export function fsjobPollSystem(samples: number): System {
  return {
    id: 'fsjob-latency-poll',
    label: 'fsjob: enqueue-to-receipt latency, 1 idle consumer, fs.watch unavailable (polling, pollMs 1000)',
    durability: FSJOB_DURABILITY,
    skip: fsjobMissing,
    run: async (ctx) => latencyRun(await freshQueue(ctx, 'fsjob-poll'), samples, ['--no-watch']),
  };
}

interface ReceiptTimes {
  outcome: string;
  started_ms: number | null;
  finished_ms: number;
}

function receiptsOf(root: string): ReceiptTimes[] {
  const jobs = path.join(root, 'jobs');
  const out: ReceiptTimes[] = [];
  for (const id of readdirSync(jobs)) {
    const file = path.join(jobs, id, 'receipt.json');
    if (existsSync(file)) out.push(JSON.parse(readFileSync(file, 'utf8')) as ReceiptTimes);
  }
  return out;
}

/** `workers` processes of `fsjob work --drain` over `root`, run to their end in one cgroup; the CPU of all their processes. */
async function drainWith(root: string, workers: number, concurrency: number): Promise<{ wallS: number; cpuMs: number }> {
  const t0 = performance.now();
  const { value: runs, cpuMs } = await metered((wrap) =>
    Promise.all(
      Array.from({ length: workers }, () => run(wrap([process.execPath, FSJOB_BIN, 'work', '--queue', root, '--drain', '--concurrency', String(concurrency)]), { timeoutMs: 600_000 })),
    ),
  );
  for (const r of runs) if (r.status !== 0) throw new Error(`fsjob work exited ${r.status}: ${r.stderr.trim().slice(-1500)}`);
  return { wallS: (performance.now() - t0) / 1000, cpuMs };
}

/**
 * `fsjob work --drain` processes over n queued `true` jobs; the rate is
 * taken from the receipts' own times. CPU per job: every process of the
 * run (the workers, their guardians and spawners, the commands), less the
 * start-up and shutdown of as many workers draining an empty queue.
 */
async function workRun(ctx: Ctx, name: string, n: number, workers: number, concurrency: number): Promise<Sample> {
  const idle = path.join(ctx.fresh(`${name}-idle`), 'q');
  await initQueue(idle);
  const startup = await drainWith(idle, workers, concurrency);
  const root = path.join(ctx.fresh(name), 'q');
  await buildQueue(root, n, 'queued', { argv: ['true'] }, ctx.fresh('templates'));
  const { wallS, cpuMs } = await drainWith(root, workers, concurrency);
  const receipts = receiptsOf(root);
  const ok = receipts.filter((r) => r.outcome === 'succeeded').length;
  if (receipts.length !== n || ok !== n) throw new Error(`fsjob work left ${receipts.length} receipts (${ok} succeeded) for ${n} jobs`);
  const finished = receipts.map((r) => r.finished_ms).sort((a, b) => a - b);
  const spanS = ((finished[finished.length - 1] as number) - (finished[0] as number)) / 1000;
  return { rate: (n - 1) / spanS, wall_rate: n / wallS, cpu_ms: (cpuMs - startup.cpuMs) / n };
}

export function fsjobCommandSystems(n: number, latencySamples: number): System[] {
  const work = (id: string, label: string, workers: number, concurrency: number): System => ({
    id,
    label,
    durability: FSJOB_DURABILITY,
    skip: fsjobMissing,
    run: (ctx) => workRun(ctx, id, n, workers, concurrency),
  });
  return [
    work('fsjob-work-1', 'fsjob work: 1 worker (`--drain`), command `true`', 1, 1),
    work('fsjob-work-2', 'fsjob work: 2 worker processes, command `true`', 2, 1),
    ...WORK_CONCURRENCY.map((k) => work(`fsjob-work-c${k}`, `fsjob work: 1 worker with --concurrency ${k}, command \`true\``, 1, k)),
    {
      id: 'fsjob-work-latency',
      label: 'fsjob work: enqueue-to-start latency, idle worker (fs.watch wake-up)',
      durability: FSJOB_DURABILITY,
      skip: fsjobMissing,
      run: async (ctx) => {
        const root = await freshQueue(ctx, 'fsjob-work-lat');
        const worker = new Peer('fsjob work', [process.execPath, FSJOB_BIN, 'work', '--queue', root]);
        try {
          const workers = path.join(root, 'workers');
          const deadline = Date.now() + 60_000;
          while (readdirSync(workers).length === 0) {
            if (Date.now() > deadline) throw new Error(`fsjob work did not register within 60 s: ${worker.stderrTail}`);
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
          const producer = new Peer('latency producer', tsNode('fsjob-lib.ts', ['cmd-latency', root, String(latencySamples)]));
          await producer.ready();
          producer.send('GO');
          const r = await producer.result<{ start_us: number[]; receipt_us: number[] }>();
          await producer.exit();
          return {
            p50_us: percentile(r.start_us, 50),
            p99_us: percentile(r.start_us, 99),
            receipt_p50_us: percentile(r.receipt_us, 50),
            receipt_p99_us: percentile(r.receipt_us, 99),
          };
        } finally {
          worker.kill('SIGTERM');
          await worker.exit();
        }
      },
    },
  ];
}

/** The CPU of a payload job (issue 16, target 2): bench/cpu-per-job.bench.ts in a child, its enqueue and consume phases per job. */
export function cpuPerJobSystem(n: number): System {
  type Part = { cpu_ms: number; user_ms: number; sys_ms: number; wall_ms: number };
  return {
    id: 'cpu-per-job',
    label: `fsjob: CPU per payload job, ${n} jobs enqueued, then run by a draining Worker (concurrency 1, no-op handler), one process`,
    durability: FSJOB_DURABILITY,
    skip: fsjobMissing,
    run: async (ctx) => {
      const r = await runJson<{ enqueue: Part; consume: Part }>(tsNode('cpu-per-job.bench.ts', [String(n), '--json', '--dir', ctx.fresh('cpu-per-job')]), { timeoutMs: 600_000 });
      const sample: Sample = { cpu_ms: r.enqueue.cpu_ms + r.consume.cpu_ms };
      for (const [side, part] of [['enqueue', r.enqueue], ['consume', r.consume]] as const) for (const [k, v] of Object.entries(part)) sample[`${side}_${k}`] = v;
      return sample;
    },
  };
}
