/**
 * Scale: how cost grows with queue depth. Deep queues are built with direct
 * writes (fixtures.ts, fill.c) in the clean state, and nothing is deleted
 * until every scale figure is taken, so all depths are measured in one fs
 * state. Figures:
 *   - claim latency (claimNext() on an opened queue, then complete) with
 *     0 / 10,000 / 100,000 finished jobs, next to the floor's per-job time and
 *     SQLite's claim transaction at the same depth;
 *   - how long a Worker takes to start (its READY-4 scan of jobs/);
 *   - `fsjob validate QUEUE` throughput (the whole-queue audit), warm
 *     (a second run; the first, which updates directory atimes, beside it);
 *   - max RSS of `fsjob work` serving 100,000 queued command jobs;
 *   - deep backlog (issue 16, target 3; lib/backlog.ts): a Worker's jobs/s
 *     and CPU per job over 100 / 10,000 / 100,000 queued payload jobs,
 *     `fsjob status` at each depth and at the deepest finished queue, and
 *     enqueue() into the deepest backlog against an empty queue.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { runFloor } from './floor.ts';
import { buildQueue } from './fixtures.ts';
import { BacklogQueues, measuredJobs, runBacklogWorker, WARM } from './backlog.ts';
import { FSJOB_BIN, fsjobMissing, fsjobTimed } from './fsjob.ts';
import { initQueue } from '../../src/model/queue.ts';
import type { Ctx, Sample, System } from './harness.ts';
import { oneShot, Peer, REPO_DIR, run, tsNode } from './proc.ts';
import { percentile, type Cost } from './stats.ts';
import { cpuOf, underTime } from './timed.ts';

export interface ScalePlan {
  /** Finished jobs in the queues of the claim, start-up and validate figures. */
  depths: number[];
  claimSamples: number;
  floorJobs: number;
  memoryJobs: number;
  memorySeconds: number;
  /** Queued payload jobs in the queues of the deep-backlog figures; the first is the reference. */
  backlogDepths: number[];
  /** Jobs a Worker runs per backlog figure (after lib/backlog.ts's WARM). */
  backlogJobs: number;
  /** enqueue() calls per figure, into the deepest backlog and into an empty queue. */
  enqueuePer: number;
}

export function scalePlan(quick: boolean): ScalePlan {
  return quick
    ? { depths: [0, 10_000], claimSamples: 10, floorJobs: 60, memoryJobs: 1000, memorySeconds: 3, backlogDepths: [100, 10_000], backlogJobs: 100, enqueuePer: 100 }
    : { depths: [0, 10_000, 100_000], claimSamples: 30, floorJobs: 150, memoryJobs: 100_000, memorySeconds: 15, backlogDepths: [100, 10_000, 100_000], backlogJobs: 200, enqueuePer: 200 };
}

export const depthLabel = (d: number): string => d.toLocaleString('en-US');

/** Builds one finished-jobs queue per depth; returns roots and build seconds. */
export async function buildDepths(ctx: Ctx, depths: readonly number[]): Promise<Map<number, string>> {
  const roots = new Map<number, string>();
  for (const d of depths) {
    const root = path.join(ctx.fresh(`depth-${d}`), 'q');
    const s = await buildQueue(root, d, 'finished', { handler: 'bench' }, ctx.fresh('templates'));
    ctx.log(`  built a queue with ${depthLabel(d)} finished jobs in ${s.toFixed(1)} s`);
    roots.set(d, root);
  }
  return roots;
}

/** Systems measured round-robin over depths: fsjob claim, Worker start, the floor, SQLite's claim. */
export function depthSystems(plan: ScalePlan, roots: Map<number, string>): System[] {
  const out: System[] = [];
  for (const d of plan.depths) {
    const root = () => {
      const r = roots.get(d);
      if (r === undefined) throw new Error(`no queue of depth ${d}`);
      return r;
    };
    out.push({
      id: `claim-fsjob-${d}`,
      label: `fsjob claimNext() with ${depthLabel(d)} finished jobs`,
      durability: 'fsync per step',
      skip: fsjobMissing,
      run: async () => {
        const r = await oneShot<{ claim_us: number[]; claim_complete_us: number[] }>('fsjob claim', tsNode('fsjob-lib.ts', ['claim', root(), String(plan.claimSamples)]));
        return { p50_us: percentile(r.claim_us, 50), p99_us: percentile(r.claim_us, 99), complete_p50_us: percentile(r.claim_complete_us, 50) };
      },
    });
    out.push({
      id: `start-fsjob-${d}`,
      label: `fsjob Worker start-up (READY-4 scan) with ${depthLabel(d)} finished jobs`,
      durability: 'n/a',
      skip: fsjobMissing,
      run: async () => {
        const r = await oneShot<{ start_ms: number }>('fsjob start', tsNode('fsjob-lib.ts', ['start', root()]));
        return { start_ms: r.start_ms };
      },
    });
    out.push({
      id: `claim-floor-${d}`,
      label: `floor: one job's whole sequence, in a jobs/ holding ${depthLabel(d)} finished jobs`,
      durability: 'fsync per step',
      run: async () => {
        // Own tmp/, ready/ and jobs/ beside the fsjob queue would not share its jobs/ directory: use the queue's.
        const r = await runFloor(root(), plan.floorJobs, 1, 'full');
        return { p50_us: r.p50_ns / 1000, p99_us: r.p99_ns / 1000, rate: r.jobs_per_s };
      },
    });
    out.push({
      id: `claim-sqlite-${d}`,
      label: `SQLite WAL FULL claim transaction with ${depthLabel(d)} done rows`,
      durability: 'fsync per commit',
      run: async (ctx) => {
        const db = path.join(ctx.fresh(`sqlite-depth-${d}`), 'queue.db');
        const r = await oneShot<{ claim_us: number[] }>('sqlite depth', tsNode('sqlite-queue.ts', ['depth', db, 'FULL', String(d), String(plan.claimSamples)]));
        return { p50_us: percentile(r.claim_us, 50), p99_us: percentile(r.claim_us, 99) };
      },
    });
  }
  return out;
}

interface ValidateJson {
  summary: { errors: number; warnings: number; files: number; jobs: number };
}

/** One `fsjob validate QUEUE --json` of a queue of `d` jobs, timed as a user sees it (node start-up included), with the CPU it used (every thread). */
async function validateOnce(root: string, d: number): Promise<{ seconds: number; jobs: number; files: number; rate: number; cpu_s: number; cpu_us_per_job: number }> {
  const limitS = 900;
  const r = await run(underTime([process.execPath, FSJOB_BIN, 'validate', root, '--json']), { timeoutMs: limitS * 1000 });
  if (r.signal === 'SIGKILL') throw new Error(`did not finish within ${limitS} s (so under ${Math.round(d / limitS)} jobs/s); stopped`);
  const report = JSON.parse(r.stdout) as ValidateJson;
  if (report.summary.errors !== 0) throw new Error(`validate found ${report.summary.errors} errors in the built queue; the fixtures are not valid`);
  const { jobs, files } = report.summary;
  const cpuMs = cpuOf(r.stderr).cpu_ms;
  return { seconds: r.wallMs / 1000, jobs, files, rate: d === 0 ? Number.NaN : jobs / (r.wallMs / 1000), cpu_s: cpuMs / 1000, cpu_us_per_job: d === 0 ? Number.NaN : (cpuMs * 1000) / jobs };
}

/**
 * `fsjob validate QUEUE --json` per depth, twice: the figure is the second
 * run, with the page cache warm and nothing left for the filesystem to
 * write. The first run is the first read of the queue since fill.c wrote
 * it: listing a directory whose atime is not newer than its mtime updates
 * the atime (relatime, the default mount option), and Node lists a
 * directory only through opendir(3), which cannot ask for O_NOATIME. So
 * the first run makes ext4 journal 100,000 inode updates (about 340 MB
 * through the journal and back at 100,000 jobs, measured with
 * /sys/block/<loop>/stat; none in the second run), which the kernel's
 * threads do beside the audit, on the same two cores. It is reported
 * beside the figure (first_*): a queue that fsjob itself filled pays it
 * too, once after each job directory last changed, and a filesystem
 * mounted noatime never.
 */
export function validateSystems(plan: ScalePlan, roots: Map<number, string>): System[] {
  return plan.depths.map((d) => ({
    id: `validate-${d}`,
    label: `fsjob validate QUEUE with ${depthLabel(d)} finished jobs`,
    durability: 'n/a',
    skip: fsjobMissing,
    run: async (): Promise<Sample> => {
      const root = roots.get(d) as string;
      const first = await validateOnce(root, d);
      const warm = await validateOnce(root, d);
      return { ...warm, first_seconds: first.seconds, first_rate: first.rate, first_cpu_us_per_job: first.cpu_us_per_job };
    },
  }));
}

/**
 * Max RSS of `fsjob work` over a queue of `jobs` queued `true` jobs: through
 * its start-up (the READY-4 scan of jobs/, until it registers in workers/)
 * and then `seconds` of serving; with what it did meanwhile.
 */
export async function workerMemory(ctx: Ctx, jobs: number, seconds: number): Promise<Sample> {
  const root = path.join(ctx.fresh(`memory-${jobs}`), 'q');
  const built = await buildQueue(root, jobs, 'queued', { argv: ['true'] }, ctx.fresh('templates'));
  ctx.log(`  built a queue with ${depthLabel(jobs)} queued command jobs in ${built.toFixed(1)} s`);
  const worker = new Peer('fsjob work', [process.execPath, FSJOB_BIN, 'work', '--queue', root]);
  const pid = worker.child.pid as number;
  let hwm = 0;
  const t0 = performance.now();
  let registeredS = Number.NaN;
  let finished = 0;
  worker.child.stderr?.on('data', (chunk: Buffer | string) => {
    finished += (String(chunk).match(/fsjob work: finished /g) ?? []).length;
  });
  const workers = path.join(root, 'workers');
  for (;;) {
    const elapsed = (performance.now() - t0) / 1000;
    if (Number.isNaN(registeredS) && readdirSync(workers).length > 0) registeredS = elapsed;
    if (!Number.isNaN(registeredS) && elapsed - registeredS >= seconds) break;
    if (elapsed > 900) break;
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      hwm = Math.max(hwm, Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0));
    } catch {
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  worker.kill('SIGTERM');
  await worker.exit(60_000);
  return { max_rss_mib: hwm / 1024, startup_s: registeredS, finished_in_window: finished, window_s: seconds };
}

/** The queues of the deep-backlog figures, built before the scale group's probe (nothing of them is removed during the run). */
export async function buildBacklog(ctx: Ctx, plan: ScalePlan): Promise<BacklogQueues> {
  const queues = new BacklogQueues((d) => ctx.fresh(`backlog-${d}`), ctx.fresh('templates'), false, ctx.log);
  for (const d of plan.backlogDepths) await queues.at(d);
  return queues;
}

const statusSample = (root: string): Sample => {
  const t = fsjobTimed(['status', '-q', root]);
  return { seconds: t.wall_ms / 1000, cpu_s: t.cpu_ms / 1000 };
};

/**
 * Deep backlog, round-robin: per depth `fsjob status` (before the Worker
 * takes its jobs) and a Worker's run; `fsjob status` over the deepest
 * finished queue; enqueue() into the deepest backlog and into a fresh empty
 * queue (each a fresh process, after 2 unmeasured jobs elsewhere).
 */
export function backlogSystems(plan: ScalePlan, queues: BacklogQueues, finished: Map<number, string>): System[] {
  const out: System[] = [];
  const src = path.join(REPO_DIR, 'src');
  for (const d of plan.backlogDepths) {
    const n = measuredJobs(d, plan.backlogJobs);
    out.push({
      id: `status-queued-${d}`,
      label: `\`fsjob status -q Q\` with ${depthLabel(d)} queued jobs`,
      durability: 'n/a',
      skip: fsjobMissing,
      run: async () => statusSample(await queues.at(d)),
    });
    out.push({
      id: `backlog-${d}`,
      label: `fsjob Worker (concurrency 1, no-op handler) over ${depthLabel(d)} queued payload jobs: ${n} jobs after ${WARM}`,
      durability: 'fsync per step',
      skip: fsjobMissing,
      run: async () => {
        const f = await runBacklogWorker(src, await queues.at(d, WARM + n), n);
        return { rate: (f.jobs * 1000) / f.wall_ms, cpu_ms: f.cpu_ms / f.jobs, start_ms: f.start_ms, jobs: f.jobs };
      },
    });
  }
  const deepFinished = Math.max(...plan.depths);
  out.push({
    id: `status-finished-${deepFinished}`,
    label: `\`fsjob status -q Q\` with ${depthLabel(deepFinished)} finished jobs`,
    durability: 'n/a',
    skip: fsjobMissing,
    run: async () => statusSample(finished.get(deepFinished) as string),
  });
  const enqueueInto = async (root: string): Promise<Sample> => {
    const r = await oneShot<Cost & { jobs: number }>('fsjob enqueue-cost', tsNode('fsjob-lib.ts', ['enqueue-cost', root, String(plan.enqueuePer)]));
    return { rate: r.jobs / (r.wall_us / 1e6), wall_ms: r.wall_us / 1000 / r.jobs, cpu_ms: (r.cpu_user_us + r.cpu_system_us) / 1000 / r.jobs };
  };
  const deepest = Math.max(...plan.backlogDepths);
  out.push(
    {
      id: 'enqueue-deep',
      label: `fsjob enqueue() into the queue of ${depthLabel(deepest)} queued jobs (${plan.enqueuePer} jobs, 1 process)`,
      durability: 'fsync per step',
      skip: fsjobMissing,
      run: async () => enqueueInto(await queues.at(deepest)),
    },
    {
      id: 'enqueue-empty',
      label: `fsjob enqueue() into an empty queue (${plan.enqueuePer} jobs, 1 process)`,
      durability: 'fsync per step',
      skip: fsjobMissing,
      run: async (ctx) => {
        const root = path.join(ctx.fresh('enqueue-empty'), 'q');
        await initQueue(root);
        return enqueueInto(root);
      },
    },
  );
  return out;
}
