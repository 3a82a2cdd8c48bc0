/**
 * `fsjob status` on deep queues (issue 16, target 3: "a summary in under a
 * second" at 100,000 jobs): the default summary (the ready index's counts
 * over EXACT_COUNT_MAX jobs, the 20 newest examined), `--sort priority
 * --status queued` and `--sort duration` against `--exact` (one look at every
 * job: what the default was before), side by side in one run,
 * on a queue of N finished and one of N queued jobs (built by fill.c with
 * direct writes, bench/lib/fixtures.ts; kept under .scratch/ and reused).
 *
 *   node --import tsx bench/status.bench.ts [--jobs 100000] [--rounds 3] [--exact-rounds 1]
 *
 * Each figure is a fresh `node bin/fsjob.js status -q ROOT` (dist/, built
 * first when stale, as users run it; a start that fell back to tsx fails):
 * wall ms, and user + system CPU ms from GNU time; medians over the rounds,
 * the load average beside each. Nothing here asserts a time.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildQueue } from './lib/fixtures.ts';
import { fsjobTimed } from './lib/fsjob.ts';
import { median } from './lib/stats.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.dirname(HERE);

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? (process.argv[i + 1] as string) : fallback;
}

interface Figure {
  wall_ms: number;
  cpu_ms: number;
  load: number;
  first: string;
}

function status(root: string, extra: string[]): Figure {
  const load = loadavg()[0] ?? 0;
  const r = fsjobTimed(['status', '-q', root, ...extra], { cwd: REPO });
  return { wall_ms: r.wall_ms, cpu_ms: r.cpu_ms, load, first: r.stdout.split('\n')[0] ?? '' };
}

const jobs = Number(arg('jobs', '100000'));
const rounds = Number(arg('rounds', '3'));
const exactRounds = Number(arg('exact-rounds', '1'));
const scratch = path.join(REPO, '.scratch', 'status-bench');
mkdirSync(scratch, { recursive: true });

const rows: string[] = [];
for (const state of ['finished', 'queued'] as const) {
  const root = path.join(scratch, `${state}-${jobs}`);
  if (!existsSync(path.join(root, 'fsjob.json'))) {
    const seconds = await buildQueue(root, jobs, state, { handler: 'bench' }, scratch);
    process.stderr.write(`built ${jobs} ${state} jobs in ${seconds.toFixed(1)} s\n`);
  }
  status(root, []); // warm the caches once: every figure then reads from memory alike
  const modes = [
    ['summary (default)', [], rounds],
    // What runs next: ready/ walked in claim order, stopped at the limit (src/producer/list-order.ts).
    ['--sort priority --status queued', ['--sort', 'priority', '--status', 'queued'], rounds],
    // Every receipt read loosely, the 20 shown examined in full.
    ['--sort duration', ['--sort', 'duration'], rounds],
    ['--exact', ['--exact'], exactRounds],
  ] as const;
  for (const [mode, extra, n] of modes) {
    const figures: Figure[] = [];
    for (let i = 0; i < n; i++) {
      const figure = status(root, [...extra]);
      figures.push(figure);
      process.stderr.write(`  ${state} ${mode}: ${figure.wall_ms.toFixed(0)} ms wall, ${figure.cpu_ms.toFixed(0)} ms CPU, load ${figure.load.toFixed(1)}: ${figure.first}\n`);
    }
    const wall = median(figures.map((f) => f.wall_ms));
    const cpu = median(figures.map((f) => f.cpu_ms));
    rows.push(`| ${jobs.toLocaleString('en')} ${state} | ${mode} | ${wall.toFixed(0)} | ${cpu.toFixed(0)} | ${figures.map((f) => f.load.toFixed(1)).join(', ')} | ${figures[0]?.first ?? ''} |`);
  }
}
process.stdout.write(`\n| queue | mode | wall ms (median) | CPU ms (median) | load | first line |\n|---|---|---:|---:|---|---|\n${rows.join('\n')}\n`);
