/**
 * Deep backlog (issue 16, target 3): a Worker's throughput over queues of
 * 100, 10,000 and 100,000 queued payload jobs, and `fsjob status` at each
 * depth, with the code of this checkout and, side by side in the same run,
 * with the code of another commit (--before REV: its src/ is extracted with
 * `git archive` under .scratch/ and run with this checkout's node_modules).
 *
 *   node --import tsx bench/backlog.bench.ts [--depths 100,10000,100000] [--jobs 200] [--rounds 2] [--before REV]
 *
 * Each measurement is a fresh child process (bench/lib/backlog.ts): a
 * Worker (concurrency 1, payload jobs, a no-op handler) started on the
 * queue; the figures cover its jobs after the first 10 (start-up, the
 * READY-4 scan and the first listing are out), as jobs per second of wall
 * time and CPU milliseconds (user + system, the whole process) per job. The
 * queues are built with direct writes (lib/fixtures.ts, fill.c) and are
 * consumed by the runs: a depth is rebuilt when a run would take it below
 * 90% of its label. Rounds alternate the variants, so both see the same
 * load; the load average is printed with each figure. Nothing here asserts
 * a time.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BacklogQueues, measuredJobs, runBacklogWorker, WARM, type BacklogFigures } from './lib/backlog.ts';
import { median } from './lib/stats.ts';
import { timeCommand } from './lib/timed.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.dirname(HERE);

/** `fsjob status -q ROOT` (its summary) through the given launcher: wall ms, and user + system CPU ms as GNU time reports them. */
function statusFigures(argv: string[], root: string): { wall_ms: number; cpu_ms: number } {
  const { wall_ms, cpu_ms } = timeCommand([...argv, 'status', '-q', root], { cwd: REPO });
  return { wall_ms, cpu_ms };
}

function extract(rev: string): string {
  const dir = path.join(REPO, '.scratch', 'bench-before', rev);
  if (!existsSync(path.join(dir, 'src'))) {
    mkdirSync(dir, { recursive: true });
    execFileSync('sh', ['-c', `git archive "$1" src bin conformance package.json | tar -x -C "$2"`, 'sh', rev, dir], { cwd: REPO });
  }
  return dir;
}

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? (process.argv[i + 1] as string) : fallback;
}

const load = (): string => loadavg().map((v) => v.toFixed(2)).join(' ');

/** The command's sources in a tree, through tsx: bin/fsjob.mts, or bin/fsjob.ts in a revision from before it was renamed. */
function cliOf(dir: string): string[] {
  const entry = ['bin/fsjob.mts', 'bin/fsjob.ts'].find((name) => existsSync(path.join(dir, name))) ?? 'bin/fsjob.mts';
  return [process.execPath, '--import', 'tsx', path.join(dir, entry)];
}

async function main(): Promise<void> {
  const depths = arg('depths', '100,10000,100000').split(',').map(Number);
  const jobs = Number(arg('jobs', '200'));
  const rounds = Number(arg('rounds', '2'));
  const beforeRev = process.argv.includes('--before') ? execFileSync('git', ['rev-parse', '--short', arg('before', 'HEAD')], { cwd: REPO, encoding: 'utf8' }).trim() : undefined;
  const variants: { name: string; src: string; cli: string[] }[] = [{ name: 'this checkout', src: path.join(REPO, 'src'), cli: cliOf(REPO) }];
  if (beforeRev !== undefined) {
    const dir = extract(beforeRev);
    variants.unshift({ name: `before (${beforeRev})`, src: path.join(dir, 'src'), cli: cliOf(dir) });
  }
  const scratch = path.join(tmpdir(), `fsjob-bench-backlog-${process.pid}`);
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true, mode: 0o700 });
  let builds = 0;
  const queues = new BacklogQueues((depth) => path.join(scratch, `q-${depth}-${builds++}`), path.join(scratch, 'templates'), true, (line) => process.stderr.write(`${line}\n`));
  const results = new Map<string, BacklogFigures[]>();
  const statuses = new Map<string, { wall_ms: number; cpu_ms: number }[]>();
  process.stdout.write(`# deep backlog: ${jobs} jobs per run after ${WARM} warm-up, ${rounds} rounds; load average at start ${load()}\n`);
  for (let round = 0; round < rounds; round++) {
    for (const depth of depths) {
      for (const v of round % 2 === 0 ? variants : [...variants].reverse()) {
        // A depth of 100 cannot lose 210 jobs: it is built anew for every run.
        const n = measuredJobs(depth, jobs);
        const root = await queues.at(depth, WARM + n);
        const st = statusFigures(v.cli, root);
        const f = await runBacklogWorker(v.src, root, n);
        const key = `${v.name}|${depth}`;
        results.set(key, [...(results.get(key) ?? []), f]);
        statuses.set(key, [...(statuses.get(key) ?? []), st]);
        process.stderr.write(`  round ${round + 1} ${v.name} depth ${depth}: ${((f.jobs * 1000) / f.wall_ms).toFixed(1)} jobs/s, ${(f.cpu_ms / f.jobs).toFixed(2)} CPU ms/job, first claim after ${f.start_ms.toFixed(0)} ms; status ${st.wall_ms.toFixed(0)} ms (CPU ${st.cpu_ms.toFixed(0)} ms); load ${load()}\n`);
      }
    }
  }
  process.stdout.write('\n| variant | queued | worker jobs/s | vs 100 queued | CPU ms/job | first claim ms | `fsjob status` wall ms | status CPU ms |\n|---|---:|---:|---:|---:|---:|---:|---:|\n');
  for (const v of variants) {
    const rate = (d: number): number => median((results.get(`${v.name}|${d}`) ?? []).map((f) => (f.jobs * 1000) / f.wall_ms));
    for (const d of depths) {
      const fs = results.get(`${v.name}|${d}`) ?? [];
      const st = statuses.get(`${v.name}|${d}`) ?? [];
      process.stdout.write(
        `| ${v.name} | ${d.toLocaleString('en-US')} | ${rate(d).toFixed(1)} | ${(rate(d) / rate(depths[0] as number)).toFixed(2)}× | ${median(fs.map((f) => f.cpu_ms / f.jobs)).toFixed(2)} | ${median(fs.map((f) => f.start_ms)).toFixed(0)} | ${median(st.map((s) => s.wall_ms)).toFixed(0)} | ${median(st.map((s) => s.cpu_ms)).toFixed(0)} |\n`,
      );
    }
  }
  if (variants.length === 2) {
    process.stdout.write('\n| queued | throughput after / before | CPU per job after / before |\n|---:|---:|---:|\n');
    for (const d of depths) {
      const [b, a] = variants.map((v) => results.get(`${v.name}|${d}`) ?? []) as [BacklogFigures[], BacklogFigures[]];
      const r = (fs: BacklogFigures[]): number => median(fs.map((f) => (f.jobs * 1000) / f.wall_ms));
      const c = (fs: BacklogFigures[]): number => median(fs.map((f) => f.cpu_ms / f.jobs));
      process.stdout.write(`| ${d.toLocaleString('en-US')} | ${(r(a) / r(b)).toFixed(2)}× | ${(c(a) / c(b)).toFixed(2)}× |\n`);
    }
  }
  process.stdout.write(`\nload average at end ${load()}\n`);
  rmSync(scratch, { recursive: true, force: true });
}

await main();
