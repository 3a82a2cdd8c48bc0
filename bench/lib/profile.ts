/**
 * Where the time goes: system calls per job (strace -f -c, taken as the
 * difference between a run of n2 and one of n1 jobs, so start-up cancels
 * out), CPU per job, and the hottest JavaScript (node --cpu-prof, self time
 * by function and by file). Evidence for the owners of src/, who act on it;
 * the bench never changes fsjob.
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { initQueue } from '../../src/model/queue.ts';
import { floorBinary } from './floor.ts';
import { buildQueue } from './fixtures.ts';
import { FSJOB_BIN } from './fsjob.ts';
import type { Ctx } from './harness.ts';
import { commandExists, oneShot, REPO_DIR, run, tsNode } from './proc.ts';
import { median } from './stats.ts';

export type SyscallCounts = Map<string, { calls: number; seconds: number }>;

export function parseStraceSummary(text: string): SyscallCounts {
  const out: SyscallCounts = new Map();
  for (const line of text.split('\n')) {
    const m = /^\s*[\d.]+\s+([\d.]+)\s+\d+\s+(\d+)\s+(?:\d+\s+)?([a-z_0-9]+)\s*$/.exec(line);
    if (m === null || m[3] === 'total') continue;
    out.set(m[3] as string, { calls: Number(m[2]), seconds: Number(m[1]) });
  }
  return out;
}

/** Per-job syscall counts: (run of n2 - run of n1) / (n2 - n1). */
function perJob(a: SyscallCounts, b: SyscallCounts, n: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const [name, { calls }] of b) out.set(name, (calls - (a.get(name)?.calls ?? 0)) / n);
  return out;
}

/**
 * Per-job counts of the system calls of argv(n) (a child of the READY/GO
 * protocol when `protocol`), by the difference of a run of n1 and one of n2
 * jobs. `only` names the calls to count: strace then stops the traced
 * process at those alone (seccomp-bpf), which leaves the rest at full speed.
 */
export async function straced(ctx: Ctx, name: string, argv: (n: number) => Promise<string[]>, protocol: boolean, n1: number, n2: number, only?: readonly string[]): Promise<Map<string, number>> {
  const counts: SyscallCounts[] = [];
  const filter = only === undefined ? [] : ['--seccomp-bpf', '-e', `trace=${only.join(',')}`];
  for (const n of [n1, n2]) {
    const out = path.join(ctx.fresh(`strace-${name}`), 'strace.txt');
    const full = ['strace', '-f', '-c', ...filter, '-o', out, '--', ...(await argv(n))];
    if (protocol) await oneShot(`strace ${name}`, full, 120_000);
    else {
      const r = await run(full, { timeoutMs: 600_000 });
      if (r.status !== 0) throw new Error(`strace ${name} failed: ${r.stderr.slice(-1000)}`);
    }
    counts.push(parseStraceSummary(readFileSync(out, 'utf8')));
  }
  return perJob(counts[0] as SyscallCounts, counts[1] as SyscallCounts, n2 - n1);
}

export interface SyscallTable {
  columns: string[];
  rows: Array<{ syscall: string; perJob: Array<number | undefined> }>;
}

/** Syscalls per job of fsjob (payload, one process: enqueue + claimNext + complete), the floor, SQLite FULL, and fsjob work with `true`. */
export async function syscallsPerJob(ctx: Ctx, quick: boolean): Promise<SyscallTable | string> {
  if (!commandExists('strace')) return 'strace is not installed: no syscall counts';
  const [n1, n2] = quick ? [5, 25] : [10, 60];
  const columns: string[] = [];
  const maps: Array<Map<string, number>> = [];
  const add = async (label: string, fn: () => Promise<Map<string, number>>) => {
    try {
      maps.push(await fn());
      columns.push(label);
    } catch (error) {
      ctx.log(`  profile: ${label} failed: ${error instanceof Error ? error.message.slice(0, 300) : String(error)}`);
    }
  };
  await add('fsjob payload job (library)', () =>
    straced(ctx, 'fsjob', async (n) => {
      const root = path.join(ctx.fresh('strace-q'), 'q');
      await initQueue(root);
      return tsNode('fsjob-lib.ts', ['claim', root, String(n)]);
    }, true, n1, n2),
  );
  await add('floor', () => straced(ctx, 'floor', async (n) => [await floorBinary(), ctx.fresh('strace-floor'), String(n), '1', 'full'], false, n1, n2));
  await add('SQLite WAL FULL', () =>
    straced(ctx, 'sqlite', async (n) => tsNode('sqlite-queue.ts', ['depth', path.join(ctx.fresh('strace-sqlite'), 'q.db'), 'FULL', '0', String(n)]), true, n1, n2),
  );
  await add('fsjob work, `true`', () =>
    straced(ctx, 'work', async (n) => {
      const root = path.join(ctx.fresh('strace-work'), 'q');
      await buildQueue(root, n, 'queued', { argv: ['true'] }, ctx.fresh('templates'));
      return [process.execPath, FSJOB_BIN, 'work', '--queue', root, '--drain'];
    }, false, n1, n2),
  );
  const names = new Set<string>();
  for (const m of maps) for (const [k, v] of m) if (v >= 0.5) names.add(k);
  const rows = [...names]
    .map((syscall) => ({ syscall, perJob: maps.map((m) => m.get(syscall)) }))
    .sort((a, b) => (b.perJob[0] ?? 0) - (a.perJob[0] ?? 0));
  return { columns, rows };
}

interface CpuProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

interface CpuProfile {
  nodes: CpuProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
}

export interface HotSpot {
  what: string;
  selfMs: number;
  share: number;
}

export interface CpuSummary {
  label: string;
  jobs: number;
  wallMsPerJob: number;
  cpuMsPerJob?: number;
  phases?: Record<string, number>;
  byFunction: HotSpot[];
  byFile: HotSpot[];
  special: HotSpot[];
}

function shortUrl(url: string): string {
  if (url === '') return '(native)';
  const file = url.replace(/^file:\/\//, '');
  if (file.startsWith(REPO_DIR)) return path.relative(REPO_DIR, file).replace(/^node_modules\/(\.pnpm\/)?/, 'node_modules/');
  return file;
}

export function summariseProfile(profile: CpuProfile, top = 12): Omit<CpuSummary, 'label' | 'jobs' | 'wallMsPerJob'> {
  const intervalMs = (profile.endTime - profile.startTime) / 1000 / Math.max(1, profile.samples.length);
  const total = profile.samples.length;
  const byFn = new Map<string, number>();
  const byFile = new Map<string, number>();
  const special = new Map<string, number>();
  for (const node of profile.nodes) {
    const hits = node.hitCount ?? 0;
    if (hits === 0) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName.startsWith('(') && url === '') {
      special.set(functionName, (special.get(functionName) ?? 0) + hits);
      continue;
    }
    const file = shortUrl(url);
    const key = `${functionName || '(anonymous)'} ${file}:${lineNumber + 1}`;
    byFn.set(key, (byFn.get(key) ?? 0) + hits);
    const group = file.startsWith('node:') ? file.replace(/^node:internal\/([^/]+).*$/, 'node:internal/$1') : file;
    byFile.set(group, (byFile.get(group) ?? 0) + hits);
  }
  const spots = (m: Map<string, number>, n: number): HotSpot[] =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([what, hits]) => ({ what, selfMs: hits * intervalMs, share: hits / total }));
  return { byFunction: spots(byFn, top), byFile: spots(byFile, top), special: spots(special, 5) };
}

function newestProfile(dir: string): CpuProfile {
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  // The largest is the main process (a --cpu-prof child writes its own).
  const sized = files.map((f) => ({ f, size: readFileSync(path.join(dir, f)).length })).sort((a, b) => b.size - a.size);
  if (sized[0] === undefined) throw new Error(`no .cpuprofile in ${dir}`);
  return JSON.parse(readFileSync(path.join(dir, sized[0].f), 'utf8')) as CpuProfile;
}

/** CPU profiles of the payload path (enqueue + claimNext + complete in one process) and of `fsjob work` with `true`. */
export async function cpuProfiles(ctx: Ctx, quick: boolean): Promise<CpuSummary[]> {
  const n = quick ? 30 : 100;
  const out: CpuSummary[] = [];
  {
    const dir = ctx.fresh('cpuprof-payload');
    const root = path.join(dir, 'q');
    await initQueue(root);
    const profFile = path.join(dir, 'loop.cpuprofile');
    const r = await oneShot<{ enqueue_us: number[]; claim_us: number[]; complete_us: number[]; wall_us: number; cpu_user_us: number; cpu_system_us: number }>(
      'cpu-prof payload',
      tsNode('fsjob-lib.ts', ['claim', root, String(n), '--profile-out', profFile]),
      120_000,
    );
    out.push({
      label: 'payload job, library (enqueue + claimNext + complete, one process; steady state: the profile covers the measured loop only)',
      jobs: n,
      wallMsPerJob: r.wall_us / n / 1000,
      cpuMsPerJob: (r.cpu_user_us + r.cpu_system_us) / n / 1000,
      phases: { enqueue: median(r.enqueue_us) / 1000, 'claimNext (claim + exec record)': median(r.claim_us) / 1000, 'complete (receipt)': median(r.complete_us) / 1000, 'user CPU': r.cpu_user_us / n / 1000, 'system CPU': r.cpu_system_us / n / 1000 },
      ...summariseProfile(JSON.parse(readFileSync(profFile, 'utf8')) as CpuProfile),
    });
  }
  {
    const dir = ctx.fresh('cpuprof-work');
    const root = path.join(dir, 'q');
    await buildQueue(root, n, 'queued', { argv: ['true'] }, ctx.fresh('templates'));
    const profDir = path.join(dir, 'prof');
    mkdirSync(profDir);
    const t0 = performance.now();
    const r = await run([process.execPath, '--cpu-prof', '--cpu-prof-dir', profDir, FSJOB_BIN, 'work', '--queue', root, '--drain'], { timeoutMs: 600_000 });
    if (r.status !== 0) throw new Error(`fsjob work --cpu-prof failed: ${r.stderr.slice(-1000)}`);
    out.push({ label: '`fsjob work --drain` over `true` jobs (start-up included)', jobs: n, wallMsPerJob: (performance.now() - t0) / n, ...summariseProfile(newestProfile(profDir)) });
  }
  return out;
}
