/**
 * Deep backlog (issue 16, target 3): a Worker's throughput and CPU per job
 * over queues of many queued payload jobs, shared by bench/backlog.bench.ts
 * (this checkout against another commit) and the scale group of
 * `npm run bench`.
 *
 * Each measurement is a fresh child process (this file, `child` mode): a
 * Worker (concurrency 1, payload jobs, a no-op handler) started on the
 * queue; the figures cover its jobs after the first WARM (start-up, the
 * READY-4 scan and the first listing are out), as jobs per second of wall
 * time and CPU milliseconds (user + system, the whole process) per job, and
 * when its first claim came. The queues are built with direct writes
 * (fixtures.ts, fill.c) and are consumed by the runs: BacklogQueues builds a
 * depth anew when a run would take it below 90% of its label.
 *
 *   node --import tsx bench/lib/backlog.ts child <src> <queue> <jobs>
 */
import { readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildQueue } from './fixtures.ts';
import { REPO_DIR, runJson, tsNode } from './proc.ts';

/** Jobs a Worker runs before its figures start. */
export const WARM = 10;

export interface BacklogFigures {
  jobs: number;
  wall_ms: number;
  cpu_ms: number;
  /** From the Worker's construction to its first claim. */
  start_ms: number;
}

/** How many jobs a run measures at a depth: `jobs`, or what a shallow queue holds after the warm-up. */
export function measuredJobs(depth: number, jobs: number): number {
  return Math.min(jobs, Math.max(1, depth - WARM - 1));
}

async function child(src: string, root: string, jobs: number): Promise<void> {
  const { Worker } = (await import(pathToFileURL(path.join(src, 'consumer/index.ts')).href)) as typeof import('../../src/consumer/index.ts');
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
  const figures: BacklogFigures = { jobs, wall_ms: performance.now() - warmAt, cpu_ms: (cpu.user + cpu.system) / 1000, start_ms: startMs };
  process.stdout.write(`${JSON.stringify(figures)}\n`);
}

/** One measurement: a fresh process whose Worker comes from the sources at src (this checkout's src/, or another commit's). */
export function runBacklogWorker(src: string, root: string, jobs: number): Promise<BacklogFigures> {
  return runJson<BacklogFigures>(tsNode('lib/backlog.ts', ['child', src, root, String(jobs)]), { cwd: REPO_DIR, timeoutMs: 600_000 });
}

/**
 * Queues of queued payload jobs (handler `bench`) by depth, each built in a
 * directory of its own: a queue is built anew when a run taking `take` jobs
 * would leave it under 90% of its depth (a depth under ten runs' worth is
 * built anew for every run that finds it used). With `removeOld` the queue it replaces is
 * removed; the orchestrated run keeps it, as it deletes nothing until its
 * clean groups are done.
 */
export class BacklogQueues {
  private readonly roots = new Map<number, string>();

  constructor(
    private readonly dirFor: (depth: number) => string,
    private readonly templates: string,
    private readonly removeOld: boolean,
    private readonly log: (line: string) => void,
  ) {}

  async at(depth: number, take = 0): Promise<string> {
    const existing = this.roots.get(depth);
    if (existing !== undefined) {
      const left = readdirSync(path.join(existing, 'ready')).length;
      // Untouched, or deep enough to stay at 90% of its depth after this run.
      if (left >= depth || (depth >= 10 * take && left - take >= 0.9 * depth)) return existing;
    }
    const root = path.join(this.dirFor(depth), 'q');
    const s = await buildQueue(root, depth, 'queued', { handler: 'bench' }, this.templates);
    this.log(`  built ${depth.toLocaleString('en-US')} queued payload jobs in ${s.toFixed(1)} s`);
    if (existing !== undefined && this.removeOld) rmSync(existing, { recursive: true, force: true });
    this.roots.set(depth, root);
    return root;
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1] && process.argv[2] === 'child') {
  await child(process.argv[3] as string, process.argv[4] as string, Number(process.argv[5]));
}
