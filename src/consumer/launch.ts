/**
 * Starting a command's gated group leader (spec EXEC-2): what the command
 * engine (command.ts) needs from whoever forks, and node's own fork for
 * where the worker's spawner (spawner.ts) cannot run.
 *
 * A launcher starts `argv` behind a gate: a process in a new process group
 * (and session, but for the spawner's bash chain), its leader, that waits for one line on a pipe whose write
 * end only this process holds before it executes anything. `release()`
 * writes that line; `withhold()` closes the write end instead, and the
 * leader exits 125 without running anything, as it does when this process
 * dies first.
 */
import { spawn } from 'node:child_process';
import { isUtf8 } from 'node:buffer';
import { once } from 'node:events';
import type { Readable, Writable } from 'node:stream';
import type { Clock } from '../base/clock.ts';
import { DRAIN_LIMIT } from '../base/constants.ts';
import { FsjobError } from '../base/errors.ts';
import { onSpawnerPath, SPAWNER_PATH } from './spawner-host.ts';

/** What to start: argv and environment exactly as given (bytes: a string is its UTF-8). */
export interface LaunchRequest {
  argv: readonly [string | Uint8Array, ...(string | Uint8Array)[]];
  /** EXEC-6: exactly this environment. */
  env: Readonly<Record<string, string | Uint8Array>>;
  cwd: string;
  /** A descriptor open on the job's checked stdin file (EXEC-7), or null for /dev/null. */
  stdinFd: number | null;
}

/** How the leader ended: its exit status or the signal that killed it; `lost` when nobody can tell any more. */
export type LeaderEnd = { exit: number; signal: null } | { exit: null; signal: NodeJS.Signals } | { lost: string };

/** A started leader, waiting for its release. */
export interface Leader {
  /** The leader's pid, which is its process group's id. */
  readonly pid: number;
  /** The leader's start (ID-2, field 22 of /proc/<pid>/stat) where the leader reported it itself; else the caller reads it. */
  readonly start?: string;
  /** Where the group's stdout and stderr go, until end of file; called once, before the release. */
  connect(stdout: Writable, stderr: Writable): void;
  /**
   * EXEC-12, once the group is gone: waits at most DRAIN_LIMIT for end of
   * file on both outputs (a process that left the group may hold them open
   * forever); true when it stopped waiting and closed them.
   */
  drain(clock: Clock): Promise<boolean>;
  /** Let the command run (EXEC-2 step 3). */
  release(): void;
  /** Never release: the leader exits 125 without running anything. */
  withhold(): void;
  /** Settles when the leader has ended and been reaped. */
  readonly ended: Promise<LeaderEnd>;
  /** Frees what the launch held (its FIFOs); call once the streams are done with. */
  dispose(): void;
}

export interface Launcher {
  /** Starts the gated leader; rejects (FsjobError IO, EXEC-2) when no leader could be started. */
  launch(request: LaunchRequest): Promise<Leader>;
}

/**
 * Whether env(1) would take argv[0] for one more NAME=VALUE (it takes every
 * leading operand holding a `=`). The sh gates set the job's environment
 * with `env -i NAME=VALUE... ARGV...`, and run such a command through `nice
 * -n 0 --`, which executes it as execvp(3) does (EXEC-4), with env's 126
 * and 127, and sets no variable (a shell would set PWD, IFS, OPTIND and
 * PPID, and bash's PPID is read-only).
 */
export function envTakesForAssignment(argv0: string | Uint8Array): boolean {
  return typeof argv0 === 'string' ? argv0.includes('=') : argv0.includes(0x3d);
}

/**
 * The leader as node starts it: `sh -c DIRECT_GATE fsjob-gate ENV -i --
 * NAME=VALUE... ARGV...` in an empty environment; it waits for one line on
 * fd 3 (the release), closes it, then execs env(1), which sets exactly the
 * job's environment (EXEC-6) and executes argv with its PATH (EXEC-4; 127
 * and 126 as a shell's). The shell never sees the job's environment: where
 * /bin/sh is bash, a job's SHELLOPTS would trace the gate into its stderr,
 * its PPID (read-only there) fail it, and bash would export SHLVL.
 * EXEC-13: umask 0022 (the consumer's own may be 077); node resets signal
 * dispositions and the mask for its children, and only descriptors 0-2
 * survive the gate's exec.
 */
const DIRECT_GATE = 'IFS= read -r fsjob_go <&3 || exit 125; exec 3<&-; umask 022; exec "$@"';

/** SPEC-3: bytes that are UTF-8 pass as their string; others cannot pass through node's spawn, which writes strings as UTF-8. */
function asString(value: string | Uint8Array, what: string): string {
  if (typeof value === 'string') return value;
  if (isUtf8(value)) return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('utf8');
  throw new FsjobError('IO', `${what} is not UTF-8 (SPEC-3), and node's own spawn passes text only; the worker's spawner passes bytes`, { clause: 'EXEC-4' });
}

/** env(1) or nice(1) by absolute path: the job's PATH must not choose them. */
function trustedProgram(name: 'env' | 'nice'): string {
  const found = onSpawnerPath(name);
  if (found === undefined) throw new FsjobError('IO', `${name}(1) is not on ${SPAWNER_PATH}; the command's environment is set with it (EXEC-6)`, { clause: 'EXEC-6' });
  return found;
}

/**
 * Node forks the leader itself (`spawn`, detached: setsid()). This copies
 * the page tables of this whole process on its main thread for every
 * command, which is why a Worker uses its spawner instead; this launcher is
 * what remains where the spawner cannot run (no setsid(1), an env(1)
 * without --default-signal, no /proc).
 */
export const directLauncher: Launcher = {
  async launch(request) {
    const env: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.env)) env[name] = asString(value, `environment variable ${name}`);
    const argv = request.argv.map((arg, i) => asString(arg, `argv[${i}]`));
    const assignments = Object.entries(env).map(([name, value]) => `${name}=${value}`);
    const nice = envTakesForAssignment(argv[0] as string) ? [trustedProgram('nice'), '-n', '0', '--'] : [];
    const child = spawn('/bin/sh', ['-c', DIRECT_GATE, 'fsjob-gate', trustedProgram('env'), '-i', '--', ...assignments, ...nice, ...argv], {
      cwd: request.cwd,
      env: {},
      detached: true, // setsid(): a new session and process group led by the gate (EXEC-2)
      stdio: [request.stdinFd === null ? 'ignore' : request.stdinFd, 'pipe', 'pipe', 'pipe'],
    });
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    // A spawn failure rejects both promises; only the 'spawn' one is awaited then.
    exited.catch(() => undefined);
    try {
      await once(child, 'spawn');
    } catch (error) {
      throw new FsjobError('IO', `could not start the command group: ${(error as Error).message}`, { clause: 'EXEC-2' });
    }
    const gate = child.stdio[3] as NodeJS.WritableStream & { destroy(): void };
    const streams = [child.stdout, child.stderr] as Readable[];
    return {
      pid: child.pid as number,
      connect(stdout, stderr) {
        (streams[0] as Readable).pipe(stdout);
        (streams[1] as Readable).pipe(stderr);
      },
      drain: (clock) => drainStreams(streams, clock),
      release() {
        gate.write('go\n');
        gate.end();
      },
      withhold() {
        gate.destroy();
      },
      ended: exited.then(([exit, signal]): LeaderEnd => {
        if (exit !== null) return { exit, signal: null };
        if (signal !== null) return { exit: null, signal };
        return { lost: 'node reported neither an exit status nor a signal' };
      }),
      dispose() {},
    };
  },
};

/** EXEC-12 for output streams: end of file on each, or DRAIN_LIMIT, after which they are destroyed; true when cut. */
export async function drainStreams(streams: readonly Readable[], clock: Clock): Promise<boolean> {
  const done = (s: Readable): boolean => s.readableEnded || s.destroyed;
  // Most often all have ended by now: no timer, no abort signal, no listeners.
  if (streams.every(done)) return false;
  const ended = Promise.all(streams.map((s) => (done(s) ? Promise.resolve() : once(s, 'close').catch(() => undefined))));
  // The bound is cancelled once the pipes end: its timer would otherwise keep
  // a drained worker's process alive for DRAIN_LIMIT after its last job.
  const bound = new AbortController();
  const limit = clock.sleep(DRAIN_LIMIT, bound.signal).then(() => 'limit' as const);
  try {
    if ((await Promise.race([ended, limit])) === 'limit') {
      for (const s of streams) s.destroy();
      return true;
    }
    return false;
  } finally {
    bound.abort();
  }
}
