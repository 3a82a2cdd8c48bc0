/**
 * Deep backlog (issue 16, target 3): a Worker's throughput over queues of
 * 100, 10,000 and 100,000 queued payload jobs, and `fsjob status` at each
 * depth, with the code of this checkout and, side by side in the same run,
 * with the code of another commit (--before REV: its src/ is extracted with
 * `git archive` under .scratch/ and run with this checkout's node_modules).
 *
 *   node --import tsx bench/backlog.bench.ts [--depths 100,10000,100000] [--jobs 200] [--rounds 2] [--before REV]
 *
 * Each measurement is a fresh child process: a Worker (concurrency 1, payload
 * jobs, a no-op handler) started on the queue; the figures cover its jobs
 * after the first 10 (start-up, the READY-4 scan and the first listing are
 * out), as jobs per second of wall time and CPU milliseconds (user + system,
 * the whole process) per job. The queues are built with direct writes
 * (lib/fixtures.ts, fill.c) and are consumed by the runs: a depth is rebuilt
 * when a run would take it below 90% of its label. Rounds alternate the
 * variants, so both see the same load; the load average is printed with each
 * figure. Nothing here asserts a time.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildQueue } from './lib/fixtures.ts';
import { median } from './lib/stats.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.dirname(HERE);
const WARM = 10;

interface ChildFigures {
  jobs: number;
  wall_ms: number;
  cpu_ms: number;
  start_ms: number;
}

async function child(src: string, root: string, jobs: number): Promise<void> {
  const { Worker } = (await import(pathToFileURL(path.join(src, 'consumer/index.ts')).href)) as typeof import('../src/consumer/index.ts');
  const t0 = performance.now();
  let done = 0;
  let warmAt = 0;
  let warmCpu = process.cpuUsage();
  let startMs = 0;
  const worker = new Worker({
    queues: [root],
    concurrency: 1,
    commands: false,
    mode: 'serve',
    onEvent: (event) => {
      if (event.type === 'claimed' && startMs === 0) startMs = performance.now() - t0;
      if (event.type !== 'finished') return;
      done += 1;
      if (done === WARM) {
        warmAt = performance.now();
        warmCpu = process.cpuUsage();
      }
      if (done === WARM + jobs) worker.stop();
    },
  });
  worker.handle('bench', () => ({}));
  await worker.run();
  const cpu = process.cpuUsage(warmCpu);
  const figures: ChildFigures = { jobs, wall_ms: performance.now() - warmAt, cpu_ms: (cpu.user + cpu.system) / 1000, start_ms: startMs };
  process.stdout.write(`${JSON.stringify(figures)}\n`);
}

function runChild(src: string, root: string, jobs: number): Promise<ChildFigures> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), 'child', src, root, String(jobs)], { cwd: REPO, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    p.on('close', (code) => (code === 0 ? resolve(JSON.parse(out) as ChildFigures) : reject(new Error(`child exited ${code}`))));
  });
}

/** `fsjob status -q ROOT` (its summary) through the given launcher: wall ms, and user + system CPU ms as GNU time reports them. */
function statusFigures(argv: string[], root: string): { wall_ms: number; cpu_ms: number } {
  const t0 = performance.now();
  const r = spawnSync('/usr/bin/time', ['-f', 'CPU %U %S', ...argv, 'status', '-q', root], { cwd: REPO, encoding: 'utf8', maxBuffer: 1 << 28 });
  const wall = performance.now() - t0;
  const m = /CPU ([0-9.]+) ([0-9.]+)\s*$/.exec(r.stderr);
  if (r.status !== 0 || m === null) throw new Error(`fsjob status failed (${r.status}): ${r.stderr.slice(-500)}`);
  return { wall_ms: wall, cpu_ms: (Number(m[1]) + Number(m[2])) * 1000 };
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

async function main(): Promise<void> {
  const depths = arg('depths', '100,10000,100000').split(',').map(Number);
  const jobs = Number(arg('jobs', '200'));
  const rounds = Number(arg('rounds', '2'));
  const beforeRev = process.argv.includes('--before') ? execFileSync('git', ['rev-parse', '--short', arg('before', 'HEAD')], { cwd: REPO, encoding: 'utf8' }).trim() : undefined;
  const variants: { name: string; src: string; cli: string[] }[] = [{ name: 'this checkout', src: path.join(REPO, 'src'), cli: [process.execPath, '--import', 'tsx', path.join(REPO, 'bin/fsjob.ts')] }];
  if (beforeRev !== undefined) {
    const dir = extract(beforeRev);
    variants.unshift({ name: `before (${beforeRev})`, src: path.join(dir, 'src'), cli: [process.execPath, '--import', 'tsx', path.join(dir, 'bin/fsjob.ts')] });
  }
  const scratch = path.join(tmpdir(), `fsjob-bench-backlog-${process.pid}`);
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true, mode: 0o700 });
  const roots = new Map<number, string>();
  let builds = 0;
  const queueAt = async (depth: number): Promise<string> => {
    const existing = roots.get(depth);
    if (existing !== undefined && readdirSync(path.join(existing, 'ready')).length - (WARM + jobs) >= 0.9 * depth) return existing;
    const root = path.join(scratch, `q-${depth}-${builds++}`);
    const s = await buildQueue(root, depth, 'queued', { handler: 'bench' }, path.join(scratch, 'templates'));
    process.stderr.write(`  built ${depth.toLocaleString('en-US')} queued payload jobs in ${s.toFixed(1)} s\n`);
    if (existing !== undefined) rmSync(existing, { recursive: true, force: true });
    roots.set(depth, root);
    return root;
  };
  const results = new Map<string, ChildFigures[]>();
  const statuses = new Map<string, { wall_ms: number; cpu_ms: number }[]>();
  process.stdout.write(`# deep backlog: ${jobs} jobs per run after ${WARM} warm-up, ${rounds} rounds; load average at start ${load()}\n`);
  for (let round = 0; round < rounds; round++) {
    for (const depth of depths) {
      for (const v of round % 2 === 0 ? variants : [...variants].reverse()) {
        // A depth of 100 cannot lose 210 jobs: it is built anew for every run.
        const root = depth < 10 * (WARM + jobs) ? (roots.delete(depth), await queueAt(depth)) : await queueAt(depth);
        const st = statusFigures(v.cli, root);
        const f = await runChild(v.src, root, Math.min(jobs, Math.max(1, depth - WARM - 1)));
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
      const [b, a] = variants.map((v) => results.get(`${v.name}|${d}`) ?? []) as [ChildFigures[], ChildFigures[]];
      const r = (fs: ChildFigures[]): number => median(fs.map((f) => (f.jobs * 1000) / f.wall_ms));
      const c = (fs: ChildFigures[]): number => median(fs.map((f) => f.cpu_ms / f.jobs));
      process.stdout.write(`| ${d.toLocaleString('en-US')} | ${(r(a) / r(b)).toFixed(2)}× | ${(c(a) / c(b)).toFixed(2)}× |\n`);
    }
  }
  process.stdout.write(`\nload average at end ${load()}\n`);
  rmSync(scratch, { recursive: true, force: true });
}

if (process.argv[2] === 'child') await child(process.argv[3] as string, process.argv[4] as string, Number(process.argv[5]));
else await main();
