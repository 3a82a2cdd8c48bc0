/**
 * The shape of every measurement: a system is measured by `run` once per
 * round; rounds go round-robin over the systems of a group, so slow drift
 * (the disk, other load) hits all alike; the report shows each metric's
 * median over rounds. A system that cannot run here says why in `skip` and
 * is listed as skipped, never an error.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Peer, startTogether } from './proc.ts';
import { median, percentile, spread } from './stats.ts';

export interface Ctx {
  /** Scratch directory on the filesystem under test; every run gets a fresh subdirectory. */
  work: string;
  quick: boolean;
  log: (line: string) => void;
  /** A fresh directory for one run. */
  fresh: (name: string) => string;
}

/** Metrics of one run: `rate` is the system's headline figure (jobs/s). */
export type Sample = Record<string, number>;

export interface System {
  id: string;
  label: string;
  /** How durable a finished step is: fsjob and the floor fsync every step. */
  durability: string;
  /** Ids of the systems whose `rate` this one's is divided by in the report. */
  refs?: { floor?: string; sqlite?: string };
  /** Why it cannot run here (missing tool, branch not merged), or null. */
  skip?: () => Promise<string | null>;
  run: (ctx: Ctx, round: number) => Promise<Sample>;
}

export interface Outcome {
  system: System;
  samples: Sample[];
  skipped?: string;
  error?: string;
}

export function makeCtx(work: string, quick: boolean, log: (line: string) => void): Ctx {
  let n = 0;
  return {
    work,
    quick,
    log,
    fresh: (name) => {
      const dir = path.join(work, `${String(++n).padStart(4, '0')}-${name}`);
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      return dir;
    },
  };
}

/** Runs rounds × systems round-robin; a failing run is reported once and the system dropped. */
export async function roundRobin(ctx: Ctx, systems: readonly System[], rounds: number, beforeRound?: (round: number) => Promise<void>): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  for (const system of systems) {
    const skipped = system.skip === undefined ? null : await system.skip();
    outcomes.push(skipped === null ? { system, samples: [] } : { system, samples: [], skipped });
    if (skipped !== null) ctx.log(`  skip ${system.label}: ${skipped}`);
  }
  for (let round = 1; round <= rounds; round++) {
    if (beforeRound !== undefined) await beforeRound(round);
    for (const outcome of outcomes) {
      if (outcome.skipped !== undefined || outcome.error !== undefined) continue;
      try {
        const sample = await outcome.system.run(ctx, round);
        outcome.samples.push(sample);
        ctx.log(`  [${round}/${rounds}] ${outcome.system.label}: ${describe(sample)}`);
      } catch (error) {
        outcome.error = error instanceof Error ? error.message.split('\n').slice(0, 6).join(' | ') : String(error);
        ctx.log(`  [${round}/${rounds}] ${outcome.system.label}: FAILED ${outcome.error}`);
      }
    }
  }
  return outcomes;
}

function describe(sample: Sample): string {
  return Object.entries(sample)
    .filter(([k]) => !k.startsWith('_'))
    .map(([k, v]) => `${k}=${Number.isInteger(v) ? v : v.toFixed(k.endsWith('_us') ? 0 : 1)}`)
    .join(' ');
}

/** Median of one metric over an outcome's samples (undefined when no sample has it). */
export function med(outcome: Outcome | undefined, metric = 'rate'): number | undefined {
  const values = (outcome?.samples ?? []).map((s) => s[metric]).filter((v): v is number => v !== undefined && Number.isFinite(v));
  return values.length === 0 ? undefined : median(values);
}

export function spreadOf(outcome: Outcome, metric = 'rate'): number | undefined {
  const values = outcome.samples.map((s) => s[metric]).filter((v): v is number => v !== undefined && Number.isFinite(v));
  return values.length < 2 ? undefined : spread(values);
}

export interface CycleResult {
  enqueueRate: number;
  cycleRate: number;
  latencies: number[];
  /** CPU (user + system, every thread) of the producer and every consumer from GO to their end, per job, in ms; NaN when a child does not report it. */
  cpuMsPerJob: number;
  /** Scans of the ready index and claims lost to another consumer, per job, summed over the consumers that report them (fsjob's). */
  scansPerJob: number;
  racedPerJob: number;
}

/**
 * One producer and some consumers, started together. The producer reports
 * t0_us/t1_us; each consumer prints `D` per finished job and, on STOP, its
 * last_us and latencies_us. The parent stops the consumers once n `D` lines
 * arrived (or when each consumer ends by itself, as the SQLite ones do).
 */
export async function runCycle(producer: Peer | undefined, consumers: readonly Peer[], n: number, stopOnCount: boolean): Promise<CycleResult> {
  let count = 0;
  let resolveAll: () => void = () => {};
  const all = new Promise<void>((resolve) => (resolveAll = resolve));
  if (stopOnCount) {
    for (const c of consumers) {
      c.onLine = (line) => {
        if (line.startsWith('D')) {
          // `D` is one job done, `D k` k of them (fsjob-lib.ts gathers its receipts).
          count += line.length > 2 ? Number(line.slice(2)) : 1;
          if (count >= n) resolveAll();
        }
      };
    }
  }
  await startTogether(producer === undefined ? consumers : [producer, ...consumers]);
  const p = producer === undefined ? undefined : await producer.result<{ t0_us: number; t1_us: number; n: number; cpu_us?: number }>();
  if (stopOnCount) {
    const timeout = setTimeout(() => resolveAll(), 600_000);
    await all;
    clearTimeout(timeout);
    if (count < n) throw new Error(`only ${count} of ${n} jobs finished within 600 s`);
    for (const c of consumers) c.send('STOP');
  }
  const results = await Promise.all(consumers.map((c) => c.result<{ done: number; last_us: number; cpu_us?: number; scans?: number; raced?: number; latencies_us?: number[] }>()));
  await Promise.all([...consumers, ...(producer === undefined ? [] : [producer])].map((c) => c.exit()));
  const done = results.reduce((a, r) => a + r.done, 0);
  if (consumers.length > 0 && done !== n) throw new Error(`consumers report ${done} jobs done, expected ${n}`);
  const last = Math.max(...results.map((r) => r.last_us));
  const t0 = p?.t0_us ?? Number.NaN;
  const cpuUs = [...(p === undefined ? [] : [p.cpu_us]), ...results.map((r) => r.cpu_us)].reduce<number>((sum, us) => sum + (us ?? Number.NaN), 0);
  return {
    enqueueRate: p === undefined ? Number.NaN : n / ((p.t1_us - p.t0_us) / 1e6),
    cycleRate: n / ((last - t0) / 1e6),
    latencies: results.flatMap((r) => r.latencies_us ?? []),
    cpuMsPerJob: cpuUs / 1000 / n,
    scansPerJob: results.reduce((sum, r) => sum + (r.scans ?? Number.NaN), 0) / n,
    racedPerJob: results.reduce((sum, r) => sum + (r.raced ?? Number.NaN), 0) / n,
  };
}

export function latencySample(latencies: readonly number[]): Sample {
  return latencies.length === 0 ? {} : { p50_us: percentile(latencies, 50), p99_us: percentile(latencies, 99) };
}
