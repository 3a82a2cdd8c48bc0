/**
 * How `npm test` splits the test files into parallel streams (tools/test/run.ts).
 *
 * Each stream is one uvu process over an explicit list of files, given to uvu
 * as one anchored pattern. The files are dealt out by their measured time
 * (tools/test/timings.json, written by `node --import tsx tools/test/run.ts
 * --record`): longest first, each to the stream with the least time so far.
 * A file without a measurement counts as the median of those measured, so a
 * new test lands somewhere at once and the split stays deterministic for a
 * given checkout. test/structure/test-streams.test.ts checks that every test
 * file is in exactly one stream, as uvu itself matches the patterns.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The directory uvu is pointed at; file names are relative to it, as uvu reports them. */
export const TEST_DIR = join(ROOT, 'test');
export const TIMINGS_FILE = fileURLToPath(new URL('./timings.json', import.meta.url));
/** Which files under test/ are test files: the pattern `npm test` passed uvu before it had streams. */
export const TEST_FILE = /\.test\.ts$/;

/** Measured seconds per test file (names relative to test/). */
export type Timings = Record<string, number>;

export interface Stream {
  /** 1-based, as the output labels it: [1], [2]. */
  index: number;
  files: string[];
  /** The sum of the files' measured (or assumed) seconds. */
  seconds: number;
  /** The uvu pattern that selects exactly `files`. */
  pattern: string;
}

/**
 * Every test file under `dir`, relative to it, sorted: what uvu's own walk
 * would select with TEST_FILE (it skips node_modules and names starting with
 * .git; it follows the same directory structure).
 */
export function listTestFiles(dir: string = TEST_DIR): string[] {
  const out: string[] = [];
  const walk = (abs: string, rel: string): void => {
    for (const entry of readdirSync(abs, { withFileTypes: true })) {
      const name = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (/^\.git/i.test(name) || /node_modules/i.test(name)) continue;
      if (entry.isDirectory()) walk(join(abs, entry.name), name);
      else if (TEST_FILE.test(name)) out.push(name);
    }
  };
  walk(dir, '');
  return out.sort((a, b) => a.localeCompare(b));
}

export function loadTimings(file: string = TIMINGS_FILE): Timings {
  if (!existsSync(file)) return {};
  const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'));
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error(`${file}: not an object of file names to seconds`);
  const out: Timings = {};
  for (const [name, seconds] of Object.entries(parsed)) {
    if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 0) throw new Error(`${file}: ${name}: not a number of seconds`);
    out[name] = seconds;
  }
  return out;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** An anchored pattern matching exactly these names (uvu compiles it case-insensitively). */
export function patternFor(files: string[]): string {
  return `^(?:${files.map(escapeRegExp).join('|')})$`;
}

/** The files uvu would run for `pattern`: its own test, `new RegExp(pattern, 'i')`, on each name. */
export function uvuSelects(pattern: string, files: string[]): string[] {
  const regex = new RegExp(pattern, 'i');
  return files.filter((name) => regex.test(name));
}

function median(values: number[]): number {
  if (values.length === 0) return 1;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** Deals `files` out to `count` streams by measured time (longest first, to the least loaded stream). */
export function partition(files: string[], timings: Timings, count: number): Stream[] {
  if (!Number.isInteger(count) || count < 1) throw new Error(`the number of streams must be a positive integer, not ${count}`);
  const assumed = median(files.map((f) => timings[f]).filter((s): s is number => s !== undefined));
  const cost = (file: string): number => timings[file] ?? assumed;
  const order = [...files].sort((a, b) => cost(b) - cost(a) || a.localeCompare(b));
  const streams = Array.from({ length: count }, (_, i) => ({ index: i + 1, files: [] as string[], seconds: 0 }));
  for (const file of order) {
    // The least loaded stream; on a tie the lowest index, so the split is the same on every run.
    const target = streams.reduce((best, s) => (s.seconds < best.seconds ? s : best));
    target.files.push(file);
    target.seconds += cost(file);
  }
  return streams
    .filter((s) => s.files.length > 0)
    .map((s) => {
      const sorted = [...s.files].sort((a, b) => a.localeCompare(b));
      return { index: s.index, files: sorted, seconds: s.seconds, pattern: patternFor(sorted) };
    });
}

/**
 * What is wrong with a split: a test file no stream's pattern selects, one
 * that two select, or a pattern that selects a file its stream does not list.
 * Empty when every file runs exactly once.
 */
export function splitProblems(streams: Stream[], files: string[]): string[] {
  const problems: string[] = [];
  const owners = new Map<string, number[]>();
  for (const stream of streams) {
    const selected = uvuSelects(stream.pattern, files);
    for (const name of selected) owners.set(name, [...(owners.get(name) ?? []), stream.index]);
    const listed = new Set(stream.files);
    for (const name of selected) if (!listed.has(name)) problems.push(`stream ${stream.index}'s pattern selects ${name}, which it does not list`);
    for (const name of stream.files) if (!selected.includes(name)) problems.push(`stream ${stream.index} lists ${name}, which its pattern does not select (or it is no test file)`);
  }
  for (const name of files) {
    const holders = owners.get(name) ?? [];
    if (holders.length === 0) problems.push(`${name} is in no stream: it would never run`);
    else if (holders.length > 1) problems.push(`${name} is in streams ${holders.join(' and ')}: it would run ${holders.length} times`);
  }
  return problems;
}
