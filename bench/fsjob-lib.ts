/**
 * fsjob at library level: payload jobs through src/producer `enqueue` and the
 * src/consumer Worker's handler API (no command is spawned). Children of
 * bench/run.ts speaking the READY/GO/STOP protocol of lib/proc.ts.
 *
 *   producer <queue> <n> [--latency] [--batch k] [--many k]  enqueue n payload jobs (--latency: each after the previous has its receipt; --batch: k lines per enqueueBatch call; --many: k requests per enqueueMany call)
 *   consumer <queue> [--concurrency k] a Worker serving handler `bench` until STOP; prints `D k` for the k receipts of every few ms
 *   claim <queue> <samples> [--profile-out F]  claim latency: enqueue one job, time claimNext(), complete it; repeat
 *                                      (after 2 unmeasured warm-up jobs; F: a CPU profile of the measured loop only)
 *   start <queue>                      how long a Worker takes to start (its READY-4 scan of jobs/)
 *   cmd-latency <queue> <samples>      enqueue `date +%s%N` for an idle `fsjob work`; start = the time date printed
 *   enqueue-cost <queue> <n>           wall and CPU time of n enqueue() calls (payload jobs) into an existing queue
 *   batch <queue> <size> <jobs>        wall and CPU time of enqueueBatch() calls of <size> lines each, <jobs> in all
 *                                      (both after 2 unmeasured warm-up jobs in a queue of their own beside <queue>)
 *
 * consumer takes --no-watch to make fs.watch unavailable (as on a filesystem
 * without inotify), so the Worker finds jobs only by polling every --poll-ms
 * (its default 1000); the consumer library has no switch of its own for that.
 *
 * Latencies are wall-clock microseconds from just before enqueue() was called
 * (the payload carries that instant) to the handler's start (start_us) and to
 * the consumer's `finished` event, which follows the receipt's link and
 * directory fsync (latencies_us).
 */
import fs, { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import path from 'node:path';
import { childProtocol, childResult } from './lib/proc.ts';
import { costOf, cpuSince, percentile, wallMicros } from './lib/stats.ts';

// --no-watch must take effect before the consumer module binds node:fs's watch.
if (process.argv.includes('--no-watch')) {
  fs.watch = (() => {
    throw Object.assign(new Error('fs.watch disabled by the bench (--no-watch)'), { code: 'ENOSYS' });
  }) as unknown as typeof fs.watch;
  syncBuiltinESMExports();
}
// The library as users run it: the built JavaScript of dist/ (bench/lib/fsjob.ts builds it
// first when stale); FSJOB_BENCH_SRC=1 takes the sources instead (through tsx).
const lib = process.env['FSJOB_BENCH_SRC'] === '1' ? { consumer: '../src/consumer/index.ts', producer: '../src/producer/index.ts' } : { consumer: '../dist/src/consumer/index.js', producer: '../dist/src/producer/index.js' };
const { claimNext, Worker } = (await import(lib.consumer)) as typeof import('../src/consumer/index.ts');
const { enqueue, enqueueBatch, enqueueMany, initQueue, openQueue, waitFor } = (await import(lib.producer)) as typeof import('../src/producer/index.ts');


const HANDLER = 'bench';

type BenchPayload = {
  created_us: number;
  seq: number;
  pad: string;
};

function payload(seq: number): BenchPayload {
  // About as many bytes as the SQLite baseline's payload.
  return { created_us: wallMicros(), seq, pad: 'x'.repeat(400) };
}

/**
 * Between two latency samples: 50 to 250 ms at random, so the consumer has
 * finished its rescan after the previous receipt and sleeps (idle), and a
 * polling consumer is caught at a random phase of its poll period.
 */
const idleGap = () => new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 200));

async function producer(root: string, n: number, latencyMode: boolean, batch = 0, many = 0): Promise<void> {
  const queue = await openQueue(root);
  await warmUp(root, WARM_UP_JOBS);
  const proto = childProtocol();
  await proto.go;
  const cpu0 = process.cpuUsage();
  const t0 = wallMicros();
  const enqueueUs: number[] = [];
  const group = many > 0 ? many : batch;
  if (group > 0) {
    // Groups of `group` jobs through one enqueueMany (request objects) or enqueueBatch (request lines) call; a job's latency starts when its call does.
    for (let i = 0; i < n; i += group) {
      const start = wallMicros();
      const requests = Array.from({ length: Math.min(group, n - i) }, (_, k) => ({ handler: HANDLER, payload: { ...payload(i + k), created_us: start } }));
      const results = many > 0 ? await enqueueMany(queue, requests) : await enqueueBatch(queue, requests.map((request) => JSON.stringify(request)));
      const refused = results.find((result) => 'error' in result);
      if (refused !== undefined && 'error' in refused) throw refused.error;
      const us = (wallMicros() - start) / requests.length;
      for (let k = 0; k < requests.length; k++) enqueueUs.push(us);
    }
  }
  for (let i = 0; i < (group > 0 ? 0 : n); i++) {
    const start = wallMicros();
    const { id } = await enqueue(queue, { handler: HANDLER, payload: { ...payload(i), created_us: start } });
    enqueueUs.push(wallMicros() - start);
    if (latencyMode) {
      await waitFor(queue, id, { pollMs: 50 });
      await idleGap();
    }
  }
  const t1 = wallMicros();
  childResult({ t0_us: t0, t1_us: t1, n, cpu_us: cpuSince(cpu0), enqueue_p50_us: percentile(enqueueUs, 50), enqueue_p99_us: percentile(enqueueUs, 99) });
}

async function consumer(root: string, concurrency: number, pollMs: number): Promise<void> {
  await warmUp(root, WARM_UP_JOBS, true);
  const created = new Map<string, number>();
  const latencies: number[] = [];
  const starts: number[] = [];
  let done = 0;
  let lastUs = 0;
  let unreported = 0;
  let reportTimer: NodeJS.Timeout | undefined;
  const report = (): void => {
    reportTimer = undefined;
    if (unreported > 0) process.stdout.write(`D ${unreported}\n`);
    unreported = 0;
  };
  const worker = new Worker({
    queues: [root],
    concurrency,
    commands: false,
    mode: 'serve',
    pollMs,
    onEvent: (event) => {
      if (event.type === 'finished') {
        lastUs = wallMicros();
        const c = created.get(event.job_id);
        if (c !== undefined) latencies.push(lastUs - c);
        created.delete(event.job_id);
        done++;
        unreported++;
        // One line for the receipts of a few ms (lib/proc.ts counts `D k`): a write to the parent per
        // receipt cost this process more CPU than a payload job's own system calls.
        reportTimer ??= setTimeout(report, REPORT_MS);
      } else if (event.type === 'error') {
        process.stderr.write(`fsjob-lib consumer: ${event.error.message}\n`);
      }
    },
  });
  if (process.argv.includes('--no-watch')) process.stderr.write(`fsjob-lib consumer: fs.watch is ${fs.watch.name === 'watch' ? 'STILL ACTIVE' : 'disabled'}\n`);
  worker.handle(HANDLER, (ctx) => {
    const p = ctx.payload as unknown as BenchPayload;
    const now = wallMicros();
    created.set(ctx.jobId, p.created_us);
    starts.push(now - p.created_us);
    return { seq: p.seq };
  });
  const running = worker.run();
  // READY once the worker is set up: it registers after its READY-4 scan.
  const registration = path.join(root, 'workers', `${worker.id}.json`);
  while (!existsSync(registration)) await new Promise((resolve) => setTimeout(resolve, 5));
  const proto = childProtocol();
  proto.onStop(() => worker.stop());
  await proto.go;
  const cpu0 = process.cpuUsage();
  const summary = await running;
  clearTimeout(reportTimer);
  report();
  childResult({ done, last_us: lastUs, cpu_us: cpuSince(cpu0), scans: summary.scans, raced: summary.raced, latencies_us: latencies, start_us: starts });
}

/** The steady-state CPU profile of a run, through the inspector, so start-up and module loading stay out of it. */
async function profiled<T>(out: string | undefined, body: () => Promise<T>): Promise<T> {
  if (out === undefined) return body();
  const { Session } = await import('node:inspector');
  const session = new Session();
  session.connect();
  const post = (method: string, params?: object) =>
    new Promise<unknown>((resolve, reject) => session.post(method, params ?? {}, (error, result) => (error ? reject(error) : resolve(result))));
  await post('Profiler.enable');
  await post('Profiler.setSamplingInterval', { interval: 200 });
  await post('Profiler.start');
  try {
    return await body();
  } finally {
    const { profile } = (await post('Profiler.stop')) as { profile: unknown };
    writeFileSync(out, JSON.stringify(profile));
    session.disconnect();
  }
}

async function claim(root: string, samples: number, profileOut: string | undefined): Promise<void> {
  const queue = await openQueue(root);
  // Warm-up, not measured: the first job pays for lazy schema compilation and module loading.
  for (let i = 0; i < 2; i++) {
    await enqueue(queue, { handler: HANDLER, payload: payload(i) });
    const job = await claimNext(queue, { handlers: [HANDLER] });
    await job?.complete({ result: null });
  }
  const proto = childProtocol();
  await proto.go;
  await profiled(profileOut, () => claimLoop(queue, samples));
}

async function claimLoop(queue: Awaited<ReturnType<typeof openQueue>>, samples: number): Promise<void> {
  const enqueueUs: number[] = [];
  const claimUs: number[] = [];
  const completeUs: number[] = [];
  const cpu0 = process.cpuUsage();
  const t0all = wallMicros();
  for (let i = 0; i < samples; i++) {
    const e0 = wallMicros();
    await enqueue(queue, { handler: HANDLER, payload: payload(i) });
    const t0 = wallMicros();
    const job = await claimNext(queue, { handlers: [HANDLER] });
    const t1 = wallMicros();
    if (job === null) throw new Error('claim: claimNext found no job although one was just enqueued');
    await job.complete({ result: null });
    enqueueUs.push(t0 - e0);
    claimUs.push(t1 - t0);
    completeUs.push(wallMicros() - t1);
  }
  const wallUs = wallMicros() - t0all;
  const cpu = process.cpuUsage(cpu0);
  childResult({
    samples,
    enqueue_us: enqueueUs,
    claim_us: claimUs,
    // claimNext() records the execution too (the exec record); complete() publishes the receipt.
    complete_us: completeUs,
    claim_complete_us: claimUs.map((c, i) => c + (completeUs[i] as number)),
    wall_us: wallUs,
    cpu_user_us: cpu.user,
    cpu_system_us: cpu.system,
  });
}

async function start(root: string): Promise<void> {
  const proto = childProtocol();
  await proto.go;
  const t0 = performance.now();
  const worker = new Worker({ queues: [root], commands: false, mode: 'serve' });
  worker.handle(HANDLER, () => null);
  const running = worker.run();
  const registration = path.join(root, 'workers', `${worker.id}.json`);
  while (!existsSync(registration)) await new Promise((resolve) => setTimeout(resolve, 2));
  const ms = performance.now() - t0;
  worker.stop();
  await running;
  childResult({ start_ms: ms });
}

async function commandLatency(root: string, samples: number): Promise<void> {
  const queue = await openQueue(root);
  const proto = childProtocol();
  await proto.go;
  const startUs: number[] = [];
  const receiptUs: number[] = [];
  for (let i = 0; i < samples; i++) {
    await idleGap(); // the worker is idle, waiting
    const t0 = wallMicros();
    const { id } = await enqueue(queue, { argv: ['date', '+%s%N'] });
    const receipt = await waitFor(queue, id, { pollMs: 20 });
    receiptUs.push(wallMicros() - t0);
    if (receipt.outcome !== 'succeeded') throw new Error(`cmd-latency: job ${id} ${receipt.outcome}`);
    const printed = readFileSync(path.join(root, 'jobs', id, `stdout.${receipt.gen}`), 'utf8').trim();
    startUs.push(Number(BigInt(printed) / 1000n) - t0);
  }
  childResult({ samples, start_us: startUs, receipt_us: receiptUs });
}

/**
 * A queue of its own beside root, where the first jobs of a process (lazy
 * compilation, module loading) go unmeasured: `jobs` enqueued, and with
 * `consume` run by a draining Worker too, so a consumer's claim and receipt
 * paths are compiled before GO (each of 16 consumer processes would
 * otherwise pay its JIT inside the measurement).
 */
async function warmUp(root: string, jobs = 2, consume = false): Promise<void> {
  const queue = await initQueue(path.join(path.dirname(root), `warm-up-${process.pid}`));
  for (let i = 0; i < jobs; i++) await enqueue(queue, { handler: HANDLER, payload: payload(i) });
  if (!consume) return;
  const worker = new Worker({ queues: [queue], commands: false, mode: 'drain' });
  worker.handle(HANDLER, (ctx) => ({ seq: (ctx.payload as unknown as BenchPayload).seq }));
  await worker.run();
}

/** How long a consumer gathers receipts before it reports them to the parent (one `D k` line). */
const REPORT_MS = 5;

/** Jobs a producer or consumer process runs before READY (warmUp). */
const WARM_UP_JOBS = 30;

async function enqueueCost(root: string, n: number): Promise<void> {
  const queue = await openQueue(root);
  await warmUp(root);
  const proto = childProtocol();
  await proto.go;
  const { cost } = await costOf(async () => {
    for (let i = 0; i < n; i++) await enqueue(queue, { handler: HANDLER, payload: payload(i) });
  });
  childResult({ jobs: n, ...cost });
}

async function batch(root: string, size: number, jobs: number): Promise<void> {
  const queue = await openQueue(root);
  await warmUp(root);
  const lines = Array.from({ length: size }, (_, i) => JSON.stringify({ handler: HANDLER, payload: payload(i) }));
  const proto = childProtocol();
  await proto.go;
  let refused = 0;
  const { cost } = await costOf(async () => {
    for (let done = 0; done < jobs; done += size) for (const r of await enqueueBatch(queue, lines)) if ('error' in r) refused++;
  });
  if (refused > 0) throw new Error(`batch: enqueueBatch refused ${refused} lines`);
  childResult({ jobs: Math.ceil(jobs / size) * size, calls: Math.ceil(jobs / size), ...cost });
}

const [mode, root, ...rest] = process.argv.slice(2);
if (root === undefined) throw new Error('usage: fsjob-lib.ts <producer|consumer|claim> <queue> ...');
const option = (name: string, fallback: number): number => {
  const i = rest.indexOf(name);
  return i >= 0 ? Number(rest[i + 1]) : fallback;
};
if (mode === 'producer') await producer(root, Number(rest[0]), rest.includes('--latency'), option('--batch', 0), option('--many', 0));
else if (mode === 'consumer') await consumer(root, option('--concurrency', 1), option('--poll-ms', 1000));
else if (mode === 'claim') await claim(root, Number(rest[0]), rest.includes('--profile-out') ? rest[rest.indexOf('--profile-out') + 1] : undefined);
else if (mode === 'start') await start(root);
else if (mode === 'cmd-latency') await commandLatency(root, Number(rest[0]));
else if (mode === 'enqueue-cost') await enqueueCost(root, Number(rest[0]));
else if (mode === 'batch') await batch(root, Number(rest[0]), Number(rest[1]));
else throw new Error(`unknown mode ${mode}`);
process.exit(0);
