/**
 * CPU per payload job (issue 16, target 2), split by side: N jobs enqueued
 * through src/producer `enqueue`, then run by a Worker (concurrency 1, a
 * no-op handler) until each has its receipt, in this one process; the CPU
 * time (user + system, process.cpuUsage) of each phase divided by N, and
 * the wall time. --profile-out PREFIX writes a CPU profile of each phase
 * (PREFIX-enqueue.cpuprofile, PREFIX-consume.cpuprofile; the inspector's
 * sampler, started after the warm-up, so module loading stays out of it).
 *
 *   node --import tsx bench/cpu-per-job.bench.ts [N] [--src DIR] [--profile-out PREFIX]
 *
 * --src DIR takes the sources from another tree (see backlog.bench.ts
 * --before). Printed, never asserted.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const n = Number(process.argv[2] ?? 300);
const srcAt = process.argv.indexOf('--src');
const src = srcAt >= 0 ? (process.argv[srcAt + 1] as string) : path.join(path.dirname(path.dirname(new URL(import.meta.url).pathname)), 'src');
const load = (): string => loadavg().map((v) => v.toFixed(2)).join(' ');
const { initQueue } = (await import(pathToFileURL(path.join(src, 'model/queue.ts')).href)) as typeof import('../src/model/queue.ts');
const { enqueue } = (await import(pathToFileURL(path.join(src, 'producer/index.ts')).href)) as typeof import('../src/producer/index.ts');
const { Worker } = (await import(pathToFileURL(path.join(src, 'consumer/index.ts')).href)) as typeof import('../src/consumer/index.ts');

const dir = mkdtempSync(path.join(tmpdir(), 'fsjob-cpu-'));
const { queue } = await initQueue(path.join(dir, 'q'));
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

let cpu = process.cpuUsage();
let t = performance.now();
await phase('enqueue', async () => {
  for (let i = 0; i < n; i++) await enqueue(queue, { handler: 'bench', payload: { i, pad: 'x'.repeat(400) } });
});
const enq = process.cpuUsage(cpu);
const enqWall = performance.now() - t;
cpu = process.cpuUsage();
t = performance.now();
const worker = new Worker({ queues: [queue.root], commands: false, mode: 'drain' });
worker.handle('bench', () => ({}));
const summary = await phase('consume', () => worker.run());
const con = process.cpuUsage(cpu);
const conWall = performance.now() - t;
const ms = (u: NodeJS.CpuUsage): string => `${((u.user + u.system) / 1000 / n).toFixed(2)} CPU ms/job (user ${(u.user / 1000 / n).toFixed(2)}, sys ${(u.system / 1000 / n).toFixed(2)})`;
process.stdout.write(`enqueue: ${ms(enq)}, ${(enqWall / n).toFixed(2)} wall ms/job\n`);
process.stdout.write(`consume: ${ms(con)}, ${(conWall / n).toFixed(2)} wall ms/job; finished ${JSON.stringify(summary.finished)}\n`);
process.stdout.write(`load average ${load()}\n`);
session.disconnect();
rmSync(dir, { recursive: true, force: true });
