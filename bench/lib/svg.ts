/**
 * The chart of a run, as hand-written SVG (no dependency): throughput bars by
 * system on a log scale, command-job rates, and claim latency by queue depth.
 */
import { med, type Outcome } from './harness.ts';
import type { Results } from './report.ts';
import { formatMicros, formatRate } from './stats.ts';

const W = 980;
const LABEL_W = 250;
const BAR_X = LABEL_W + 10;
const BAR_W = W - BAR_X - 90;
const ROW_H = 20;

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

function colour(id: string): string {
  if (id.startsWith('floor')) return '#6b7280';
  if (id.startsWith('fsjob')) return '#2563eb';
  if (id.startsWith('sqlite-full')) return '#ea580c';
  if (id.startsWith('sqlite-normal')) return '#fdba74';
  if (id.startsWith('spawn')) return '#6b7280';
  return '#16a34a';
}

/** Chart labels: the table's labels are sentences, a bar needs a few words. */
const SHORT: Record<string, string> = {
  'floor-enq': 'floor: enqueue only',
  'floor-1t': 'floor: job sequence, 1 thread',
  'floor-2t': 'floor: job sequence, 2 threads',
  'floor-4t': 'floor: job sequence, 4 threads',
  'floor-16t': 'floor: job sequence, 16 threads',
  'floor-64t': 'floor: job sequence, 64 threads',
  'fsjob-enq': 'fsjob: enqueue only',
  'fsjob-enq-many': 'fsjob: enqueue only, enqueueMany',
  'fsjob-c1': 'fsjob: cycle, 1 consumer',
  'fsjob-c2': 'fsjob: cycle, 2 consumers',
  'fsjob-c4': 'fsjob: cycle, 4 consumers',
  'fsjob-c8': 'fsjob: cycle, 8 consumers',
  'fsjob-c16': 'fsjob: cycle, 16 consumers',
  'fsjob-a2': 'fsjob: cycle, 1 process × 2 async',
  'fsjob-a4': 'fsjob: cycle, 1 process × 4 async',
  'fsjob-a8': 'fsjob: cycle, 1 process × 8 async',
  'fsjob-a16': 'fsjob: cycle, 1 process × 16 async',
  'fsjob-a32': 'fsjob: cycle, 1 process × 32 async',
  'fsjob-a64': 'fsjob: cycle, 1 process × 64 async',
  'fsjob-b16': 'fsjob: cycle, × 16 async, batched producer',
  'sqlite-full-insert': 'SQLite FULL: enqueue only',
  'sqlite-full-c1': 'SQLite FULL: cycle, 1 consumer',
  'sqlite-full-c2': 'SQLite FULL: cycle, 2 consumers',
  'sqlite-full-c4': 'SQLite FULL: cycle, 4 consumers',
  'sqlite-full-c8': 'SQLite FULL: cycle, 8 consumers',
  'sqlite-normal-insert': 'SQLite NORMAL: enqueue only',
  'sqlite-normal-c1': 'SQLite NORMAL: cycle, 1 consumer',
  'sqlite-normal-c2': 'SQLite NORMAL: cycle, 2 consumers',
  'dirq-enq': 'dirq: enqueue only',
  'dirq-c1': 'dirq: cycle, 1 consumer',
  'dirq-c2': 'dirq: cycle, 2 consumers',
  'spawn-pipe': 'node spawns `true` (reference)',
  'spawn-ignore': 'node spawns `true`, stdio ignored',
  'fsjob-work-1': 'fsjob work, 1 worker',
  'fsjob-work-2': 'fsjob work, 2 workers',
  'fsjob-work-c2': 'fsjob work, 1 worker, concurrency 2',
  'fsjob-work-c4': 'fsjob work, 1 worker, concurrency 4',
  'fsjob-work-c8': 'fsjob work, 1 worker, concurrency 8',
  'fsjob-work-c16': 'fsjob work, 1 worker, concurrency 16',
  'fsjob-work-c32': 'fsjob work, 1 worker, concurrency 32',
  'fsjob-work-c64': 'fsjob work, 1 worker, concurrency 64',
  nq: 'nq (enqueue + run)',
  tsp: 'task-spooler (enqueue + run)',
  fspl: 'filespooler queue-process',
};

interface Bar {
  id: string;
  label: string;
  value: number;
}

function bars(outcomes: readonly Outcome[], skip: (o: Outcome) => boolean): Bar[] {
  return outcomes
    .filter((o) => !skip(o))
    .map((o) => ({ id: o.system.id, label: SHORT[o.system.id] ?? o.system.label, value: med(o) ?? Number.NaN }))
    .filter((b) => Number.isFinite(b.value) && b.value > 0);
}

/** Horizontal bars on a log10 axis; returns the SVG fragment and its height. */
/** Round tick values for a linear axis: 1, 2 or 5 times a power of ten. */
function niceStep(max: number): number {
  const raw = max / 5;
  const p = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw) ?? 10 * p;
}

const tickText = (v: number) => (v >= 1000 ? v.toLocaleString('en-US') : String(Number(v.toPrecision(3))));

function barPanel(y0: number, title: string, subtitle: string, data: readonly Bar[], log: boolean, unit: string): { svg: string; height: number } {
  const parts: string[] = [];
  parts.push(`<text x="16" y="${y0 + 18}" class="title">${esc(title)}</text>`);
  parts.push(`<text x="16" y="${y0 + 36}" class="sub">${esc(subtitle)}</text>`);
  const top = y0 + 52;
  const max = Math.max(...data.map((d) => d.value), 1);
  const min = Math.min(...data.map((d) => d.value), max);
  const lo = log ? 10 ** Math.floor(Math.log10(Math.max(min, 1e-3))) : 0;
  const step = niceStep(max * 1.05);
  const hi = log ? 10 ** Math.ceil(Math.log10(max)) : Math.ceil((max * 1.05) / step) * step;
  const x = (v: number) => BAR_X + (log ? (Math.log10(v / lo) / Math.log10(hi / lo)) * BAR_W : (v / hi) * BAR_W);
  const height = data.length * ROW_H + 30;
  // Grid.
  const ticks: number[] = [];
  if (log) for (let t = lo; t <= hi * 1.0001; t *= 10) ticks.push(t);
  else for (let t = 0; t <= hi * 1.0001; t += step) ticks.push(t);
  for (const t of ticks) {
    const gx = x(Math.max(t, log ? lo : 0));
    parts.push(`<line x1="${gx.toFixed(1)}" y1="${top - 4}" x2="${gx.toFixed(1)}" y2="${top + data.length * ROW_H}" class="grid"/>`);
    parts.push(`<text x="${gx.toFixed(1)}" y="${top + data.length * ROW_H + 14}" class="tick" text-anchor="middle">${esc(tickText(t))}</text>`);
  }
  data.forEach((d, i) => {
    const y = top + i * ROW_H;
    const w = Math.max(1, x(d.value) - BAR_X);
    parts.push(`<text x="${LABEL_W}" y="${y + 14}" class="label" text-anchor="end">${esc(d.label.length > 58 ? `${d.label.slice(0, 56)}…` : d.label)}</text>`);
    parts.push(`<rect x="${BAR_X}" y="${y + 3}" width="${w.toFixed(1)}" height="${ROW_H - 6}" fill="${colour(d.id)}" rx="2"><title>${esc(`${d.label}: ${formatRate(d.value)} ${unit}`)}</title></rect>`);
    parts.push(`<text x="${(BAR_X + w + 6).toFixed(1)}" y="${y + 14}" class="value">${esc(formatRate(d.value))}</text>`);
  });
  return { svg: parts.join('\n'), height: 50 + height };
}

/** Grouped bars of p50 latency (log µs) per depth, with the target line (1.2× fsjob at depth 0). */
function depthPanel(y0: number, r: Results): { svg: string; height: number } {
  const series = [
    { kind: 'claim-fsjob', label: 'fsjob claimNext()', colour: '#2563eb' },
    { kind: 'claim-floor', label: 'floor: whole job sequence', colour: '#6b7280' },
    { kind: 'claim-sqlite', label: 'SQLite FULL claim', colour: '#ea580c' },
  ];
  const value = (kind: string, d: number) => med(r.depth.find((o) => o.system.id === `${kind}-${d}`), 'p50_us');
  const values = r.depths.flatMap((d) => series.map((s) => value(s.kind, d))).filter((v): v is number => v !== undefined && v > 0);
  const parts: string[] = [];
  parts.push(`<text x="16" y="${y0 + 18}" class="title">Claim latency by queue depth (p50, log scale)</text>`);
  parts.push(`<text x="16" y="${y0 + 36}" class="sub">Finished jobs already in the queue; dashed: the target, 1.2 × fsjob's claim at depth 0. Lower is better.</text>`);
  if (values.length === 0) {
    parts.push(`<text x="16" y="${y0 + 60}" class="sub">not measured in this run</text>`);
    return { svg: parts.join('\n'), height: 70 };
  }
  const top = y0 + 60;
  const h = 220;
  const lo = 10 ** Math.floor(Math.log10(Math.min(...values)));
  const hi = 10 ** Math.ceil(Math.log10(Math.max(...values) * 1.3));
  const y = (v: number) => top + h - (Math.log10(v / lo) / Math.log10(hi / lo)) * h;
  const left = 90;
  const groupW = (W - left - 220) / r.depths.length;
  for (let t = lo; t <= hi * 1.0001; t *= 10) {
    parts.push(`<line x1="${left}" y1="${y(t).toFixed(1)}" x2="${left + groupW * r.depths.length}" y2="${y(t).toFixed(1)}" class="grid"/>`);
    parts.push(`<text x="${left - 6}" y="${(y(t) + 4).toFixed(1)}" class="tick" text-anchor="end">${esc(formatMicros(t))}</text>`);
  }
  const bw = Math.min(60, (groupW - 30) / series.length);
  r.depths.forEach((d, gi) => {
    const gx = left + gi * groupW + 15;
    series.forEach((s, si) => {
      const v = value(s.kind, d);
      if (v === undefined || v <= 0) return;
      const bx = gx + si * bw;
      parts.push(`<rect x="${bx.toFixed(1)}" y="${y(v).toFixed(1)}" width="${(bw - 4).toFixed(1)}" height="${(top + h - y(v)).toFixed(1)}" fill="${s.colour}" rx="2"><title>${esc(`${s.label} at ${d}: ${formatMicros(v)}`)}</title></rect>`);
      parts.push(`<text x="${(bx + (bw - 4) / 2).toFixed(1)}" y="${(y(v) - 4).toFixed(1)}" class="value" text-anchor="middle">${esc(formatMicros(v))}</text>`);
    });
    parts.push(`<text x="${(gx + (series.length * bw) / 2).toFixed(1)}" y="${top + h + 18}" class="label" text-anchor="middle">${esc(`${d.toLocaleString('en-US')} finished`)}</text>`);
  });
  const base = value('claim-fsjob', 0);
  if (base !== undefined) {
    const ty = y(base * 1.2);
    parts.push(`<line x1="${left}" y1="${ty.toFixed(1)}" x2="${left + groupW * r.depths.length}" y2="${ty.toFixed(1)}" stroke="#2563eb" stroke-dasharray="6 4" stroke-width="1.5"/>`);
    parts.push(`<text x="${left + 4}" y="${(ty - 4).toFixed(1)}" class="tick">target: 1.2 × depth 0</text>`);
  }
  series.forEach((s, i) => {
    const ly = top + 10 + i * 20;
    parts.push(`<rect x="${W - 200}" y="${ly}" width="14" height="12" fill="${s.colour}"/>`, `<text x="${W - 180}" y="${ly + 11}" class="label">${esc(s.label)}</text>`);
  });
  return { svg: parts.join('\n'), height: 60 + h + 40 };
}

export function renderSvg(r: Results): string {
  const throughput = bars(r.throughput, (o) => o.system.id.includes('latency'));
  const commands = bars(r.commands, (o) => o.system.id.includes('latency'));
  const panels: string[] = [];
  let y = 10;
  const state = r.probes[0]?.state ?? 'unknown';
  const a = barPanel(y, 'Throughput (jobs/s, log scale): durable fsjob vs the floor and SQLite', `${r.date}, ${r.mode} run, fs state ${state}. Grey: the floor (the spec's syscalls in C); blue: fsjob; orange: SQLite WAL (dark FULL, light NORMAL); green: dirq (not durable).`, throughput, true, 'jobs/s');
  panels.push(a.svg);
  y += a.height + 20;
  const b = barPanel(y, 'Command jobs `true` (jobs/s)', 'Grey: node spawning `true` serially (the reference); blue: fsjob work; green: Debian command queues. Higher is better.', commands, false, 'jobs/s');
  panels.push(b.svg);
  y += b.height + 20;
  const c = depthPanel(y, r);
  panels.push(c.svg);
  y += c.height + 10;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${y}" viewBox="0 0 ${W} ${y}" font-family="system-ui, -apple-system, 'Segoe UI', sans-serif">
<style>
.title { font-size: 16px; font-weight: 600; fill: #111827; }
.sub { font-size: 11px; fill: #4b5563; }
.label { font-size: 11px; fill: #1f2937; }
.value { font-size: 11px; fill: #111827; }
.tick { font-size: 10px; fill: #6b7280; }
.grid { stroke: #e5e7eb; stroke-width: 1; }
</style>
<rect width="100%" height="100%" fill="#ffffff"/>
${panels.join('\n')}
</svg>
`;
}
