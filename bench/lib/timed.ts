/**
 * One run of a command, timed as its user sees it: wall milliseconds from
 * the spawn to the exit, and the CPU (user + system) it used as GNU time
 * reports it (a loaded machine moves CPU time less than wall time). Used by
 * the orchestrated run (`fsjob status` on deep queues) and by the standalone
 * scripts (status.bench.ts, backlog.bench.ts, package.bench.ts).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** /usr/bin/time reports the CPU a child used; without it cpu_ms is NaN. */
const TIME = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;
const MARK = 'fsjob-bench-cpu';

export interface Timed {
  wall_ms: number;
  /** user + system CPU ms of the command; NaN without /usr/bin/time. */
  cpu_ms: number;
  stdout: string;
  /** The command's stderr, without GNU time's line. */
  stderr: string;
}

export interface TimedOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Run as this user and group (root only). */
  uid?: number;
}

/** argv run under GNU time, which then ends the command's stderr with its CPU line (cpuOf reads it); argv itself without /usr/bin/time. */
export function underTime(argv: readonly string[]): string[] {
  return TIME === undefined ? [...argv] : [TIME, '-f', `${MARK} %U %S`, ...argv];
}

/** The user + system CPU ms GNU time wrote at the end of `stderr` (NaN when it did not), and the command's own stderr before it. */
export function cpuOf(stderr: string): { cpu_ms: number; stderr: string } {
  const at = stderr.lastIndexOf(MARK);
  const times = at < 0 ? null : /^fsjob-bench-cpu ([0-9.]+) ([0-9.]+)\s*$/.exec(stderr.slice(at));
  return { cpu_ms: times === null ? Number.NaN : (Number(times[1]) + Number(times[2])) * 1000, stderr: at < 0 ? stderr : stderr.slice(0, at) };
}

/** Runs argv to its end; throws with its stderr when it exits non-zero. */
export function timeCommand(argv: readonly string[], options: TimedOptions = {}): Timed {
  const full = underTime(argv);
  const started = process.hrtime.bigint();
  const result = spawnSync(full[0] as string, full.slice(1), {
    stdio: ['ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
    maxBuffer: 1 << 28,
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    ...(options.env === undefined ? {} : { env: options.env }),
    ...(options.uid === undefined ? {} : { uid: options.uid, gid: options.uid }),
  });
  const wall = Number(process.hrtime.bigint() - started) / 1e6;
  const stderr = result.stderr ?? '';
  if (result.status !== 0) throw new Error(`${argv.join(' ')} exited ${result.status}: ${stderr.slice(-800)}`);
  return { wall_ms: wall, stdout: result.stdout ?? '', ...cpuOf(stderr) };
}
