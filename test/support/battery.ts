/**
 * Shared machinery of the reliability battery (issue 6): real `fsjob`
 * processes over a real queue, battery jobs that log each real start, and an
 * audit that reads what is on disk afterwards.
 *
 * A battery job is `sh -c` that appends "<job id> <attempt>" to a start log
 * outside the queue (O_APPEND: one line per real start, never torn) and then
 * passes or fails by its attempt number, so each job's expected starts,
 * outcome and attempts follow from its request alone. The audit compares
 * three views that must agree: the start log (what really ran), the records
 * (RETRY-1 from exec and end) and the receipt.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processStart } from '../../src/model/identity.ts';
import { parseReadyEntry } from '../../src/model/layout.ts';
import type { EndRecord, ExecRecord, JobRequest, ReceiptRecord, SpecRecord } from '../../src/records/codec.ts';
import { FSJOB_ARGV, FSJOB_BIN } from './cli.ts';

export const BIN = FSJOB_BIN;

/**
 * A private directory for a battery queue. On /dev/shm (tmpfs) when there is
 * one: these tests are about concurrency and crash invariants between
 * processes, not about durability on a disk, and fsync on tmpfs is free, so
 * thousands of jobs fit in seconds. Falls back to the system temp directory.
 */
const made: string[] = [];
export async function batteryDir(label: string): Promise<string> {
  const base = existsSync('/dev/shm') && statSync('/dev/shm').isDirectory() ? '/dev/shm' : tmpdir();
  const dir = await mkdtemp(join(base, `fsjob-${label}-`));
  made.push(dir);
  return dir;
}

export async function removeBatteryDirs(): Promise<void> {
  for (const dir of made.splice(0)) await rm(dir, { recursive: true, force: true });
}

/** A running `fsjob` process; `stderr` keeps its last 64 KiB for failure messages. */
export interface FsjobProcess {
  child: ChildProcess;
  pid: number;
  readonly stdout: string;
  readonly stderr: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function startFsjob(args: string[], env: NodeJS.ProcessEnv = {}, options: { stdin?: 'pipe' | 'ignore' } = {}): FsjobProcess {
  const [command, ...lead] = FSJOB_ARGV as [string, ...string[]];
  const child = spawn(command, [...lead, ...args], { stdio: [options.stdin ?? 'ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (err = (err + chunk).slice(-65_536)));
  const exited = once(child, 'exit').then(([code, signal]) => ({ code: code as number | null, signal: signal as NodeJS.Signals | null }));
  return {
    child,
    pid: child.pid as number,
    get stdout() {
      return out;
    },
    get stderr() {
      return err;
    },
    exited,
  };
}

/** Runs `fsjob args...` to completion. */
export async function runFsjob(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const proc = startFsjob(args, env);
  const { code } = await proc.exited;
  return { code, stdout: proc.stdout, stderr: proc.stderr };
}

export interface ValidateReport {
  summary: { errors: number; warnings: number; infos: number; files: number; jobs: number };
  findings: { code: string; severity: string; path: string; job_id: string | null; clause: string; message: string }[];
}

/** `fsjob validate --json ROOT`: its exit status and report. */
export async function validateQueue(root: string, env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; report: ValidateReport }> {
  const run = await runFsjob(['validate', '--json', root], env);
  if (run.code !== 0 && run.code !== 1) throw new Error(`fsjob validate exited ${run.code}: ${run.stderr}`);
  return { code: run.code, report: JSON.parse(run.stdout) as ValidateReport };
}

/** The findings of a report that are not info, for a failure message. */
export function notable(report: ValidateReport): string {
  return JSON.stringify(report.findings.filter((f) => f.severity !== 'info').slice(0, 20), null, 1);
}

/** ID-6: a pid is dead when it is gone or a zombie (PID 1 here never reaps: never use kill -0). */
export async function isDead(pid: number): Promise<boolean> {
  const info = await processStart(pid).catch(() => null);
  return info === null || info.state === 'Z' || info.state === 'X';
}

/** Pids whose parent is `ppid` and whose command line contains `marker` (a worker's guardian: GUARDIAN_NAME, "fsjob-guardian"). */
export function childrenOf(ppid: number, marker: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
      const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
      if (Number(fields[1]) !== ppid) continue;
      if (readFileSync(`/proc/${name}/cmdline`, 'latin1').includes(marker)) found.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

// ---------------------------------------------------------------------------
// Battery jobs

/** A small deterministic PRNG (mulberry32), so a failing mix can be replayed from its seed. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const LANES = ['lane-a', 'lane-b', 'lane-c'] as const;

/** Passes from attempt PASS_AT on; before that exits FAIL_CODE. HOLD_MS keeps it running a while. */
const SCRIPT = 'printf "%s %s\\n" "$FSJOB_JOB_ID" "$FSJOB_ATTEMPT" >>"$BATTERY_LOG"; [ "$HOLD" = 0 ] || sleep "$HOLD"; [ "$FSJOB_ATTEMPT" -ge "$PASS_AT" ] || exit "$FAIL_CODE"';
/** PASS_AT of a job that never passes (ATTEMPTS_MAX is 100). */
const NEVER = 101;

export interface BatteryMix {
  /** Share of jobs with a lane (one of LANES). @default 0.15 */
  laneShare?: number;
  /** Seconds a job sleeps after logging its start, as a string for sleep(1), or a chooser. @default '0' */
  hold?: (random: () => number) => string;
  /** retry_delay_ms of jobs that may retry. @default 0 or 20 */
  retryDelayMs?: (random: () => number) => number;
}

/** A request for one battery job: ok (passes at once), failing (never passes) or flaky (passes at a later attempt). */
export function batteryRequest(random: () => number, log: string, cwd: string, mix: BatteryMix = {}): JobRequest {
  const maxAttempts = 1 + Math.floor(random() * 3);
  const roll = random();
  const passAt = roll < 0.55 ? 1 : roll < 0.8 ? NEVER : 2 + Math.floor(random() * maxAttempts); // flaky: may still run out of attempts
  const failCode = 1 + Math.floor(random() * 5);
  const lane = random() < (mix.laneShare ?? 0.15) ? LANES[Math.floor(random() * LANES.length)] : undefined;
  return {
    argv: ['sh', '-c', SCRIPT],
    cwd,
    env: { BATTERY_LOG: log, PASS_AT: String(passAt), FAIL_CODE: String(failCode), HOLD: mix.hold?.(random) ?? '0' },
    max_attempts: maxAttempts,
    retry_delay_ms: mix.retryDelayMs?.(random) ?? (random() < 0.5 ? 0 : 20),
    priority: Math.floor(random() * 7) - 3,
    ...(lane === undefined ? {} : { lane }),
    timeout_ms: 60_000,
    kill_grace_ms: 200,
  };
}

/** What a battery job must end as when nothing crashes. */
export function expectedEnd(spec: SpecRecord): { starts: number; outcome: 'succeeded' | 'failed'; exitCode: number } {
  const passAt = Number(spec.env['PASS_AT']);
  const failCode = Number(spec.env['FAIL_CODE']);
  const starts = Math.min(passAt, spec.max_attempts);
  return passAt <= spec.max_attempts ? { starts, outcome: 'succeeded', exitCode: 0 } : { starts, outcome: 'failed', exitCode: failCode };
}

/** The start log: attempt numbers that really started, per job id. */
export function readStartLog(log: string): Map<string, number[]> {
  const starts = new Map<string, number[]>();
  if (!existsSync(log)) return starts;
  for (const line of readFileSync(log, 'utf8').split('\n')) {
    if (line === '') continue;
    const [id, attempt] = line.split(' ');
    if (id === undefined || attempt === undefined) throw new Error(`torn start log line: ${JSON.stringify(line)}`);
    const list = starts.get(id) ?? [];
    list.push(Number(attempt));
    starts.set(id, list);
  }
  return starts;
}

// ---------------------------------------------------------------------------
// The audit: one job directory as records

export interface JobOnDisk {
  id: string;
  spec: SpecRecord;
  names: string[];
  /** Claim generations, ascending. */
  claims: number[];
  execs: Map<number, ExecRecord>;
  ends: Map<number, EndRecord>;
  receipt: ReceiptRecord | undefined;
  /** RETRY-1: generations with an exec minus those whose end says counted false. */
  attemptsUsed: number;
}

const json = <T>(path: string): T => JSON.parse(readFileSync(path, 'utf8')) as T;

export function readJobs(root: string): JobOnDisk[] {
  const jobsDir = join(root, 'jobs');
  const jobs: JobOnDisk[] = [];
  for (const id of readdirSync(jobsDir).sort()) {
    if (id.startsWith('.')) continue;
    const dir = join(jobsDir, id);
    const names = readdirSync(dir).sort();
    const gens = (kind: string): number[] =>
      names
        .map((name) => new RegExp(`^${kind}\\.([1-9][0-9]*)\\.json$`).exec(name)?.[1])
        .filter((g): g is string => g !== undefined)
        .map(Number)
        .sort((a, b) => a - b);
    const execs = new Map(gens('exec').map((g) => [g, json<ExecRecord>(join(dir, `exec.${g}.json`))] as const));
    const ends = new Map(gens('end').map((g) => [g, json<EndRecord>(join(dir, `end.${g}.json`))] as const));
    const attemptsUsed = [...execs.keys()].filter((g) => ends.get(g)?.counted !== false).length;
    jobs.push({
      id,
      spec: json<SpecRecord>(join(dir, 'spec.json')),
      names,
      claims: gens('claim'),
      execs,
      ends,
      receipt: names.includes('receipt.json') ? json<ReceiptRecord>(join(dir, 'receipt.json')) : undefined,
      attemptsUsed,
    });
  }
  return jobs;
}

/**
 * The invariants every finished battery job keeps, crash or not: claims
 * 1..G without a gap; exactly one receipt, published by the owner of a
 * claim whose generation did not also end (RCPT-3); no claim still open;
 * the receipt's attempts equal RETRY-1's count from the records, within
 * max_attempts (RETRY-2); every real start (start log) is an attempt the
 * records counted, none started twice, never more than max_attempts (I2).
 * Returns one message per violation.
 */
export function finishedJobProblems(job: JobOnDisk, starts: number[], options: { crashed: boolean }): string[] {
  const problems: string[] = [];
  const say = (what: string): void => void problems.push(`${job.id}: ${what}`);
  const top = job.claims.at(-1) ?? 0;
  if (job.claims.some((g, i) => g !== i + 1)) say(`claim generations ${job.claims.join(',')} have a gap`);
  const r = job.receipt;
  if (r === undefined) return [...problems, `${job.id}: no receipt (claims ${job.claims.join(',')}, files ${job.names.join(' ')})`];
  if (r.gen < 1 || r.gen > top) say(`receipt of generation ${r.gen} but claims end at ${top}`);
  if (job.ends.has(r.gen)) say(`generation ${r.gen} has both an end record and the receipt`);
  // Without crashes no claim is ever broken: every generation but the receipt's ends with an end record.
  if (!options.crashed) for (let g = 1; g < top; g++) if (!job.ends.has(g)) say(`claim ${g} was superseded without an end record although no owner died`);
  if (r.attempts !== job.attemptsUsed) say(`receipt says ${r.attempts} attempts, the records count ${job.attemptsUsed}`);
  if (job.attemptsUsed > job.spec.max_attempts) say(`${job.attemptsUsed} attempts used of max_attempts ${job.spec.max_attempts}`);
  const sorted = [...starts].sort((a, b) => a - b);
  if (new Set(sorted).size !== sorted.length) say(`an attempt started twice: ${sorted.join(',')}`);
  if (sorted.length > job.attemptsUsed) say(`${sorted.length} real starts, but the records count ${job.attemptsUsed} attempts`);
  if (sorted.some((a) => a < 1 || a > job.spec.max_attempts)) say(`start of attempt outside 1..${job.spec.max_attempts}: ${sorted.join(',')}`);
  return problems;
}

/** LANE-1 over the whole history: executions of one lane, from exec.recorded_ms to their end or receipt, never overlap. */
export function laneOverlaps(jobs: JobOnDisk[]): string[] {
  const byLane = new Map<string, { id: string; gen: number; from: number; to: number }[]>();
  for (const job of jobs) {
    if (job.spec.lane === null) continue;
    for (const [gen, exec] of job.execs) {
      const to = job.ends.get(gen)?.ended_ms ?? (job.receipt?.gen === gen ? job.receipt.finished_ms : Number.POSITIVE_INFINITY);
      const list = byLane.get(job.spec.lane) ?? [];
      list.push({ id: job.id, gen, from: exec.recorded_ms, to });
      byLane.set(job.spec.lane, list);
    }
  }
  const problems: string[] = [];
  for (const [lane, runs] of byLane) {
    runs.sort((a, b) => a.from - b.from);
    for (let i = 1; i < runs.length; i++) {
      const before = runs[i - 1] as (typeof runs)[number];
      const run = runs[i] as (typeof runs)[number];
      if (run.from < before.to) problems.push(`lane ${lane}: ${run.id} gen ${run.gen} started at ${run.from} while ${before.id} gen ${before.gen} ran until ${before.to}`);
    }
  }
  return problems;
}

export function readyNames(root: string): string[] {
  return readdirSync(join(root, 'ready')).filter((name) => parseReadyEntry(name) !== undefined);
}

export function tally(values: Iterable<string>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}
