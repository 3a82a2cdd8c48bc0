/**
 * The report's tables for the figures issue 16 added: CPU per payload job,
 * the enqueue command and enqueueBatch, and the deep backlog.
 */
import { med, type Outcome } from './harness.ts';
import type { Results } from './report.ts';
import { formatMicros, formatRate, formatRatio } from './stats.ts';
import { byId, fixed, metric, status, tableHead } from './tables.ts';

const msCell = fixed(2, ' ms');
const ratio = (a: number | undefined, b: number | undefined) => formatRatio(a === undefined || b === undefined ? undefined : a / b);

/** The lines naming each outcome that has no figures, and why. */
function failures(outcomes: readonly Outcome[]): string[] {
  return outcomes.flatMap((o) => {
    const s = status(o);
    return s === undefined ? [] : [`${o.system.label}: ${s}`];
  });
}

export function cpuPerJobSection(r: Results): string {
  const o = byId(r.cpuPerJob, 'cpu-per-job');
  if (o === undefined) return 'Not measured in this run.';
  const s = status(o);
  if (s !== undefined) return `${o.system.label}: ${s}`;
  const lines = [`${o.system.label}; CPU time = user + system of that process (getrusage), per job, medians over rounds. Module loading and 5 warm-up jobs come before the figures; the consume phase counts from the Worker's first claim (its start-up, the FS-2 probe and the READY-4 scan, is per process).`, ''];
  lines.push(...tableHead(['part', 'CPU ms/job (user + system)', 'user', 'system', 'wall ms/job']));
  for (const [side, name] of [['enqueue', 'producer: enqueue()'], ['consume', 'consumer: Worker claim, handler, receipt']] as const) {
    lines.push(`| ${name} | ${metric(o, `${side}_cpu_ms`, msCell)} | ${metric(o, `${side}_user_ms`, msCell)} | ${metric(o, `${side}_sys_ms`, msCell)} | ${metric(o, `${side}_wall_ms`, msCell)} |`);
  }
  lines.push(`| **both** | **${metric(o, 'cpu_ms', msCell)}** | | | |`);
  const floor = byId(r.cpuPerJob, 'cpu-floor');
  if (floor !== undefined) lines.push(`| ${floor.system.label} | ${status(floor) ?? metric(floor, 'cpu_ms', msCell)} | | | |`);
  return lines.join('\n');
}

export function enqueueSection(r: Results): string {
  const out: string[] = [];
  const cli = byId(r.enqueue, 'cli-enqueue');
  if (cli !== undefined && status(cli) === undefined) {
    out.push(`${cli.system.label}: wall time and user + system CPU per call (wait4), medians of the calls, then medians over rounds; the ratios divide by \`node -e 0\`'s of the same run.`, '');
    out.push(...tableHead(['command', 'wall per call', '× `node -e 0`', 'CPU per call', '× `node -e 0` (CPU)']));
    const rowOf = (name: string, key: string) =>
      `| ${name} | ${metric(cli, `${key}_ms`, fixed(1, ' ms'))} | ${ratio(med(cli, `${key}_ms`), med(cli, 'node_ms'))} | ${metric(cli, `${key}_cpu_ms`, fixed(1, ' ms'))} | ${ratio(med(cli, `${key}_cpu_ms`), med(cli, 'node_cpu_ms'))} |`;
    out.push(rowOf('`node -e 0`', 'node'), rowOf('`fsjob --version` (dist/bin/fsjob.js, as installed)', 'version'), rowOf('`fsjob enqueue --queue Q -- true` (dist/bin/fsjob.js)', 'enqueue'), rowOf('the same through the checkout\'s bin/fsjob.js', 'checkout'), rowOf('the same without the start-up cache (`env FSJOB_NO_CACHE=1`: the ES modules, src/cli/start-cache.ts)', 'enqueue-nocache'), '');
  }
  const batches = r.enqueue.filter((o) => o.system.id.startsWith('batch-') && status(o) === undefined);
  if (batches.length > 0) {
    const fsyncs = r.batchFsyncs;
    out.push(
      `\`enqueueBatch(queue, lines)\` (src/producer), one process, a fresh queue per batch size; each row enqueues its jobs in calls of that many lines, durable as \`enqueue\` (every record fsynced). fsyncs per job: ${typeof fsyncs === 'object' ? 'strace -f -c stopping at fsync and fdatasync alone, the difference of a run of one batch (10 calls at size 1) and one of none' : fsyncs === undefined ? 'not counted in this run' : fsyncs}.`,
      '',
    );
    out.push(...tableHead(['lines per call', 'jobs', 'wall ms/job', '× batch 1', 'CPU ms/job', 'jobs/s', 'fsyncs per job']));
    const one = med(byId(r.enqueue, 'batch-1'), 'wall_ms');
    for (const o of batches) {
      const size = o.system.id.slice('batch-'.length);
      const f = typeof fsyncs === 'object' ? fsyncs[size] : undefined;
      out.push(`| ${Number(size).toLocaleString('en-US')} | ${med(o, 'jobs')?.toLocaleString('en-US') ?? '?'} | ${metric(o, 'wall_ms', msCell)} | ${ratio(med(o, 'wall_ms'), one)} | ${metric(o, 'cpu_ms', msCell)} | ${formatRate(med(o))} | ${f === undefined ? 'n/a' : f.toFixed(2)} |`);
    }
    out.push('');
  }
  out.push(...failures(r.enqueue).map((line) => `${line}\n`));
  return out.length === 0 ? 'Not measured in this run.' : out.join('\n').trim();
}

export function backlogSection(r: Results): string {
  if (r.backlog.length === 0) return 'Not measured in this run.';
  const out: string[] = [];
  const shallow = r.backlogDepths[0];
  const base = byId(r.backlog, `backlog-${shallow}`);
  out.push(...tableHead(['queued jobs', 'Worker jobs/s', `vs ${shallow?.toLocaleString('en-US')} queued`, 'CPU ms/job', `vs ${shallow?.toLocaleString('en-US')} queued`, 'first claim', '`fsjob status` wall', 'status CPU']));
  for (const d of r.backlogDepths) {
    const w = byId(r.backlog, `backlog-${d}`);
    const st = byId(r.backlog, `status-queued-${d}`);
    out.push(
      `| ${d.toLocaleString('en-US')} | ${formatRate(med(w))} | ${ratio(med(w), med(base))} | ${metric(w, 'cpu_ms', msCell)} | ${ratio(med(w, 'cpu_ms'), med(base, 'cpu_ms'))} | ${formatMicros((med(w, 'start_ms') ?? Number.NaN) * 1000)} | ${metric(st, 'seconds', fixed(2, ' s'))} | ${metric(st, 'cpu_s', fixed(2, ' s'))} |`,
    );
  }
  const finished = r.backlog.find((o) => o.system.id.startsWith('status-finished-'));
  if (finished !== undefined && status(finished) === undefined) {
    out.push('', `${finished.system.label}: ${metric(finished, 'seconds', fixed(2, ' s'))} wall, ${metric(finished, 'cpu_s', fixed(2, ' s'))} CPU.`);
  }
  const deep = byId(r.backlog, 'enqueue-deep');
  const empty = byId(r.backlog, 'enqueue-empty');
  if (deep !== undefined || empty !== undefined) {
    out.push('', ...tableHead(['enqueue() (payload jobs, 1 process)', 'wall ms/job', 'CPU ms/job', 'jobs/s']));
    for (const o of [deep, empty]) if (o !== undefined) out.push(`| ${o.system.label} | ${metric(o, 'wall_ms', msCell)} | ${metric(o, 'cpu_ms', msCell)} | ${formatRate(med(o))} |`);
    out.push(`| deep / empty | ${ratio(med(deep, 'wall_ms'), med(empty, 'wall_ms'))} | ${ratio(med(deep, 'cpu_ms'), med(empty, 'cpu_ms'))} | |`);
  }
  const failed = failures(r.backlog);
  if (failed.length > 0) out.push('', ...failed);
  return out.join('\n');
}
