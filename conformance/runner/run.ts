/**
 * The conformance runner: selects the cases for an implementation (its
 * roles, the level asked for, --only clauses, the crash mode), runs them in a
 * bounded pool, and collects one result per case.
 */
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ALL_CASES } from '../cases/index.ts';
import { CaseContext, type ConformanceCase, type CrashMode, type PowerMode, type RunSettings, Skip } from './case.ts';
import { loadManifest, REFERENCE_MANIFEST, type Level, type Manifest } from './manifest.ts';
import { Pool } from './pool.ts';
import { buildReport, type CaseResult, type Report } from './report.ts';

/** Units of work at once: the roles mostly wait on fsync and child processes, so a little more than the two cores. */
export const DEFAULT_PARALLEL = 4;

export type RoleFilter = 'producer' | 'consumer' | 'validator' | 'all';

export interface RunOptions {
  /** Manifest of the implementation under test; the reference when omitted. */
  impl?: string;
  role?: RoleFilter;
  crash?: CrashMode;
  /** Power-loss states (--crash power: quick, --crash power-full: full). */
  power?: PowerMode;
  /** Clause ids (or I1..I8): run only cases that check one of them. */
  only?: string[];
  /** Case names (exact, or a prefix ending in "/"): run only these. */
  cases?: string[];
  keep?: boolean;
  allVectors?: boolean;
  /** Units of work at once (default DEFAULT_PARALLEL). */
  parallel?: number;
  /** A pool shared with other runs (several broken variants at once), instead of one of `parallel` units. */
  pool?: Pool;
  /** Called once the manifest is loaded, before any case runs. */
  onStart?: (manifest: Manifest) => void;
  /** Called with each result as it completes. */
  onResult?: (result: CaseResult) => void;
  progress?: (text: string) => void;
}

export interface RunOutcome {
  manifest: Manifest;
  /** Where the cases' files are (removed unless keep). */
  workdir: string;
  results: CaseResult[];
  report: Report;
}

export function selectCases(cases: readonly ConformanceCase[], manifest: Manifest, options: RunOptions): { run: ConformanceCase[]; skipped: { c: ConformanceCase; reason: string }[] } {
  const run: ConformanceCase[] = [];
  const skipped: { c: ConformanceCase; reason: string }[] = [];
  const only = options.only === undefined || options.only.length === 0 ? undefined : new Set(options.only.map((clause) => clause.toUpperCase()));
  const names = options.cases === undefined || options.cases.length === 0 ? undefined : options.cases;
  const role = options.role ?? 'all';
  const crash = options.crash ?? 'none';
  for (const c of cases) {
    if (only !== undefined && !c.clauses.some((clause) => only.has(clause))) continue;
    if (names !== undefined && !names.some((name) => (name.endsWith('/') ? c.name.startsWith(name) : c.name === name))) continue;
    if (role !== 'all' && c.level !== role) continue;
    if (c.crash === true && crash === 'none') continue;
    if (c.power === true && (options.power ?? 'none') === 'none') continue;
    const missing = (c.roles ?? []).filter((r) => manifest.roles[r] === undefined);
    const { levels } = manifest.profile;
    const features = manifest.profile.byLevel[c.level as Level] ?? manifest.profile.features;
    const unclaimedFeatures = (c.features ?? []).filter((f) => !features.has(f));
    const levelClaimed = c.level === 'validator' ? levels.has('validator') : levels.has(c.level as 'producer' | 'consumer');
    if (!levelClaimed) skipped.push({ c, reason: `${manifest.name} does not claim the ${c.level} level (MANIFEST-3)` });
    else if (unclaimedFeatures.length > 0) skipped.push({ c, reason: `${manifest.name} does not claim ${unclaimedFeatures.join(', ')} (MANIFEST-3)` });
    else if (c.unclaimed !== undefined && c.unclaimed.every((f) => features.has(f))) skipped.push({ c, reason: `${manifest.name} claims ${c.unclaimed.join(', ')}: nothing to skip (CLAIM-11)` });
    else if (missing.length > 0) skipped.push({ c, reason: `${manifest.name} has no ${missing.join(', ')} role` });
    else if (c.root === true && process.geteuid?.() !== 0) skipped.push({ c, reason: 'needs root (chown, ns_last_pid)' });
    else run.push(c);
  }
  return { run, skipped };
}

export async function runConformance(options: RunOptions = {}): Promise<RunOutcome> {
  const manifest = loadManifest(options.impl ?? REFERENCE_MANIFEST);
  const reference = loadManifest(REFERENCE_MANIFEST);
  options.onStart?.(manifest);
  const startedMs = Date.now();
  const settings: RunSettings = { crash: options.crash ?? 'none', power: options.power ?? 'none', allVectors: options.allVectors === true, keep: options.keep === true, ...(options.progress === undefined ? {} : { progress: options.progress }) };
  const pool = options.pool ?? new Pool(options.parallel ?? DEFAULT_PARALLEL);
  const { run, skipped } = selectCases(ALL_CASES, manifest, options);
  const results: CaseResult[] = [];
  let crashPoints = 0;
  const base = await realpath(await mkdtemp(path.join(os.tmpdir(), 'fsjob-conformance-')));

  const emit = (result: CaseResult): void => {
    results.push(result);
    options.onResult?.(result);
  };
  for (const { c, reason } of skipped) emit(resultOf(c, 'skip', 0, [], reason));

  let index = 0;
  const runOne = async (c: ConformanceCase): Promise<void> => {
    index += 1;
    const dir = path.join(base, `${String(index).padStart(3, '0')}-${c.name.replace(/[^A-Za-z0-9._-]+/g, '_')}`);
    const ctx = new CaseContext({ impl: manifest, reference, dir, pool, settings });
    const began = Date.now();
    let result: CaseResult;
    try {
      if (c.interop === true && ctx.isReference) throw new Skip('the implementation under test is the reference');
      await import('node:fs/promises').then((fs) => fs.mkdir(dir, { recursive: true, mode: 0o700 }));
      await c.run(ctx);
      result = resultOf(c, ctx.failures.length === 0 ? 'ok' : 'fail', Date.now() - began, ctx.failures, ctx.notes.join('; ') || undefined);
    } catch (error) {
      if (error instanceof Skip && ctx.failures.length === 0) {
        result = resultOf(c, 'skip', Date.now() - began, [], error.message);
      } else {
        const failures = [...ctx.failures];
        if (!(error instanceof Skip)) {
          failures.push({ clauses: c.clauses.slice(0, 1), message: `the case could not complete: ${error instanceof Error ? error.message : String(error)}`, evidence: error instanceof Error && error.stack !== undefined ? error.stack.split('\n').slice(1, 6).map((l) => l.trim()) : [] });
        }
        result = resultOf(c, 'fail', Date.now() - began, failures, ctx.notes.join('; ') || undefined);
      }
    }
    crashPoints += ctx.crashPoints;
    if (settings.keep) result.workdir = dir;
    else await rm(dir, { recursive: true, force: true }).catch(() => undefined);
    emit(result);
  };

  // The long poles first: a crash sweep or a 200-job race started last would be the whole tail.
  const first = (c: ConformanceCase): boolean => c.heavy === true || c.fansOut === true || c.idle === true;
  const ordered = [...run.filter(first), ...run.filter((c) => !first(c))];
  await Promise.all(
    ordered.map((c) => {
      if (c.fansOut === true || c.idle === true) return runOne(c);
      return pool.run(() => runOne(c), c.exclusive === true ? pool.size : 1);
    }),
  );
  if (!settings.keep) await rm(base, { recursive: true, force: true }).catch(() => undefined);

  const order = new Map(ALL_CASES.map((c, i) => [c.name, i]));
  results.sort((a, b) => (order.get(a.name) ?? 0) - (order.get(b.name) ?? 0));
  const report = buildReport({
    implementation: { name: manifest.name, manifest: manifest.file },
    options: { role: options.role ?? 'all', crash: settings.crash, power: settings.power, only: options.only ?? [] },
    startedMs,
    finishedMs: Date.now(),
    results,
    crashPoints,
  });
  return { manifest, workdir: base, results, report };
}

function resultOf(c: ConformanceCase, status: CaseResult['status'], durationMs: number, failures: CaseResult['failures'], note: string | undefined): CaseResult {
  const result: CaseResult = { name: c.name, clauses: c.clauses, level: c.level, strength: c.strength, status, durationMs, failures };
  if (note !== undefined) result.note = note;
  return result;
}
