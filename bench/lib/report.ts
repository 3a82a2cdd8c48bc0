/**
 * The report: one Markdown table per group with each figure's median over
 * rounds and its ratios to the floor and to SQLite WAL FULL measured in the
 * same run, the targets (met or not), the machine and the fs state.
 */
import type { Machine } from './machine.ts';
import type { ProbeResult } from './floor.ts';
import { med, spreadOf, type Outcome, type Sample } from './harness.ts';
import type { CpuSummary, SyscallTable } from './profile.ts';
import { formatMicros, formatRate, formatRatio } from './stats.ts';
import { byId, fixed, metric, status, tableHead } from './tables.ts';
import { backlogSection, cpuPerJobSection, enqueueSection } from './sections.ts';
import { computeTargets, type Target } from './targets.ts';
import { computeHotPathTargets } from './targets-hotpath.ts';

export { computeTargets, type Target } from './targets.ts';

export interface Probe {
  when: string;
  state: string;
  probe: ProbeResult;
  load: { load1: number; cpuSome60: number; ioSome60: number };
}

/** The filesystem one group's files lived on (lib/fresh-fs.ts). */
export interface GroupFs {
  group: string;
  filesystem: string;
  mountOptions: string;
}

export interface Results {
  date: string;
  mode: 'full' | 'quick';
  command: string;
  startedAt: string;
  minutes: number;
  rounds: number;
  machine: Machine;
  /** Where the groups' files lived: a fresh filesystem each, or all in the scratch directory (and why). */
  placement: { fresh: GroupFs[] } | { scratch: string; why: string };
  probes: Probe[];
  throughput: Outcome[];
  cpuPerJob: Outcome[];
  commands: Outcome[];
  enqueue: Outcome[];
  /** fsyncs per job of enqueueBatch by batch size, or why not counted. */
  batchFsyncs: Record<string, number> | string | undefined;
  depth: Outcome[];
  /** Deep backlog: Worker, `fsjob status` and enqueue() figures (lib/scale.ts backlogSystems). */
  backlog: Outcome[];
  backlogDepths: number[];
  validate: Outcome[];
  memory: Array<{ jobs: number; sample: Sample }>;
  afterDeletes: Outcome[];
  depths: number[];
  syscalls: SyscallTable | string | undefined;
  cpu: CpuSummary[];
  notes: string[];
}

/** A throughput table: jobs/s, spread, ratios, latencies, durability. */
export function rateTable(outcomes: readonly Outcome[], refs: readonly Outcome[], opts: { latency?: boolean; extra?: Array<[string, string, (v: number | undefined) => string]> } = {}): string {
  const extra = opts.extra ?? [];
  const head = ['system', 'jobs/s (median)', 'spread', '× floor', '× SQLite FULL', ...(opts.latency === false ? [] : ['p50', 'p99']), ...extra.map((e) => e[1]), 'durability'];
  const lines = tableHead(head, 1, [head.length - 1]);
  for (const o of outcomes) {
    const s = status(o);
    if (s !== undefined) {
      lines.push(`| ${o.system.label} | ${s} |${' |'.repeat(head.length - 2)}`);
      continue;
    }
    const rate = med(o);
    const floor = o.system.refs?.floor === undefined ? undefined : med(byId(refs, o.system.refs.floor));
    const sqlite = o.system.refs?.sqlite === undefined ? undefined : med(byId(refs, o.system.refs.sqlite));
    const sp = spreadOf(o);
    const cells = [
      o.system.label,
      formatRate(rate),
      sp === undefined ? '' : `±${Math.round((sp * 100) / 2)}%`,
      rate === undefined || floor === undefined ? '—' : `${formatRatio(rate / floor)}`,
      rate === undefined || sqlite === undefined ? '—' : `${formatRatio(rate / sqlite)}`,
      ...(opts.latency === false ? [] : [metric(o, 'p50_us', formatMicros), metric(o, 'p99_us', formatMicros)]),
      ...extra.map(([m, , f]) => metric(o, m, f)),
      o.system.durability,
    ];
    lines.push(`| ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

function depthTable(r: Results): string {
  const head = ['depth (finished jobs)', 'fsjob claimNext p50', 'p99', 'vs depth 0', 'claim + complete p50', 'Worker start-up', 'floor job p50', 'vs depth 0', 'SQLite claim p50', 'vs depth 0'];
  const lines = tableHead(head);
  const base = (kind: string, m: string) => med(byId(r.depth, `${kind}-0`), m);
  for (const d of r.depths) {
    const o = (kind: string) => byId(r.depth, `${kind}-${d}`);
    const rel = (kind: string) => {
      const v = med(o(kind), 'p50_us');
      const b = base(kind, 'p50_us');
      return v === undefined || b === undefined ? '—' : formatRatio(v / b);
    };
    const startMs = med(o('start-fsjob'), 'start_ms');
    lines.push(
      `| ${d.toLocaleString('en-US')} | ${formatMicros(med(o('claim-fsjob'), 'p50_us'))} | ${formatMicros(med(o('claim-fsjob'), 'p99_us'))} | ${rel('claim-fsjob')} | ${formatMicros(med(o('claim-fsjob'), 'complete_p50_us'))} | ${startMs === undefined ? 'n/a' : formatMicros(startMs * 1000)} | ${formatMicros(med(o('claim-floor'), 'p50_us'))} | ${rel('claim-floor')} | ${formatMicros(med(o('claim-sqlite'), 'p50_us'))} | ${rel('claim-sqlite')} |`,
    );
  }
  const failures = r.depth.map((o) => ({ o, s: status(o) })).filter((x) => x.s !== undefined);
  for (const { o, s } of failures) lines.push(`\n${o.system.label}: ${s}`);
  return lines.join('\n');
}

function validateTable(r: Results): string {
  const head = ['finished jobs', 'wall time', 'jobs/s', 'jobs/s without start-up', 'CPU per job (all threads)', 'files examined', 'first run: jobs/s, CPU per job'];
  const lines = tableHead(head);
  const empty = med(byId(r.validate, 'validate-0'), 'seconds');
  for (const d of r.depths) {
    const o = byId(r.validate, `validate-${d}`);
    if (o === undefined) continue;
    const s = status(o);
    if (s !== undefined) {
      lines.push(`| ${d.toLocaleString('en-US')} | ${s} | | | | | |`);
      continue;
    }
    const secs = med(o, 'seconds');
    const net = d === 0 || secs === undefined || empty === undefined ? undefined : d / Math.max(1e-3, secs - empty);
    const cpu = med(o, 'cpu_us_per_job');
    const cpuText = d === 0 ? `(${formatMicros((med(o, 'cpu_s') ?? Number.NaN) * 1e6)} in all)` : cpu === undefined || Number.isNaN(cpu) ? 'n/a' : `${cpu.toFixed(0)} µs`;
    const firstCpu = med(o, 'first_cpu_us_per_job');
    const first = d === 0 ? `${((med(o, 'first_seconds') ?? Number.NaN) * 1000).toFixed(0)} ms` : `${formatRate(med(o, 'first_rate'))}, ${firstCpu === undefined || Number.isNaN(firstCpu) ? 'n/a' : `${firstCpu.toFixed(0)} µs`}`;
    lines.push(`| ${d.toLocaleString('en-US')} | ${secs === undefined ? 'n/a' : `${secs.toFixed(2)} s`} | ${d === 0 ? '(start-up)' : formatRate(med(o))} | ${formatRate(net)} | ${cpuText} | ${(med(o, 'files') ?? 0).toLocaleString('en-US')} | ${first} |`);
  }
  return lines.join('\n');
}

function probeTable(r: Results): string {
  const head = ['when', 'fs state', 'fsync after 600 B overwrite', 'fsync, nothing dirty', 'fsync of a new 600 B file', 'create (kernel)', 'load avg 1 min', 'CPU pressure 60 s', 'IO pressure 60 s'];
  const lines = tableHead(head, 2);
  for (const p of r.probes) {
    lines.push(
      `| ${p.when} | ${p.state} | ${formatMicros(p.probe.fsync_overwrite_us)} | ${formatMicros(p.probe.fsync_clean_us)} | ${formatMicros(p.probe.fsync_new_file_us)} | ${p.probe.create_us.toFixed(1)} µs | ${p.load.load1.toFixed(1)} | ${p.load.cpuSome60.toFixed(0)}% | ${p.load.ioSome60.toFixed(0)}% |`,
    );
  }
  return lines.join('\n');
}

function syscallSection(s: SyscallTable | string | undefined): string {
  if (s === undefined) return 'Not measured in this run.';
  if (typeof s === 'string') return s;
  const head = ['syscall', ...s.columns];
  const lines = tableHead(head);
  for (const row of s.rows) lines.push(`| ${row.syscall} | ${row.perJob.map((v) => (v === undefined ? '' : v.toFixed(1))).join(' | ')} |`);
  return lines.join('\n');
}

function cpuSection(cpu: readonly CpuSummary[]): string {
  const parts: string[] = [];
  for (const c of cpu) {
    parts.push(`**${c.label}**, ${c.jobs} jobs: ${c.wallMsPerJob.toFixed(2)} ms wall per job${c.cpuMsPerJob === undefined ? '' : `, ${c.cpuMsPerJob.toFixed(2)} ms CPU per job (user + system)`}.`);
    if (c.phases !== undefined) parts.push(`Per job (median ms): ${Object.entries(c.phases).map(([k, v]) => `${k} ${v.toFixed(2)}`).join('; ')}.`);
    parts.push('', '| self time by file | ms | share of samples |', '| --- | ---: | ---: |');
    for (const h of c.byFile) parts.push(`| ${h.what} | ${h.selfMs.toFixed(0)} | ${(h.share * 100).toFixed(1)}% |`);
    for (const h of c.special) parts.push(`| ${h.what} | ${h.selfMs.toFixed(0)} | ${(h.share * 100).toFixed(1)}% |`);
    parts.push('', '| self time by function | ms | share |', '| --- | ---: | ---: |');
    for (const h of c.byFunction) parts.push(`| \`${h.what}\` | ${h.selfMs.toFixed(0)} | ${(h.share * 100).toFixed(1)}% |`);
    parts.push('');
  }
  return parts.join('\n');
}

/** How the groups' files were placed, and why (bench/README.md, "The filesystem"). */
function placementNote(r: Results): string {
  const why =
    "Why: an ext4 without a journal (the root filesystem of the VM these reports come from is one) checks, on every create, whether the inode it is about to reuse was freed in the last minute and skips past it (recently_deleted()); there, after thousands of deletes, a create cost 344-751 µs instead of 15 µs, so every file-creating figure depended on what ran the minute before, and two runs of one commit disagreed twofold (bench/results/2026-12-05-run2.md and -run2-repeat.md).";
  if ('fresh' in r.placement) {
    return `Method: each group ran on a filesystem of its own, made for it and removed after it (bench/lib/fresh-fs.ts): mkfs.ext4 with its defaults, so with a journal, as users have it, on a loop device over a sparse image file. ${why} A journalled ext4 does not make that check, so no \`sync; sleep 62\` precedes the groups; the probe's "create (kernel)" column shows each group's create cost.`;
  }
  return `Method: every group ran in the scratch directory ${r.placement.scratch} (${r.placement.why}), after a \`sync; sleep 62\` unless the fs state says unsettled, not on a fresh filesystem per group (the default where one can be made). ${why} The probe's "create (kernel)" column shows whether that happened in this run.`;
}

export function renderReport(r: Results, svgName: string, analysis: string): string {
  const m = r.machine;
  const targets = computeTargets(r);
  const out: string[] = [];
  out.push(`# fsjob benchmarks, ${r.date}`, '');
  out.push(
    `\`${r.command}\` (${r.mode} mode: ${r.rounds} round${r.rounds > 1 ? 's' : ''} per group, round-robin over systems, medians reported), started ${r.startedAt}, ${r.minutes.toFixed(1)} minutes. Every figure below was measured in this one run; ratios compare figures of the same run and the same fs state only.`,
    '',
  );
  out.push(`![throughput, command jobs and claim latency by queue depth](${svgName})`, '');
  out.push('## Machine', '');
  out.push('| | |', '| --- | --- |');
  out.push(`| CPU | ${m.cores} cores, ${m.cpu} |`, `| memory | ${m.memoryGiB} GiB |`, `| kernel | ${m.kernel} |`, `| node | ${m.node} |`);
  out.push(`| disk | ${m.disk}, write cache: ${m.writeCache} |`);
  if ('fresh' in r.placement) {
    out.push(
      '| filesystem under test | a fresh ext4 for each group, on a loop device over an image file on this disk (table below) |',
      `| the image files' filesystem | ${m.filesystem}, journal: ${m.journal}; mount options ${m.mountOptions} |`,
    );
  } else {
    out.push(`| filesystem | ${m.filesystem}, journal: ${m.journal}; every group in the scratch directory ${r.placement.scratch} (${r.placement.why}) |`, `| mount options | ${m.mountOptions} |`);
  }
  out.push(`| SQLite | ${m.sqlite} (better-sqlite3 12) |`, '');
  if ('fresh' in r.placement) {
    out.push('Each group\'s filesystem; every system of the group (the floor, fsjob, SQLite, the Debian queues, node\'s reference) kept its files there:', '');
    out.push('| group | filesystem | mount options |', '| --- | --- | --- |', ...r.placement.fresh.map((g) => `| ${g.group} | ${g.filesystem} | ${g.mountOptions} |`), '');
  }
  out.push('The disk and the load, probed on the group\'s filesystem before each group (bench/floor.c probe: 100 samples each):', '', probeTable(r), '');
  const targetRows = (list: readonly Target[]): void => {
    out.push('| target | measured | ratio | goal | met |', '| --- | --- | ---: | --- | --- |');
    for (const t of list) out.push(`| ${t.name} | ${t.measured} | ${formatRatio(t.ratio)} | ${t.goal} | ${t.met === undefined ? 'not measured' : t.met ? '**met**' : '**not met**'} |`);
    out.push('');
  };
  out.push('## Targets of issue 24 (the hot path, consumers that scale, the producer)', '');
  out.push(
    `Every ratio divides two figures of this run, measured side by side in the same fs state; "not measured" means a figure is missing (\`npm run bench -- --only throughput,cpu\` measures all of them). This machine has ${m.cores} cores, which picks the scaling goals.`,
    '',
  );
  targetRows(computeHotPathTargets(r));
  out.push('## Targets of issue 16', '');
  out.push(
    'The six targets of issue 16 (and 4b, issue 29\'s for command jobs); a target with several goals has a row for each. Every ratio divides two figures of this run, measured side by side in the same fs state; "not measured" means a figure is missing (a group left out with --only, a skipped or failed system). In quick mode the deep queues are smaller: each row names the depth it used.',
    '',
  );
  targetRows(targets);
  const stateOf = (when: string) => r.probes.find((p) => p.when === when)?.state ?? 'unknown';
  out.push(`## 1. Throughput: the floor, fsjob at library level, SQLite, dirq (fs state: ${stateOf('before throughput')})`, '');
  out.push(
    'Full cycle = one producer process enqueuing all jobs while the consumers run (enqueue to receipt); its rate is jobs / (last receipt − first enqueue). "× floor" divides by the floor of the same shape (enqueue only, or the single-threaded full sequence); "× SQLite FULL" by SQLite WAL FULL with the same number of consumers (2 for more). p50/p99 of a full cycle include the time a job waits in the queue behind the others; the latency rows measure one job at a time with an idle consumer. fsjob consumers are Worker processes with a handler (payload jobs; no command spawned); "async" rows run several jobs at once in one process. Target 1 takes the best fsjob full-cycle row against the best SQLite WAL FULL full-cycle row; the floor with 1 to 64 threads shows what concurrent fsyncs of the calls the spec asks for reach on this disk. fsjob has no non-durable mode (the spec offers none), so none is measured.',
    '',
  );
  out.push(
    'CPU ms/job: user + system CPU of every process of the row (the producer and each consumer, every thread), from the common start to its end, divided by the jobs; the floor\'s from its getrusage. Consumer processes with concurrency k run with UV_THREADPOOL_SIZE = max(4, k) in their environment (spec/design-hot-path.md).',
    '',
  );
  out.push(rateTable(r.throughput, r.throughput, { extra: [['cpu_ms', 'CPU ms/job', fixed(2, ' ms')], ['enqueue_rate', 'enqueue jobs/s during the cycle', formatRate]] }), '');
  const floorCalls = byId(r.throughput, 'floor-1t');
  if (floorCalls !== undefined && floorCalls.samples.length > 0) {
    const kinds = Object.keys(floorCalls.samples[0] as Sample).filter((k) => k.startsWith('_us_'));
    out.push('Mean time per call inside the floor (1 thread, medians over rounds): ' + kinds.map((k) => `${k.slice(4)} ${formatMicros(med(floorCalls, k))}`).join(', ') + '.', '');
  }
  out.push(`## 2. CPU per payload job (fs state: ${stateOf('before CPU per job')})`, '', cpuPerJobSection(r), '');
  out.push(`## 4. Command jobs (\`true\`) (fs state: ${stateOf('before command jobs')})`, '');
  out.push(
    '`fsjob work` rates come from the receipts\' own times: (jobs − 1) / (last finished_ms − first finished_ms), so node start-up is not counted; the "wall" column includes it. nq and task-spooler are measured enqueue-to-done (each enqueue is a process start); filespooler processes packets prepared beforehand. "× floor" is left blank here: the reference is a plain node process (bench/spawn-rate.mjs, no tsx loader) spawning `true` serially (piped stdio, as a worker capturing output needs). CPU per job: for the reference, its own and its children\'s over the measured spawns; for the others, every process of the run, counted by a cgroup of its own (bench/lib/cgroup-cpu.ts; n/a where none can be made), less, for `fsjob work`, the start-up and shutdown of as many workers draining an empty queue; filespooler\'s includes preparing its packets.',
    '',
  );
  out.push(
    rateTable(r.commands.filter((o) => o.system.id !== 'fsjob-work-latency'), r.commands, {
      latency: false,
      extra: [
        ['wall_rate', 'jobs/s incl. start-up', formatRate],
        ['cpu_ms', 'CPU ms per job', fixed(2)],
      ],
    }),
    '',
  );
  const spawn = med(byId(r.commands, 'spawn-pipe'));
  if (spawn !== undefined) {
    const rows = r.commands.filter((o) => o.system.id.startsWith('fsjob-work-') && o.system.id !== 'fsjob-work-latency' && med(o) !== undefined);
    if (rows.length > 0) out.push(`Against node spawning \`true\` serially (${formatRate(spawn)}/s): ${rows.map((o) => `${o.system.label}: ${formatRatio((med(o) as number) / spawn)}`).join('; ')}.`, '');
  }
  const lat = byId(r.commands, 'fsjob-work-latency');
  if (lat !== undefined) {
    const s = status(lat);
    out.push(
      s !== undefined
        ? `Enqueue-to-start latency with an idle \`fsjob work\`: ${s}`
        : `Enqueue-to-start latency with an idle \`fsjob work\` (fs.watch wake-up; start = the instant \`date +%s%N\` ran): p50 ${formatMicros(med(lat, 'p50_us'))}, p99 ${formatMicros(med(lat, 'p99_us'))}; to the receipt as \`fsjob\`'s waitFor sees it: p50 ${formatMicros(med(lat, 'receipt_p50_us'))}, p99 ${formatMicros(med(lat, 'receipt_p99_us'))}. \`fsjob work\` has no switch to turn fs.watch off (it always watches ready/ and jobs/ and polls every 1000 ms besides); polling alone is measured at library level above ("fs.watch unavailable").`,
      '',
    );
  }
  out.push(`## 5. The enqueue command and enqueueBatch (fs state: ${stateOf('before enqueue')})`, '', enqueueSection(r), '');
  out.push(`## 3, 6. Scale (fs state: ${stateOf('before scale')}; all depths measured round-robin in one state)`, '');
  out.push(
    'Finished jobs are written straight into jobs/ by bench/fill.c from records made with the reference encoder (they validate clean). Claim latency is `claimNext()` on an opened queue right after one job was enqueued (it claims and records the execution; a payload job has no output files); "claim + complete" adds the receipt. The floor row is one whole job sequence in the same jobs/ directory (what the filesystem itself adds with depth). SQLite: the claim transaction with that many done rows.',
    '',
  );
  out.push(depthTable(r), '');
  out.push('`fsjob validate QUEUE --json` (the whole-queue audit), run twice per depth: the figures are the second run, page cache warm; the first run, the first read since the queue was written, is beside them (listing each job directory updates its atime under relatime, which ext4 journals: work of the kernel\'s threads besides the audit; bench/lib/scale.ts):', '', validateTable(r), '');
  if (r.memory.length > 0) {
    out.push('Memory of `fsjob work` over a queue of queued `true` jobs: max RSS = VmHWM of the worker process (sampled every 100 ms) through its start-up (node, then the READY-4 scan of jobs/, until it registers in workers/) and a window of serving; the guardian is a separate small process.', '');
    out.push('| queued jobs | max RSS | start-up until registered | jobs finished in the window |', '| ---: | ---: | ---: | ---: |');
    for (const { jobs, sample } of r.memory) {
      out.push(`| ${jobs.toLocaleString('en-US')} | ${sample['max_rss_mib']?.toFixed(0) ?? '?'} MiB | ${Number.isFinite(sample['startup_s']) ? `${sample['startup_s']?.toFixed(1)} s` : 'never'} | ${sample['finished_in_window']} in ${sample['window_s']} s |`);
    }
    out.push('');
  }
  if (r.backlog.length > 0) {
    out.push('### Deep backlog: queued payload jobs', '');
    out.push(
      "Queues of queued payload jobs built by bench/fill.c (spec.json and a ready/ entry each), consumed by the runs (a depth is built anew when a run would take it below 90% of its label; nothing is removed during the run). Worker: a fresh process, concurrency 1, a no-op handler; jobs/s and CPU (user + system of the process) per job over its jobs after the first 10, so start-up, the READY-4 scan and the first listing are out (\"first claim\" shows them). CPU per job is the steadier figure on a loaded machine. `fsjob status -q Q` is the built command (`node bin/fsjob.js`, dist/), its default summary, timed from spawn to exit (CPU from GNU time), run before the Worker takes its jobs. enqueue(): a fresh process, after 2 unmeasured jobs in a queue of its own.",
      '',
      backlogSection(r),
      '',
    );
  }
  if (r.afterDeletes.length > 0) {
    out.push('## The "after deletes" state', '');
    out.push(
      'Each run below starts right after thousands of finished jobs were removed from the very queue directory it then uses (bench/lib/fsstate.ts), as a queue that collects its garbage does. Compare these rows with each other, and with the same systems in the clean table above (ratio column).',
      '',
    );
    const head = ['system', 'jobs/s (median)', 'vs clean', '× floor', '× SQLite FULL', 'p50', 'p99'];
    out.push(...tableHead(head));
    for (const o of r.afterDeletes) {
      const s = status(o);
      if (s !== undefined) {
        out.push(`| ${o.system.label} | ${s} | | | | | |`);
        continue;
      }
      const cleanId = o.system.id.replace(/^ad-/, '');
      const clean = med(byId(r.throughput, cleanId));
      const rate = med(o);
      const floor = med(byId(r.afterDeletes, 'ad-floor-1t'));
      const sqlite = med(byId(r.afterDeletes, 'ad-sqlite-full-c2'));
      const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? '—' : formatRatio(a / b));
      out.push(`| ${o.system.label} | ${formatRate(rate)} | ${ratio(rate, clean)} | ${ratio(rate, floor)} | ${ratio(rate, sqlite)} | ${metric(o, 'p50_us', formatMicros)} | ${metric(o, 'p99_us', formatMicros)} |`);
    }
    const ad = byId(r.afterDeletes, 'ad-floor-1t');
    if (ad !== undefined && ad.samples.length > 0) {
      out.push('', `Inside the floor after deletes: create ${formatMicros(med(ad, '_us_create'))} (clean: ${formatMicros(med(floorCalls, '_us_create'))}), mkdir ${formatMicros(med(ad, '_us_mkdir'))} (clean: ${formatMicros(med(floorCalls, '_us_mkdir'))}).`);
    }
    out.push('');
  }
  out.push('## Where the time goes', '');
  if (analysis.trim() !== '') out.push(analysis.trim(), '');
  out.push('### System calls per job (strace -f -c; difference of two run lengths, so start-up cancels out)', '', syscallSection(r.syscalls), '');
  out.push('### CPU profiles (node --cpu-prof)', '', r.cpu.length === 0 ? 'Not measured in this run.' : cpuSection(r.cpu), '');
  const skipped = [...r.throughput, ...r.commands, ...r.depth, ...r.validate, ...r.afterDeletes].filter((o) => o.skipped !== undefined);
  const notes = [placementNote(r), ...r.notes, ...skipped.map((o) => `${o.system.label}: skipped (${o.skipped})`)];
  if (notes.length > 0) out.push('## Notes and skipped systems', '', ...notes.map((n) => `- ${n}`), '');
  return out.join('\n');
}
