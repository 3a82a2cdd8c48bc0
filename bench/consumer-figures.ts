/**
 * Consumer figures (not a test: timing belongs here, never in assertions).
 *
 *   node --import tsx bench/consumer-figures.ts [jobs=1000] [latency-samples=20]
 *
 * 1. Enqueue-to-receipt latency of one `true` job while an idle `fsjob work`
 *    process waits (fs.watch wake-up, claim, run, receipt).
 * 2. Throughput of `jobs` trivial `true` jobs drained by 1 and by 2
 *    `fsjob work --drain` processes (process start-up included, and reported).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync } from 'node:fs';
import { enqueue, freshQueue } from '../test/support/enqueue.ts';
import { cleanupAll } from '../test/support/helpers.ts';
import { publishRecord } from '../src/fs/safefs.ts';
import { FSJOB_BIN } from './lib/fsjob.ts';

const BIN = FSJOB_BIN;
const jobs = Number(process.argv[2] ?? 1000);
const samples = Number(process.argv[3] ?? 20);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] as number;

async function latency(): Promise<void> {
  const q = await freshQueue('fig-lat');
  const worker = spawn(process.execPath, [BIN, 'work', '--queue', q.root], { stdio: 'ignore' });
  while (readdirSync(q.paths.dir('workers')).filter((n) => n.endsWith('.json')).length === 0) await sleep(20);
  await sleep(500);
  const ms: number[] = [];
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now();
    const id = await enqueue(q, { argv: ['true'] });
    const receipt = q.paths.jobFile(id, 'receipt.json');
    while (!existsSync(receipt)) await sleep(1);
    ms.push(performance.now() - t0);
    await sleep(200); // idle again
  }
  worker.kill('SIGTERM');
  await once(worker, 'exit');
  console.log(`enqueue-to-receipt, idle worker, ${samples} samples: median ${pct(ms, 50).toFixed(1)} ms, p90 ${pct(ms, 90).toFixed(1)} ms, min ${Math.min(...ms).toFixed(1)} ms`);
}

async function startupMs(): Promise<number> {
  const q = await freshQueue('fig-start');
  const t0 = performance.now();
  const p = spawn(process.execPath, [BIN, 'work', '--queue', q.root, '--drain'], { stdio: 'ignore' });
  await once(p, 'exit');
  return performance.now() - t0;
}

async function throughput(workers: number): Promise<void> {
  const q = await freshQueue('fig-tp');
  for (let i = 0; i < jobs; i++) await enqueue(q, { argv: ['true'] });
  const t0 = performance.now();
  await Promise.all(Array.from({ length: workers }, () => once(spawn(process.execPath, [BIN, 'work', '--queue', q.root, '--drain'], { stdio: 'ignore' }), 'exit')));
  const ms = performance.now() - t0;
  const done = readdirSync(q.paths.dir('jobs')).filter((id) => existsSync(q.paths.jobFile(id, 'receipt.json'))).length;
  const start = await startupMs();
  console.log(
    `${jobs} \`true\` jobs, ${workers} worker process(es): ${(ms / 1000).toFixed(2)} s wall, ${((done / ms) * 1000).toFixed(0)} jobs/s ` +
      `(${((done / (ms - start)) * 1000).toFixed(0)} jobs/s without the ${start.toFixed(0)} ms start-up and exit of an empty drain); ${done} receipts`,
  );
}

/** The disk's cost of one publish (temp file, fsync, link, directory fsync) right now: context for the figures above. */
async function publishCost(): Promise<void> {
  const q = await freshQueue('fig-pub');
  const t0 = performance.now();
  for (let i = 0; i < 50; i++) await publishRecord(q.paths.dir('tmp'), `r${i}`, 'x\n', 'link', q.fsOptions);
  console.log(`one publishRecord (2 fsyncs) right now: ${((performance.now() - t0) / 50).toFixed(2)} ms; a command job costs 3 publishes, 2 output fsyncs and a fork`);
}

await publishCost();
await latency();
await throughput(1);
await throughput(2);
await cleanupAll();
