/**
 * The producer's two entrances (issue 16, target 5): the `fsjob enqueue`
 * command as a shell script calls it, one process per job, side by side
 * with `node -e 0` (the start-up no node command can avoid); and the
 * library's `enqueueBatch(queue, lines)` at growing batch sizes, whose cost
 * per job should fall as the batch grows (fsyncs shared across its jobs),
 * with the fsyncs per job counted under strace.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { initQueue } from '../../src/model/queue.ts';
import { FSJOB_BIN, FSJOB_DURABILITY, fsjobMissing, TSX_FALLBACK } from './fsjob.ts';
import type { Ctx, Sample, System } from './harness.ts';
import { BENCH_DIR, commandExists, oneShot, REPO_DIR, run, tsNode } from './proc.ts';
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

/** The command as a package installs it (its bin): the bundle dist/bin/fsjob.js, with no checkout shim in front. */
const INSTALLED_BIN = path.join(REPO_DIR, 'dist', 'bin', 'fsjob.js');

/**
 * Start-up as a shell script pays it (issue 16 target 5, issue 29 target
 * 2): `node -e 0` (the start no node command avoids), `fsjob --version`
 * and `fsjob enqueue --queue Q -- true` as installed (dist/bin/fsjob.js),
 * and the enqueue through the checkout's bin/fsjob.js (which checks that
 * dist/ is current first), alternating call by call in one loop of
 * bench/calls.py: each call's wall time and its user + system CPU from
 * wait4 (every thread; the figure a loaded machine distorts least), one
 * unmeasured call of each first. A start that went through tsx (dist/
 * stale) fails the run. The calls keep their start-up cache
 * (src/cli/start-cache.ts) in a directory of the run's own
 * (XDG_CACHE_HOME), which the unmeasured calls fill, as a user's first
 * call does; `enqueue-nocache` is the same enqueue without it
 * (FSJOB_NO_CACHE=1, set through env(1), one exec more), the gain the
 * cache makes.
 */
export function cliSystem(calls: number): System {
  return {
    id: 'cli-enqueue',
    label: `the command from a shell loop (bench/calls.py): \`fsjob --version\` and \`fsjob enqueue --queue Q -- true\` against \`node -e 0\` (${calls} calls each, alternating)`,
    durability: FSJOB_DURABILITY,
    skip: async () => (await fsjobMissing()) ?? (commandExists('python3') ? null : 'python3 is not installed (bench/calls.py times the calls)'),
    run: async (ctx): Promise<Sample> => {
      const dir = ctx.fresh('cli-enqueue');
      const queue = path.join(dir, 'q');
      await initQueue(queue);
      const node = process.execPath;
      const commands = [
        ['node', node, '-e', '0'],
        ['version', node, INSTALLED_BIN, '--version'],
        ['enqueue', node, INSTALLED_BIN, 'enqueue', '--queue', queue, '--', 'true'],
        ['checkout', node, FSJOB_BIN, 'enqueue', '--queue', queue, '--', 'true'],
        ['enqueue-nocache', 'env', 'FSJOB_NO_CACHE=1', node, INSTALLED_BIN, 'enqueue', '--queue', queue, '--', 'true'],
      ];
      const stderr = path.join(dir, 'stderr');
      const r = await run(['python3', path.join(BENCH_DIR, 'calls.py'), String(calls), stderr, JSON.stringify(commands)], { cwd: dir, timeoutMs: 600_000, env: { ...process.env, LC_ALL: 'C', XDG_CACHE_HOME: path.join(dir, 'cache') } });
      if (r.status !== 0) throw new Error(`the call loop failed (${r.status}): ${r.stderr.trim().slice(-600)}`);
      const errors = readFileSync(stderr, 'utf8');
      if (errors.includes(TSX_FALLBACK)) throw new Error(`fsjob enqueue did not run the built command: ${errors.slice(0, 300)}`);
      const figures = JSON.parse(r.stdout) as Record<string, { wall_ms: number[]; cpu_ms: number[] }>;
      const sample: Sample = { calls };
      for (const [label] of commands) {
        const figure = figures[label as string] as { wall_ms: number[]; cpu_ms: number[] };
        sample[`${label}_ms`] = median(figure.wall_ms);
        sample[`${label}_cpu_ms`] = median(figure.cpu_ms);
      }
      sample['ratio'] = (sample['enqueue_ms'] as number) / (sample['node_ms'] as number);
      return sample;
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
