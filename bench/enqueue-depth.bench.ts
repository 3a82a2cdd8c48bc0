/**
 * Enqueue with 100,000 queued (issue 16, target 3): the library's enqueue()
 * into a deep queue and into an empty one, alternating in one process, so
 * both see the same disk and load. The deep queue is status.bench.ts's
 * (.scratch/status-bench/queued-N, built by fill.c when missing); every
 * run adds its jobs to it.
 *
 *   node --import tsx bench/enqueue-depth.bench.ts [--jobs 100000] [--per 200] [--rounds 3]
 *
 * Figures: ms per job of wall time and of CPU (user + system of this
 * process), the load average beside each. Nothing here asserts a time.
 */
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { initQueue, openQueue } from '../src/model/queue.ts';
import { enqueue } from '../src/producer/index.ts';
import { buildQueue } from './lib/fixtures.ts';
import { costOf, median } from './lib/stats.ts';

const REPO = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? (process.argv[i + 1] as string) : fallback;
}

const jobs = Number(arg('jobs', '100000'));
const per = Number(arg('per', '200'));
const rounds = Number(arg('rounds', '3'));
const scratch = path.join(REPO, '.scratch', 'status-bench');
mkdirSync(scratch, { recursive: true });
const deepRoot = path.join(scratch, `queued-${jobs}`);
if (!existsSync(path.join(deepRoot, 'fsjob.json'))) await buildQueue(deepRoot, jobs, 'queued', { handler: 'bench' }, scratch);
const emptyRoot = path.join(scratch, 'empty');
rmSync(emptyRoot, { recursive: true, force: true });
await initQueue(emptyRoot);
const queues = [['deep', await openQueue(deepRoot)], ['empty', await openQueue(emptyRoot)]] as const;
const figures = new Map<string, number[]>();
for (let round = 0; round < rounds; round++) {
  for (const [name, queue] of queues) {
    const { cost } = await costOf(async () => {
      for (let i = 0; i < per; i++) await enqueue(queue, { argv: ['true'] });
    });
    const wall = cost.wall_us / 1000 / per;
    figures.set(name, [...(figures.get(name) ?? []), wall]);
    process.stdout.write(`round ${round + 1} ${name}: ${wall.toFixed(2)} ms/job wall, ${((cost.cpu_user_us + cost.cpu_system_us) / 1000 / per).toFixed(2)} ms/job CPU, load ${(loadavg()[0] ?? 0).toFixed(1)}\n`);
  }
}
const deep = median(figures.get('deep') ?? []);
const empty = median(figures.get('empty') ?? []);
process.stdout.write(`median ms/job: ${jobs.toLocaleString('en')} queued ${deep.toFixed(2)}, empty ${empty.toFixed(2)}: ${(deep / empty).toFixed(2)}x\n`);
