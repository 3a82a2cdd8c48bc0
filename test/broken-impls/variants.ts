/**
 * The broken variants of test/broken-impls/: each directory holds one
 * implementation that breaks exactly one clause, and says so in its
 * variant.json (README.md there):
 *
 *   { "clause": "PUB-6", "bug": "what is broken", "cases": ["producer/init"],
 *     "crash": "quick", "base": "sh" }
 *
 * A variant is *killed* when every case it names fails and the first
 * failure of each names the variant's clause first: the suite must point at
 * the cause, not at a consequence. kills.json records the last
 * `npm run conformance:mutants` of each variant (its files' digest, runs,
 * kills, seconds); the coverage table and the npm test sample read it.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CaseResult } from '../../conformance/runner/report.ts';
import { runConformance, type RunOptions } from '../../conformance/runner/run.ts';
import type { CrashMode } from '../../conformance/runner/case.ts';

export const VARIANTS_DIR = fileURLToPath(new URL('./', import.meta.url));
export const KILLS_FILE = path.join(VARIANTS_DIR, 'kills.json');
/** Files of a variant that make up its behaviour (manifest.json is generated from variant.json). */
const VARIANT_FILES = ['variant.json', 'patch.sh', 'edits.sed', 'patch.py'];
const CRASH_MODES: readonly string[] = ['none', 'quick', 'full', 'power'];

export interface Variant {
  name: string;
  dir: string;
  /** The one clause the variant breaks. */
  clause: string;
  bug: string;
  /** Cases that must fail, each naming `clause` first in its first failure. */
  cases: string[];
  /** The crash mode of the run that kills it (default quick: "the quick run"). */
  crash: string;
  /** sh: conformance/impls/sh patched, manifest generated; custom: the directory brings its own manifest.json. */
  base: 'sh' | 'custom';
  manifest: string;
}

export interface KillRecord {
  /** sha256 over the variant's files when it was last run. */
  digest: string;
  runs: number;
  killed: number;
  /** Median seconds of one run. */
  seconds: number;
}

function problem(name: string, message: string): Error {
  return new Error(`test/broken-impls/${name}/variant.json: ${message}`);
}

function parseVariant(name: string): Variant {
  const dir = path.join(VARIANTS_DIR, name);
  const raw = JSON.parse(readFileSync(path.join(dir, 'variant.json'), 'utf8')) as Record<string, unknown>;
  const known = new Set(['clause', 'bug', 'cases', 'crash', 'base']);
  for (const key of Object.keys(raw)) if (!known.has(key)) throw problem(name, `unknown member "${key}"`);
  const { clause, bug, cases } = raw;
  const crash = raw.crash ?? 'quick';
  const base = raw.base ?? 'sh';
  if (typeof clause !== 'string' || !/^[A-Z]+-[0-9]+$/.test(clause)) throw problem(name, 'clause must be one clause id');
  if (typeof bug !== 'string' || bug.length < 10) throw problem(name, 'bug must say what is broken');
  if (!Array.isArray(cases) || cases.length === 0 || !cases.every((c) => typeof c === 'string')) throw problem(name, 'cases must list the cases that kill it');
  if (typeof crash !== 'string' || !CRASH_MODES.includes(crash)) throw problem(name, `crash must be one of ${CRASH_MODES.join(', ')}`);
  if (base !== 'sh' && base !== 'custom') throw problem(name, 'base must be sh or custom');
  if (!name.startsWith(`${clause.toLowerCase()}-`)) throw problem(name, `the directory name must start with ${clause.toLowerCase()}-`);
  if (base === 'sh' && !existsSync(path.join(dir, 'patch.sh')) && !existsSync(path.join(dir, 'edits.sed'))) throw problem(name, 'an sh variant needs patch.sh or edits.sed');
  return { name, dir, clause, bug, cases: cases as string[], crash, base, manifest: path.join(dir, 'manifest.json') };
}

/** Every variant, by name. */
export function loadVariants(): Variant[] {
  return readdirSync(VARIANTS_DIR, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(path.join(VARIANTS_DIR, entry.name, 'variant.json')))
    .map((entry) => parseVariant(entry.name))
    .sort((a, b) => a.name.localeCompare(b.name));
}

export function variantDigest(variant: Variant): string {
  const hash = createHash('sha256');
  // A custom variant's manifest is its own (not generated), so it is part of what was killed.
  for (const file of variant.base === 'custom' ? [...VARIANT_FILES, 'manifest.json'] : VARIANT_FILES) {
    const full = path.join(variant.dir, file);
    if (!existsSync(full)) continue;
    hash.update(`${file}\0`).update(readFileSync(full)).update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

/** The manifest of an sh variant: every role through ../sh-variant with the variant's own directory. */
const SH_MANIFEST = fileURLToPath(new URL('../../conformance/impls/sh/manifest.json', import.meta.url));

export function shManifest(variant: Variant): string {
  const role = (...args: string[]): string[] => ['../sh-variant', './', ...args];
  const manifest = {
    name: `fsjob-sh broken: ${variant.name} (${variant.clause})`,
    // The profile fsjob-sh claims (MANIFEST-3): a variant is tested as fsjob-sh is.
    profile: (JSON.parse(readFileSync(SH_MANIFEST, 'utf8')) as { profile: unknown }).profile,
    roles: {
      init: role('init', '{queue}'),
      produce: role('produce', '{queue}', '{request}'),
      consume: role('consume', '{queue}'),
      cancel: role('cancel', '{queue}', '{id}'),
      cancel_force: role('cancel-force', '{queue}', '{id}'),
      release: role('release', '{queue}', '{id}'),
      recover: role('recover', '{queue}'),
    },
    timeout_s: 120,
  };
  return `${JSON.stringify(manifest)}\n`;
}

export function loadKills(): Record<string, KillRecord> {
  if (!existsSync(KILLS_FILE)) return {};
  return JSON.parse(readFileSync(KILLS_FILE, 'utf8')) as Record<string, KillRecord>;
}

/** The clause family of a clause id: its prefix (PUB for PUB-6). */
export function familyOf(clause: string): string {
  return clause.replace(/-[0-9]+$/, '');
}

/**
 * The sample npm test runs: for each clause family, the variant that took
 * least time in its last mutant run (ties by name), so that every family's
 * detection is exercised on every commit at the lowest cost.
 */
export function sampleVariants(variants: readonly Variant[], kills: Record<string, KillRecord>): Variant[] {
  const best = new Map<string, Variant>();
  const cost = (v: Variant): number => kills[v.name]?.seconds ?? Number.POSITIVE_INFINITY;
  for (const variant of variants) {
    const family = familyOf(variant.clause);
    const current = best.get(family);
    if (current === undefined || cost(variant) < cost(current) || (cost(variant) === cost(current) && variant.name < current.name)) best.set(family, variant);
  }
  return [...best.values()].sort((a, b) => a.name.localeCompare(b.name));
}

export interface Verdict {
  killed: boolean;
  /** Why it was not killed (one line per named case), empty when killed. */
  problems: string[];
}

/** Judges one run: every named case failed, its first failure naming the variant's clause first. */
export function judge(variant: Variant, results: readonly CaseResult[]): Verdict {
  const problems: string[] = [];
  for (const name of variant.cases) {
    const result = results.find((r) => r.name === name);
    if (result === undefined) {
      problems.push(`${name}: did not run`);
      continue;
    }
    if (result.status !== 'fail') {
      problems.push(`${name}: ${result.status === 'ok' ? 'passed' : `skipped (${result.note ?? 'no reason'})`}`);
      continue;
    }
    const first = result.failures[0];
    if (first?.clauses[0] !== variant.clause) {
      problems.push(`${name}: the first failure names ${first?.clauses.join(' ') ?? 'nothing'}, not ${variant.clause} first: ${first?.message ?? ''}`);
    }
  }
  return { killed: problems.length === 0, problems };
}

export interface VariantRun extends Verdict {
  variant: Variant;
  seconds: number;
  results: CaseResult[];
}

/** Runs the variant's cases in its crash mode (the quick run by default) and judges the result. */
export async function runVariant(variant: Variant, options: Pick<RunOptions, 'pool' | 'parallel' | 'keep'> = {}): Promise<VariantRun> {
  const began = Date.now();
  // "power" is the power-loss sample (--crash power): no kill points.
  const modes = variant.crash === 'power' ? { crash: 'none' as CrashMode, power: 'quick' as const } : { crash: variant.crash as CrashMode };
  const { results } = await runConformance({ impl: variant.manifest, cases: variant.cases, ...modes, ...options });
  const verdict = judge(variant, results);
  return { ...verdict, variant, seconds: (Date.now() - began) / 1000, results };
}
