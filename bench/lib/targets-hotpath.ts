/**
 * The targets of issue 24 (the payload hot path near the floor, consumers
 * that scale, a producer near the floor), each a ratio of two figures of
 * this one run. The machine's core count picks the scaling goals: on 2
 * cores, 4 consumer processes ≥ 0.95× 2 and 16 ≥ 0.9× 4; on more, every
 * doubling up to 16 ≥ 0.95× the previous and 16 ≥ 3× one, and the best
 * full cycle ≥ 1.0× SQLite WAL FULL's best (target 5, measured on 16 cores).
 *
 * Every figure comes from `npm run bench -- --only throughput,cpu`: the
 * throughput group has the floor, fsjob's full-cycle, scaling and
 * enqueue-only rows and SQLite's; the cpu group the CPU per payload job.
 */
import { med, type Outcome } from './harness.ts';
import type { Results } from './report.ts';
import type { Target } from './targets.ts';
import { byId } from './tables.ts';
import { formatRate, formatRatio } from './stats.ts';

/** The consumer process counts of the scaling rows: each a Worker with concurrency 1 (bench/lib/fsjob.ts). */
export const CONSUMER_PROCESSES = [1, 2, 4, 8, 16] as const;
/** The concurrencies of one consumer process; 1 is the one-process row of CONSUMER_PROCESSES. */
export const PROCESS_CONCURRENCY = [2, 4, 8, 16, 32, 64] as const;

const div = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || b === 0 ? undefined : a / b);
const at = (x: number | undefined, goal: number, above: boolean) => (x === undefined || !Number.isFinite(x) ? undefined : above ? x >= goal : x <= goal);
const ms = (v: number | undefined) => (v === undefined || !Number.isFinite(v) ? 'n/a' : `${v.toFixed(2)} ms`);

/** The fsjob full-cycle rows: consumer processes, one process's concurrency, the batch producer. */
const FULL_CYCLE = /^fsjob-[cab]\d+$/;

function best(outcomes: readonly Outcome[], match: (id: string) => boolean): { o: Outcome; v: number } | undefined {
  let top: { o: Outcome; v: number } | undefined;
  for (const o of outcomes) {
    const v = match(o.system.id) ? med(o) : undefined;
    if (v !== undefined && (top === undefined || v > top.v)) top = { o, v };
  }
  return top;
}

const shape = (o: Outcome | undefined) => (o === undefined ? '' : ` (${o.system.label.replace(/^.*full cycle, /, '')})`);

export function computeHotPathTargets(r: Results): Target[] {
  const t: Target[] = [];
  const row = (name: string, measured: string, ratio: number | undefined, goal: string, met: boolean | undefined) => t.push({ name, measured, ratio, goal, met, limit: '' });
  const rate = (id: string) => med(byId(r.throughput, id));

  // 1. CPU per payload job, producer + consumer, against the floor's own CPU per job (1 thread).
  const cpu = byId(r.cpuPerJob, 'cpu-per-job');
  const total = med(cpu, 'cpu_ms');
  // The floor measured beside it in the CPU group (one fs state, one load); the throughput group's floor when that one is missing.
  const besideCpu = med(byId(r.cpuPerJob, 'cpu-floor'), 'cpu_ms');
  const floorCpu = besideCpu ?? med(byId(r.throughput, 'floor-1t'), 'cpu_ms');
  const r1 = div(total, floorCpu);
  row(
    '1. CPU per payload job (producer + consumer) ≤ 2.0× the floor\'s CPU per job',
    `${ms(total)} (producer ${ms(med(cpu, 'enqueue_cpu_ms'))}, consumer ${ms(med(cpu, 'consume_cpu_ms'))}) vs the floor's ${ms(floorCpu)} (1 thread, ${besideCpu === undefined ? 'the throughput group' : 'beside it in the CPU group'})`,
    r1,
    '≤ 2.0×',
    at(r1, 2, false),
  );

  // 2. Best full payload cycle against the floor's 16-thread row.
  const fsjob = best(r.throughput, (id) => FULL_CYCLE.test(id));
  const floor16 = rate('floor-16t');
  const r2 = div(fsjob?.v, floor16);
  row('2. best full payload cycle ≥ 0.5× the floor\'s 16-thread row', `${formatRate(fsjob?.v)}${shape(fsjob?.o)} vs ${formatRate(floor16)} jobs/s`, r2, '≥ 0.5×', at(r2, 0.5, true));

  // 3. Scaling of consumer processes (each a Worker with concurrency 1).
  const c = (k: number) => rate(`fsjob-c${k}`);
  if (r.machine.cores <= 2) {
    const a = div(c(4), c(2));
    row('3a. scaling (2 cores): 4 consumer processes ≥ 0.95× 2', `${formatRate(c(4))} vs ${formatRate(c(2))} jobs/s`, a, '≥ 0.95×', at(a, 0.95, true));
    const b = div(c(16), c(4));
    row('3b. scaling (2 cores): 16 consumer processes ≥ 0.9× 4', `${formatRate(c(16))} vs ${formatRate(c(4))} jobs/s`, b, '≥ 0.9×', at(b, 0.9, true));
  } else {
    const counts = CONSUMER_PROCESSES;
    for (let i = 1; i < counts.length; i++) {
      const k = counts[i] as number;
      const previous = counts[i - 1] as number;
      const ratio = div(c(k), c(previous));
      row(`3. scaling (${r.machine.cores} cores): ${k} consumer processes ≥ 0.95× ${previous}`, `${formatRate(c(k))} vs ${formatRate(c(previous))} jobs/s`, ratio, '≥ 0.95×', at(ratio, 0.95, true));
    }
    const all = div(c(16), c(1));
    row(`3. scaling (${r.machine.cores} cores): 16 consumer processes ≥ 3× one`, `${formatRate(c(16))} vs ${formatRate(c(1))} jobs/s`, all, '≥ 3×', at(all, 3, true));
  }

  // 4. The library's enqueue-only rates (one `enqueue` at a time; enqueueMany) against the floor's.
  const floorEnq = rate('floor-enq');
  for (const [id, what] of [
    ['fsjob-enq', '`enqueue`, one at a time'],
    ['fsjob-enq-many', '`enqueueMany` of 64'],
  ] as const) {
    const ratio = div(rate(id), floorEnq);
    row(`4. library enqueue-only (${what}) ≥ 0.5× the floor's enqueue-only rate`, `${formatRate(rate(id))} vs ${formatRate(floorEnq)} jobs/s; CPU ${ms(med(byId(r.throughput, id), 'cpu_ms'))} vs ${ms(med(byId(r.throughput, 'floor-enq'), 'cpu_ms'))} per job`, ratio, '≥ 0.5×', at(ratio, 0.5, true));
  }

  // 5. More cores: the best full cycle against SQLite WAL FULL's best.
  if (r.machine.cores > 2) {
    const sqlite = best(r.throughput, (id) => /^sqlite-full-c\d+$/.test(id));
    const r5 = div(fsjob?.v, sqlite?.v);
    row(`5. best full cycle ≥ 1.0× SQLite WAL FULL's best (${r.machine.cores} cores)`, `${formatRate(fsjob?.v)}${shape(fsjob?.o)} vs ${formatRate(sqlite?.v)}${shape(sqlite?.o)} jobs/s`, r5, `≥ 1.0× (${formatRatio(1.5)} beyond this issue)`, at(r5, 1, true));
  }
  return t;
}
