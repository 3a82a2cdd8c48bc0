/**
 * What fsjob is measured against in the throughput group: the floor (the
 * spec's own filesystem calls in C), SQLite in WAL mode, and python3-dirq.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { runFloor } from './floor.ts';
import { latencySample, runCycle, type Ctx, type Sample, type System } from './harness.ts';
import { BENCH_DIR, Peer, tsNode } from './proc.ts';

export interface Sizes {
  floorJobs: number;
  sqliteJobs: number;
  dirqJobs: number;
  fsjobJobs: number;
  /** Jobs of fsjob's full-cycle rows: enough that 16 consumer processes each run a couple of dozen. */
  scaleJobs: number;
  latencySamples: number;
}

export function sizes(quick: boolean): Sizes {
  return quick
    ? { floorJobs: 100, sqliteJobs: 200, dirqJobs: 200, fsjobJobs: 40, scaleJobs: 160, latencySamples: 8 }
    : { floorJobs: 500, sqliteJobs: 1000, dirqJobs: 1000, fsjobJobs: 200, scaleJobs: 500, latencySamples: 40 };
}

export const FLOOR_DURABILITY = 'fsync per step (9 fsyncs/job)';

/**
 * The floor's full job sequence, 1 thread, measured in the CPU group beside
 * fsjob's CPU per payload job (round-robin with it, so both see one fs state
 * and one load): the figure issue 24's target 1 divides by.
 */
export function floorCpuSystem(jobs: number): System {
  return {
    id: 'cpu-floor',
    label: `floor: full job sequence, 1 thread, ${jobs} jobs (CPU per job, beside fsjob's)`,
    durability: FLOOR_DURABILITY,
    run: async (ctx: Ctx): Promise<Sample> => {
      const r = await runFloor(ctx.fresh('cpu-floor'), jobs, 1, 'full');
      return { rate: r.jobs_per_s, cpu_ms: r.cpu_ns / r.jobs / 1e6 };
    },
  };
}

export function floorSystems(size: Sizes): System[] {
  const floor = (id: string, label: string, threads: number, mode: 'full' | 'enqueue'): System => ({
    id,
    label,
    durability: FLOOR_DURABILITY,
    refs: mode === 'enqueue' ? { floor: 'floor-enq', sqlite: 'sqlite-full-insert' } : { floor: 'floor-1t', sqlite: threads === 1 ? 'sqlite-full-c1' : 'sqlite-full-c2' },
    run: async (ctx: Ctx): Promise<Sample> => {
      // Every thread gets several jobs, or 64 threads would measure their start-up.
      const r = await runFloor(ctx.fresh(id), Math.max(size.floorJobs, threads * 8), threads, mode);
      const calls: Sample = {};
      for (const [kind, { n, ns }] of Object.entries(r.calls)) if (n > 0) calls[`_us_${kind}`] = ns / n / 1000;
      return { rate: r.jobs_per_s, p50_us: r.p50_ns / 1000, p99_us: r.p99_ns / 1000, cpu_ms: r.cpu_ns / r.jobs / 1e6, ...calls };
    },
  });
  return [
    floor('floor-enq', 'floor: enqueue only (1 thread)', 1, 'enqueue'),
    floor('floor-1t', 'floor: full job sequence, 1 thread', 1, 'full'),
    floor('floor-2t', 'floor: full job sequence, 2 threads', 2, 'full'),
    // Issue 16: concurrent fsyncs share the disk's cache flushes; SQLite's serialised commits cannot.
    floor('floor-4t', 'floor: full job sequence, 4 threads', 4, 'full'),
    floor('floor-16t', 'floor: full job sequence, 16 threads', 16, 'full'),
    floor('floor-64t', 'floor: full job sequence, 64 threads', 64, 'full'),
  ];
}

async function sqliteLoads(): Promise<string | null> {
  try {
    const mod = (await import('better-sqlite3')) as { default: new (file: string) => { close(): void } };
    new mod.default(':memory:').close();
    return null;
  } catch (error) {
    return `better-sqlite3 does not load (${error instanceof Error ? error.message.split('\n')[0] : String(error)}); run node bench/setup.mjs (npm run bench does)`;
  }
}

export function sqliteSystems(size: Sizes): System[] {
  const out: System[] = [];
  for (const sync of ['FULL', 'NORMAL'] as const) {
    const tag = sync.toLowerCase();
    const durability = sync === 'FULL' ? 'fsync per commit (WAL)' : 'no fsync at commit (WAL checkpoints only)';
    out.push({
      id: `sqlite-${tag}-insert`,
      label: `SQLite WAL ${sync}: insert (enqueue) only`,
      durability,
      refs: { floor: 'floor-enq', sqlite: 'sqlite-full-insert' },
      skip: sqliteLoads,
      run: async (ctx) => {
        const db = path.join(ctx.fresh(`sqlite-${tag}`), 'queue.db');
        const producer = new Peer('sqlite producer', tsNode('sqlite-queue.ts', ['producer', db, sync, String(size.sqliteJobs)]));
        const r = await runCycle(producer, [], size.sqliteJobs, false);
        return { rate: r.enqueueRate, cpu_ms: r.cpuMsPerJob };
      },
    });
    // Issue 24: FULL beside fsjob's consumer processes 1 to 8; NORMAL at 1 and 2.
    for (const consumers of sync === 'FULL' ? [1, 2, 4, 8] : [1, 2]) {
      out.push({
        id: `sqlite-${tag}-c${consumers}`,
        label: `SQLite WAL ${sync}: full cycle, ${consumers} consumer process${consumers > 1 ? 'es' : ''}`,
        durability,
        refs: { floor: 'floor-1t', sqlite: `sqlite-full-c${consumers}` },
        skip: sqliteLoads,
        run: async (ctx) => {
          const db = path.join(ctx.fresh(`sqlite-${tag}`), 'queue.db');
          const n = String(size.sqliteJobs);
          const producer = new Peer('sqlite producer', tsNode('sqlite-queue.ts', ['producer', db, sync, n]));
          const cs = Array.from({ length: consumers }, (_, i) => new Peer(`sqlite consumer ${i}`, tsNode('sqlite-queue.ts', ['consumer', db, sync, n])));
          const r = await runCycle(producer, cs, size.sqliteJobs, false);
          return { rate: r.cycleRate, enqueue_rate: r.enqueueRate, cpu_ms: r.cpuMsPerJob, ...latencySample(r.latencies) };
        },
      });
    }
  }
  out.push({
    id: 'sqlite-full-latency',
    label: 'SQLite WAL FULL: enqueue-to-done latency, 1 idle consumer polling every 1 ms',
    durability: 'fsync per commit (WAL)',
    skip: sqliteLoads,
    run: async (ctx) => {
      const db = path.join(ctx.fresh('sqlite-lat'), 'queue.db');
      const n = String(size.latencySamples);
      const producer = new Peer('sqlite producer', tsNode('sqlite-queue.ts', ['producer', db, 'FULL', n, '--latency', '--poll-us', '200']));
      const consumer = new Peer('sqlite consumer', tsNode('sqlite-queue.ts', ['consumer', db, 'FULL', n, '--poll-us', '1000']));
      const r = await runCycle(producer, [consumer], size.latencySamples, false);
      return latencySample(r.latencies);
    },
  });
  return out;
}

const DIRQ_PY = '/usr/bin/python3';

async function dirqAvailable(): Promise<string | null> {
  if (!existsSync(DIRQ_PY)) return 'no /usr/bin/python3';
  const { spawnSync } = await import('node:child_process');
  const r = spawnSync(DIRQ_PY, ['-c', 'import dirq.QueueSimple'], { stdio: 'ignore' });
  return r.status === 0 ? null : 'python3-dirq is not installed (bench/peers.sh installs it as root)';
}

export function dirqSystems(size: Sizes): System[] {
  const script = path.join(BENCH_DIR, 'peers', 'dirq_bench.py');
  const durability = 'none (never fsyncs)';
  const out: System[] = [
    {
      id: 'dirq-enq',
      label: 'python3-dirq QueueSimple: add (enqueue) only',
      durability,
      refs: { floor: 'floor-enq', sqlite: 'sqlite-full-insert' },
      skip: dirqAvailable,
      run: async (ctx) => {
        const dir = path.join(ctx.fresh('dirq'), 'q');
        const producer = new Peer('dirq producer', [DIRQ_PY, script, 'producer', dir, String(size.dirqJobs)]);
        const r = await runCycle(producer, [], size.dirqJobs, false);
        return { rate: r.enqueueRate };
      },
    },
  ];
  for (const consumers of [1, 2]) {
    out.push({
      id: `dirq-c${consumers}`,
      label: `python3-dirq QueueSimple: full cycle, ${consumers} consumer process${consumers > 1 ? 'es' : ''}`,
      durability,
      refs: { floor: 'floor-1t', sqlite: `sqlite-full-c${consumers}` },
      skip: dirqAvailable,
      run: async (ctx) => {
        const dir = path.join(ctx.fresh('dirq'), 'q');
        const n = String(size.dirqJobs);
        const producer = new Peer('dirq producer', [DIRQ_PY, script, 'producer', dir, n]);
        const cs = Array.from({ length: consumers }, (_, i) => new Peer(`dirq consumer ${i}`, [DIRQ_PY, script, 'consumer', dir, n]));
        const r = await runCycle(producer, cs, size.dirqJobs, true);
        return { rate: r.cycleRate, enqueue_rate: r.enqueueRate, ...latencySample(r.latencies) };
      },
    });
  }
  return out;
}
