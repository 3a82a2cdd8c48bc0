/**
 * CPU per payload job (issue 16, target 2; issue 24, target 1), split by
 * side: N jobs enqueued through src/producer `enqueue`, then run by a Worker
 * (concurrency 1, a no-op handler) until each has its receipt, in this one
 * process; the CPU time (user + system, process.cpuUsage) of each phase
 * divided by N, and the wall time. The consume phase counts from the
 * Worker's first claim (its start-up is per process, not per job). --profile-out PREFIX writes a CPU profile of each phase
 * (PREFIX-enqueue.cpuprofile, PREFIX-consume.cpuprofile; the inspector's
 * sampler, started after the warm-up, so module loading stays out of it).
 *
 *   node --import tsx bench/cpu-per-job.bench.ts [N] [--src DIR] [--profile-out PREFIX] [--dir DIR] [--json]
 *
 * The library measured is this tree's dist/ (what users run); --src DIR
 * takes the sources of another tree through tsx (see backlog.bench.ts
 * --before), FSJOB_BENCH_SRC=1 this tree's. --dir DIR puts the queue in DIR and leaves it there (default: a
 * new directory under the OS temp directory, removed at the end); --json
 * prints one JSON line (what `npm run bench` reads: its "cpu" group).
 * Printed, never asserted.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { costOf, type Cost } from './lib/stats.ts';

const n = Number(process.argv[2] ?? 300);
const srcAt = process.argv.indexOf('--src');
const repo = path.dirname(path.dirname(new URL(import.meta.url).pathname));
// The library as users run it: this tree's built JavaScript (dist/, which `npm run bench` builds first;
// run `npm run build` before running this file alone), as bench/fsjob-lib.ts takes it. --src DIR or
// FSJOB_BENCH_SRC=1 takes sources through tsx instead (about a fifth more user CPU per consumed job).
const fromSrc = srcAt >= 0 || process.env['FSJOB_BENCH_SRC'] === '1';
const src = srcAt >= 0 ? (process.argv[srcAt + 1] as string) : path.join(repo, fromSrc ? 'src' : 'dist/src');
const ext = fromSrc ? 'ts' : 'js';
const load = (): string => loadavg().map((v) => v.toFixed(2)).join(' ');
const { enqueue, initQueue } = (await import(pathToFileURL(path.join(src, `producer/index.${ext}`)).href)) as typeof import('../src/producer/index.ts');
const { Worker } = (await import(pathToFileURL(path.join(src, `consumer/index.${ext}`)).href)) as typeof import('../src/consumer/index.ts');

const dirAt = process.argv.indexOf('--dir');
const dir = dirAt >= 0 ? (process.argv[dirAt + 1] as string) : mkdtempSync(path.join(tmpdir(), 'fsjob-cpu-'));
const queue = await initQueue(path.join(dir, 'q'));
// Warm-up: module code paths compiled before the figures start.
for (let i = 0; i < 5; i++) await enqueue(queue, { handler: 'bench', payload: { i } });
const w0 = new Worker({ queues: [queue.root], commands: false, mode: 'drain' });
w0.handle('bench', () => ({}));
await w0.run();

const profAt = process.argv.indexOf('--profile-out');
const profOut = profAt >= 0 ? process.argv[profAt + 1] : undefined;
const { Session } = await import('node:inspector');
const session = new Session();
session.connect();
const post = (method: string, params?: object): Promise<unknown> =>
  new Promise((resolve, reject) => session.post(method, params ?? {}, (error, result) => (error ? reject(error) : resolve(result))));
if (profOut !== undefined) {
  await post('Profiler.enable');
  await post('Profiler.setSamplingInterval', { interval: 200 });
}
async function phase<T>(name: string, body: () => Promise<T>): Promise<T> {
  if (profOut === undefined) return body();
  await post('Profiler.start');
  try {
    return await body();
  } finally {
    const { profile } = (await post('Profiler.stop')) as { profile: unknown };
    writeFileSync(`${profOut}-${name}.cpuprofile`, JSON.stringify(profile));
  }
}

const enq = await phase('enqueue', () =>
  costOf(async () => {
    for (let i = 0; i < n; i++) await enqueue(queue, { handler: 'bench', payload: { i, pad: 'x'.repeat(400) } });
  }),
);
// The consume phase counts from the Worker's first claim: its start-up (the
// FS-2 probe, READY-4's scan, its registration) is a cost per process, not per
// job, and the floor has none.
let fromClaim: { cpu: NodeJS.CpuUsage; t: number } | undefined;
const worker = new Worker({
  queues: [queue.root],
  commands: false,
  mode: 'drain',
  onEvent: (event) => {
    if (event.type === 'claimed') fromClaim ??= { cpu: process.cpuUsage(), t: performance.now() };
  },
});
worker.handle('bench', () => ({}));
const con = await phase('consume', async () => {
  const value = await worker.run();
  const first = fromClaim ?? { cpu: process.cpuUsage(), t: performance.now() };
  const used = process.cpuUsage(first.cpu);
  return { value, cost: { wall_us: (performance.now() - first.t) * 1000, cpu_user_us: used.user, cpu_system_us: used.system } as Cost };
});
session.disconnect();
if (dirAt < 0) rmSync(dir, { recursive: true, force: true });
const perJob = (c: Cost) => ({ cpu_ms: (c.cpu_user_us + c.cpu_system_us) / 1000 / n, user_ms: c.cpu_user_us / 1000 / n, sys_ms: c.cpu_system_us / 1000 / n, wall_ms: c.wall_us / 1000 / n });
if (process.argv.includes('--json')) {
  process.stdout.write(`${JSON.stringify({ jobs: n, enqueue: perJob(enq.cost), consume: perJob(con.cost), finished: con.value.finished })}\n`);
} else {
  const ms = (c: Cost): string => {
    const j = perJob(c);
    return `${j.cpu_ms.toFixed(2)} CPU ms/job (user ${j.user_ms.toFixed(2)}, sys ${j.sys_ms.toFixed(2)}), ${j.wall_ms.toFixed(2)} wall ms/job`;
  };
  process.stdout.write(`enqueue: ${ms(enq.cost)}\n`);
  process.stdout.write(`consume: ${ms(con.cost)}; finished ${JSON.stringify(con.value.finished)}\n`);
  process.stdout.write(`load average ${load()}\n`);
}
