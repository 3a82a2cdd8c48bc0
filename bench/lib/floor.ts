/**
 * The floor (bench/floor.c): compiled with `cc -O2` at bench time and cached
 * by the hash of its source under os.tmpdir(), so a changed floor.c is never
 * measured stale and an unchanged one is compiled once per machine.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BENCH_DIR, run, runJson } from './proc.ts';

export interface FloorCalls {
  [kind: string]: { n: number; ns: number };
}

export interface FloorResult {
  jobs: number;
  threads: number;
  mode: 'full' | 'enqueue';
  wall_ns: number;
  jobs_per_s: number;
  p50_ns: number;
  p99_ns: number;
  calls: FloorCalls;
  /** User + system CPU of the whole run (getrusage): the filesystem calls' own cost, the least any implementation pays. */
  cpu_ns: number;
}

export interface ProbeResult {
  fsync_overwrite_us: number;
  fsync_clean_us: number;
  fsync_new_file_us: number;
  create_us: number;
}

let binary: string | undefined;

/** Path of the compiled floor, compiling it if this source has not been compiled on this machine. */
export async function floorBinary(): Promise<string> {
  if (binary !== undefined) return binary;
  const source = path.join(BENCH_DIR, 'floor.c');
  const hash = createHash('sha256').update(readFileSync(source)).digest('hex').slice(0, 16);
  const dir = path.join(os.tmpdir(), 'fsjob-bench-cache');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const out = path.join(dir, `floor-${hash}`);
  if (!existsSync(out)) {
    const tmp = `${out}.${process.pid}`;
    const cc = await run(['cc', '-O2', '-Wall', '-o', tmp, source, '-lpthread']);
    if (cc.status !== 0) throw new Error(`cc -O2 bench/floor.c failed: ${cc.stderr}`);
    renameSync(tmp, out);
  }
  binary = out;
  return out;
}

export async function runFloor(root: string, jobs: number, threads: number, mode: 'full' | 'enqueue' = 'full'): Promise<FloorResult> {
  return runJson<FloorResult>([await floorBinary(), root, String(jobs), String(threads), mode]);
}

/** fsync and create costs of the disk right now, in a fresh scratch directory. */
export async function probeDisk(scratch: string): Promise<ProbeResult> {
  return runJson<ProbeResult>([await floorBinary(), 'probe', scratch]);
}
