/**
 * The producer's two entrances (issue 16, target 5): the `fsjob enqueue`
 * command as a shell script calls it, one process per job, side by side
 * with `node -e 0` (the start-up no node command can avoid); and the
 * library's `enqueueBatch(queue, lines)` at growing batch sizes, whose cost
 * per job should fall as the batch grows (fsyncs shared across its jobs),
 * with the fsyncs per job counted under strace.
 */
import path from 'node:path';
import { initQueue } from '../../src/model/queue.ts';
import { FSJOB_BIN, FSJOB_DURABILITY, fsjobMissing, TSX_FALLBACK } from './fsjob.ts';
import type { Ctx, Sample, System } from './harness.ts';
import { commandExists, oneShot, run, tsNode } from './proc.ts';
import { straced } from './profile.ts';
import { median, type Cost } from './stats.ts';

export interface EnqueuePlan {
  /** Calls of each command in one run of the shell loop. */
  cliCalls: number;
  batchSizes: number[];
  /** Jobs enqueued at each batch size (at least one batch). */
  batchJobs: number;
}

export function enqueuePlan(quick: boolean): EnqueuePlan {
  return quick ? { cliCalls: 10, batchSizes: [1, 10, 100, 1000], batchJobs: 200 } : { cliCalls: 20, batchSizes: [1, 10, 100, 1000], batchJobs: 600 };
}

/**
 * `node -e 0` and `fsjob enqueue --queue Q -- true` (the built command, as
 * bin/fsjob.js runs it in a checkout), alternating call by call in one bash
 * loop, each call timed by bash itself ($EPOCHREALTIME, no process of its
 * own); one unmeasured call of each first. A start that went through tsx
 * (dist/ stale) fails the run.
 */
export function cliSystem(calls: number): System {
  return {
    id: 'cli-enqueue',
    label: `\`fsjob enqueue --queue Q -- true\` from a bash loop, against \`node -e 0\` (${calls} calls each, alternating)`,
    durability: FSJOB_DURABILITY,
    skip: fsjobMissing,
    run: async (ctx): Promise<Sample> => {
      const dir = ctx.fresh('cli-enqueue');
      await initQueue(path.join(dir, 'q'));
      const script = `set -euo pipefail
call() { "$NODE" "$FSJOB" enqueue --queue "$D/q" -- true >/dev/null 2>>"$D/stderr"; }
"$NODE" -e 0; call
for ((i = 0; i < N; i++)); do
  t0=$EPOCHREALTIME; "$NODE" -e 0; t1=$EPOCHREALTIME; call; t2=$EPOCHREALTIME
  echo "$t0 $t1 $t2"
done
if grep -qF "$TSX_FALLBACK" "$D/stderr"; then echo "fsjob enqueue did not run the built command: $(head -c 300 "$D/stderr")" >&2; exit 3; fi`;
      const r = await run(['bash', '-c', script], { cwd: dir, timeoutMs: 600_000, env: { ...process.env, LC_ALL: 'C', N: String(calls), D: dir, NODE: process.execPath, FSJOB: FSJOB_BIN, TSX_FALLBACK } });
      if (r.status !== 0) throw new Error(`the enqueue loop failed (${r.status}): ${r.stderr.trim().slice(-600)}`);
      const rows = r.stdout.trim().split('\n').map((line) => line.split(' ').map(Number) as [number, number, number]);
      const node = median(rows.map(([t0, t1]) => (t1 - t0) * 1000));
      const enqueue = median(rows.map(([, t1, t2]) => (t2 - t1) * 1000));
      return { node_ms: node, enqueue_ms: enqueue, ratio: enqueue / node, calls: rows.length };
    },
  };
}

const batchArgs = (root: string, size: number, jobs: number) => tsNode('fsjob-lib.ts', ['batch', root, String(size), String(jobs)]);

/** enqueueBatch at each size into a fresh queue: wall and CPU per job of `jobs` jobs (size-line calls). */
export function batchSystems(plan: EnqueuePlan): System[] {
  return plan.batchSizes.map((size) => ({
    id: `batch-${size}`,
    label: `fsjob: enqueueBatch(queue, lines), ${size} line${size > 1 ? 's' : ''} per call (library, 1 process)`,
    durability: FSJOB_DURABILITY,
    skip: fsjobMissing,
    run: async (ctx): Promise<Sample> => {
      const root = path.join(ctx.fresh(`batch-${size}`), 'q');
      await initQueue(root);
      const r = await oneShot<Cost & { jobs: number; calls: number }>(`enqueueBatch ${size}`, batchArgs(root, size, Math.max(size, plan.batchJobs)), 120_000);
      return { rate: r.jobs / (r.wall_us / 1e6), wall_ms: r.wall_us / 1000 / r.jobs, cpu_ms: (r.cpu_user_us + r.cpu_system_us) / 1000 / r.jobs, jobs: r.jobs };
    },
  }));
}

/**
 * fsync and fdatasync calls per job of enqueueBatch at each size: strace
 * (stopping at those calls alone), the difference of a run of one batch
 * (ten calls for a batch of 1) and one of no batch, so start-up and the
 * warm-up jobs cancel out.
 */
export async function batchFsyncs(ctx: Ctx, plan: EnqueuePlan): Promise<Record<string, number> | string> {
  if (!commandExists('strace')) return 'strace is not installed: fsyncs not counted';
  const out: Record<string, number> = {};
  for (const size of plan.batchSizes) {
    const n = Math.max(size, 10);
    const perJob = await straced(
      ctx,
      `batch-${size}`,
      async (jobs) => {
        const root = path.join(ctx.fresh(`strace-batch-${size}`), 'q');
        await initQueue(root);
        return batchArgs(root, size, jobs);
      },
      true,
      0,
      n,
      ['fsync', 'fdatasync'],
    );
    out[String(size)] = (perJob.get('fsync') ?? 0) + (perJob.get('fdatasync') ?? 0);
  }
  return out;
}
