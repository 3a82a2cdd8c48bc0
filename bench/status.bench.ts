/**
 * `fsjob status` on deep queues (issue 16, target 3: "a summary in under a
 * second" at 100,000 jobs): the default summary (the ready index's counts
 * over EXACT_COUNT_MAX jobs, the 20 newest examined) against `--exact` (one
 * look at every job: what the default was before), side by side in one run,
 * on a queue of N finished and one of N queued jobs (built by fill.c with
 * direct writes, bench/lib/fixtures.ts; kept under .scratch/ and reused).
 *
 *   node --import tsx bench/status.bench.ts [--jobs 100000] [--rounds 3] [--exact-rounds 1]
 *
 * Each figure is a fresh `node bin/fsjob.js status -q ROOT` (dist/ when it
 * is built, as users run it): wall ms, and user + system CPU ms from GNU
 * time; medians over the rounds, the load average beside each. Nothing here
 * asserts a time.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildQueue } from './lib/fixtures.ts';
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
  const t0 = performance.now();
  const r = spawnSync('/usr/bin/time', ['-f', 'CPU %U %S', process.execPath, path.join(REPO, 'bin', 'fsjob.js'), 'status', '-q', root, ...extra], { cwd: REPO, encoding: 'utf8', maxBuffer: 1 << 28 });
  const wall = performance.now() - t0;
  const m = /CPU ([0-9.]+) ([0-9.]+)\s*$/.exec(r.stderr);
  if (r.status !== 0 || m === null) throw new Error(`fsjob status failed (${r.status}): ${r.stderr.slice(-500)}`);
  return { wall_ms: wall, cpu_ms: (Number(m[1]) + Number(m[2])) * 1000, load, first: r.stdout.split('\n')[0] ?? '' };
}

const jobs = Number(arg('jobs', '100000'));
const rounds = Number(arg('rounds', '3'));
const exactRounds = Number(arg('exact-rounds', '1'));
const scratch = path.join(REPO, '.scratch', 'status-bench');
mkdirSync(scratch, { recursive: true });
if (!existsSync(path.join(REPO, 'dist', 'bin', 'fsjob.js'))) process.stderr.write('note: dist/ is not built: fsjob runs through tsx (npm run build first for the figures users see)\n');

const rows: string[] = [];
for (const state of ['finished', 'queued'] as const) {
  const root = path.join(scratch, `${state}-${jobs}`);
  if (!existsSync(path.join(root, 'fsjob.json'))) {
    const seconds = await buildQueue(root, jobs, state, { handler: 'bench' }, scratch);
    process.stderr.write(`built ${jobs} ${state} jobs in ${seconds.toFixed(1)} s\n`);
  }
  status(root, []); // warm the caches once: every figure then reads from memory alike
  for (const [mode, extra, n] of [['summary (default)', [], rounds], ['--exact', ['--exact'], exactRounds]] as const) {
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
