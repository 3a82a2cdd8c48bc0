/**
 * The targets of issue 16, each computed from figures of this one run (a
 * ratio of two figures measured side by side, or a figure against a fixed
 * goal): met, not met, or not measured when a figure is missing (a group
 * left out with --only, a skipped system, a failed run). A target with
 * several goals has a row for each (3a to 3c, 5a and 5b).
 */
import { med, type Outcome } from './harness.ts';
import type { Results } from './report.ts';
import { byId } from './tables.ts';
import { formatRate, formatRatio } from './stats.ts';
import { WORK_CONCURRENCY } from './commands.ts';

export interface Target {
  name: string;
  measured: string;
  ratio: number | undefined;
  goal: string;
  met: boolean | undefined;
  limit: string;
}

const div = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || b === 0 ? undefined : a / b);
const at = (x: number | undefined, goal: number, above: boolean) => (x === undefined || !Number.isFinite(x) ? undefined : above ? x >= goal : x <= goal);
const ms = (v: number | undefined, digits = 2) => (v === undefined ? 'n/a' : `${v.toFixed(digits)} ms`);
const seconds = (v: number | undefined) => (v === undefined ? 'n/a' : `${v.toFixed(2)} s`);
const depth = (d: number | undefined) => (d === undefined ? '?' : d.toLocaleString('en-US'));

/** The outcome with the highest median of a metric among those whose id matches, with that median. */
function best(outcomes: readonly Outcome[], match: (id: string) => boolean, metric = 'rate'): { o: Outcome; v: number } | undefined {
  let top: { o: Outcome; v: number } | undefined;
  for (const o of outcomes) {
    const v = match(o.system.id) ? med(o, metric) : undefined;
    if (v !== undefined && (top === undefined || v > top.v)) top = { o, v };
  }
  return top;
}

/** What a row of the throughput table is, in a few words: its label after "full cycle, ". */
const shape = (o: Outcome | undefined) => (o === undefined ? '' : ` (${o.system.label.replace(/^.*full cycle, /, '').replace(/ \(async\)$/, ', async')})`);

export function computeTargets(r: Results): Target[] {
  const t: Target[] = [];
  const row = (name: string, measured: string, ratio: number | undefined, goal: string, met: boolean | undefined) => t.push({ name, measured, ratio, goal, met, limit: '' });

  // 1. Durable payload full cycle: fsjob's best layout against SQLite WAL FULL's best, same run.
  const fsjob = best(r.throughput, (id) => /^fsjob-[cab]\d+$/.test(id));
  const sqlite = best(r.throughput, (id) => /^sqlite-full-c\d+$/.test(id));
  const r1 = div(fsjob?.v, sqlite?.v);
  row('1. durable payload full cycle, fsjob\'s best ≥ 1.5× SQLite WAL FULL\'s best', `${formatRate(fsjob?.v)}${shape(fsjob?.o)} vs ${formatRate(sqlite?.v)}${shape(sqlite?.o)} jobs/s`, r1, '≥ 1.5×', at(r1, 1.5, true));

  // 2. CPU per payload job, producer + consumer.
  const cpu = byId(r.cpuPerJob, 'cpu-per-job');
  const total = med(cpu, 'cpu_ms');
  const part = (side: string) => `${side === 'enqueue' ? 'producer' : 'consumer'} ${ms(med(cpu, `${side}_cpu_ms`))} (user ${ms(med(cpu, `${side}_user_ms`))}, sys ${ms(med(cpu, `${side}_sys_ms`))})`;
  // The floor's own CPU per job (floor.c's getrusage): the protocol's filesystem calls alone, no implementation around them.
  const floorCpu = med(byId(r.throughput, 'floor-1t'), 'cpu_ms');
  const bound = floorCpu === undefined ? '' : `; the floor's filesystem calls alone (C, 1 thread): ${ms(floorCpu)}`;
  row('2. CPU per payload job (producer + consumer, user + system) ≤ 1.0 ms', `${ms(total)}: ${part('enqueue')} + ${part('consume')}${bound}`, div(total, 1), '≤ 1.0 ms (ratio: to 1 ms)', at(total, 1, false));

  // 3a. Deep backlog: a Worker's throughput at the deepest backlog against the shallowest.
  const shallow = r.backlogDepths[0];
  const deep = r.backlogDepths.length > 1 ? Math.max(...r.backlogDepths) : undefined;
  const wShallow = byId(r.backlog, `backlog-${shallow}`);
  const wDeep = byId(r.backlog, `backlog-${deep}`);
  const r3a = div(med(wDeep), med(wShallow));
  const cpuRatio = div(med(wDeep, 'cpu_ms'), med(wShallow, 'cpu_ms'));
  row(
    `3a. Worker throughput with ${depth(deep)} queued ≥ 0.9× with ${depth(shallow)} queued`,
    `${formatRate(med(wDeep))} vs ${formatRate(med(wShallow))} jobs/s; CPU ${ms(med(wDeep, 'cpu_ms'))} vs ${ms(med(wShallow, 'cpu_ms'))} per job (${formatRatio(cpuRatio)})`,
    r3a,
    '≥ 0.9×',
    at(r3a, 0.9, true),
  );

  // 3b. enqueue() into the deepest backlog against an empty queue, per job.
  const eDeep = med(byId(r.backlog, 'enqueue-deep'), 'wall_ms');
  const eEmpty = med(byId(r.backlog, 'enqueue-empty'), 'wall_ms');
  const r3b = div(eDeep, eEmpty);
  row(
    `3b. enqueue with ${depth(deep)} queued vs an empty queue, wall time per job`,
    `${ms(eDeep)} vs ${ms(eEmpty)} per job (CPU ${ms(med(byId(r.backlog, 'enqueue-deep'), 'cpu_ms'))} vs ${ms(med(byId(r.backlog, 'enqueue-empty'), 'cpu_ms'))})`,
    r3b,
    '≤ 1.1× (this report\'s goal: depth should not enter)',
    at(r3b, 1.1, false),
  );

  // 3c. `fsjob status` at the deepest queued and finished queues: under a second each.
  const deepFinished = r.depths.length > 0 ? Math.max(...r.depths) : undefined;
  const sQueued = med(byId(r.backlog, `status-queued-${deep}`), 'seconds');
  const sFinished = med(byId(r.backlog, `status-finished-${deepFinished}`), 'seconds');
  const worst = sQueued === undefined || sFinished === undefined ? undefined : Math.max(sQueued, sFinished);
  row(
    `3c. \`fsjob status\` (built CLI) at ${depth(deep)} queued and ${depth(deepFinished)} finished jobs < 1 s`,
    `${seconds(sQueued)} queued, ${seconds(sFinished)} finished (wall)`,
    div(worst, 1),
    '< 1 s each (ratio: the slower to 1 s)',
    worst === undefined ? undefined : worst < 1,
  );

  // 4. Command jobs: one `fsjob work --concurrency N`, best N of 1 and WORK_CONCURRENCY, against node spawning `true` serially.
  const spawn = med(byId(r.commands, 'spawn-pipe'));
  const workIds = ['fsjob-work-1', ...WORK_CONCURRENCY.map((k) => `fsjob-work-c${k}`)];
  const work = best(r.commands, (id) => workIds.includes(id));
  const c1 = med(byId(r.commands, 'fsjob-work-1'));
  const r4 = div(work?.v, spawn);
  const n = work === undefined ? '?' : work.o.system.id === 'fsjob-work-1' ? '1' : work.o.system.id.slice('fsjob-work-c'.length);
  row(
    `4. command jobs \`true\`: one \`fsjob work --concurrency N\` (best N of 1, ${WORK_CONCURRENCY.join(', ')}) ≥ 0.8× node spawning \`true\` serially`,
    `${formatRate(work?.v)} (--concurrency ${n}) vs ${formatRate(spawn)} jobs/s; --concurrency 1: ${formatRate(c1)} jobs/s, ${formatRatio(div(c1, spawn))}`,
    r4,
    '≥ 0.8×',
    at(r4, 0.8, true),
  );

  // 4b. Issue 29, target 1: the same best against the plain-node reference and against nq, each at least half.
  const nq = med(byId(r.commands, 'nq'));
  const [vsNode, vsNq] = [div(work?.v, spawn), div(work?.v, nq)];
  const r4b = vsNode === undefined || vsNq === undefined ? undefined : Math.min(vsNode, vsNq);
  const cpuOf = (id: string | undefined) => (id === undefined ? 'n/a' : ms(med(byId(r.commands, id), 'cpu_ms')));
  row(
    '4b. (issue 29) command jobs `true`: one `fsjob work --concurrency N` (best N) ≥ 0.5× a plain node process spawning `true` serially and ≥ 0.5× nq',
    `${formatRate(work?.v)} (--concurrency ${n}) vs ${formatRate(spawn)} (node) and ${formatRate(nq)} (nq) jobs/s: ${formatRatio(vsNode)} and ${formatRatio(vsNq)}; CPU per job ${cpuOf(work?.o.system.id)} vs ${cpuOf('spawn-pipe')} and ${cpuOf('nq')}`,
    r4b,
    '≥ 0.5× each (ratio: the smaller)',
    at(r4b, 0.5, true),
  );

  // 5a. `fsjob enqueue` from a shell loop against `node -e 0`.
  const cli = byId(r.enqueue, 'cli-enqueue');
  const r5a = div(med(cli, 'enqueue_ms'), med(cli, 'node_ms'));
  row('5a. `fsjob enqueue` from a shell loop, per call ≤ 2× `node -e 0`', `${ms(med(cli, 'enqueue_ms'), 0)} vs ${ms(med(cli, 'node_ms'), 0)} per call (median of ${med(cli, 'calls') ?? '?'} each)`, r5a, '≤ 2.0×', at(r5a, 2, false));

  // 5c, 5d. Issue 29, target 2: the installed command's start against `node -e 0`, in wall time and in CPU (the steadier figure under load); met when both are.
  const startRow = (name: string, key: string, goal: number) => {
    const [wall, cpuTime] = [div(med(cli, `${key}_ms`), med(cli, 'node_ms')), div(med(cli, `${key}_cpu_ms`), med(cli, 'node_cpu_ms'))];
    const worst = wall === undefined || cpuTime === undefined ? undefined : Math.max(wall, cpuTime);
    row(
      name,
      `wall ${ms(med(cli, `${key}_ms`), 1)} vs ${ms(med(cli, 'node_ms'), 1)} (${formatRatio(wall)}); CPU ${ms(med(cli, `${key}_cpu_ms`), 1)} vs ${ms(med(cli, 'node_cpu_ms'), 1)} (${formatRatio(cpuTime)})`,
      worst,
      `≤ ${goal.toFixed(1)}× in wall and CPU (ratio: the larger)`,
      at(worst, goal, false),
    );
  };
  startRow('5c. (issue 29) `fsjob enqueue -- true` as installed (dist/bin/fsjob.js) per call ≤ 1.5× `node -e 0`', 'enqueue', 1.5);
  startRow('5d. (issue 29) `fsjob --version` as installed per call ≤ 1.2× `node -e 0`', 'version', 1.2);

  // 5b. enqueueBatch: cost per job at the largest batch against batch 1.
  const sizes = r.enqueue.map((o) => /^batch-(\d+)$/.exec(o.system.id)?.[1]).filter((v): v is string => v !== undefined).map(Number);
  const largest = sizes.length > 1 ? Math.max(...sizes) : undefined;
  const b1 = med(byId(r.enqueue, 'batch-1'), 'wall_ms');
  const bMax = med(byId(r.enqueue, `batch-${largest}`), 'wall_ms');
  const r5b = div(bMax, b1);
  const fsyncs = typeof r.batchFsyncs === 'object' ? `; fsyncs per job ${r.batchFsyncs[String(largest)]?.toFixed(1) ?? '?'} vs ${r.batchFsyncs['1']?.toFixed(1) ?? '?'}` : '';
  row(`5b. enqueueBatch wall time per job at batch ${depth(largest)} ≤ 0.5× at batch 1`, `${ms(bMax)} vs ${ms(b1)} per job${fsyncs}`, r5b, '≤ 0.5×', at(r5b, 0.5, false));

  // 6. validate at the deepest finished queue.
  const validate = med(byId(r.validate, `validate-${deepFinished}`));
  const validateCpu = med(byId(r.validate, `validate-${deepFinished}`), 'cpu_us_per_job');
  row(`6. (issue 29 target 3 with 3c) \`fsjob validate\` at ${depth(deepFinished)} finished jobs ≥ 20,000 jobs/s`, `${formatRate(validate)} jobs/s (CPU ${validateCpu === undefined ? 'n/a' : `${validateCpu.toFixed(0)} µs`} per job, all threads)`, div(validate, 20_000), '≥ 1.0× of 20,000/s', at(validate, 20_000, true));
  return t;
}
