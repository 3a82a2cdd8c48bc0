// Runs one program under the crash injector and reports what it did to the
// queue directory. The conformance runner calls this once to count the calls
// of an operation, then once per k with killAt = k, and checks recovery.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { WallClockOffset } from './clock.ts';
import { killGroup, waitGroupGone } from './group.ts';
import { interposerPath } from './interposer.ts';
import { FAULT_ENV, faultEnv, type FaultPoint } from './fault.ts';
import { parseTrace, type TraceRecord } from './trace.ts';

export interface CrashRunOptions {
  argv: string[]; // program + args
  cwd?: string;
  env?: NodeJS.ProcessEnv; // base env (default process.env); driver adds its own vars
  root: string; // only calls whose target is inside this directory count
  killAt?: number; // 1-based k: kill the process group instead of performing the k-th counted call; undefined = count only
  timeoutMs?: number; // safety net: SIGKILL the group after this (default 60000), reported as timedOut
  stdin?: string | Buffer;
  /** Stop the process making this call just before it (SIGSTOP); see startWithCrash. */
  pause?: PausePoint;
  /** Record what every counted call did (result.trace), for the power-loss mode. */
  trace?: boolean;
  /** Make matching links or renames fail as a filesystem without them would, or lie as a network client can. */
  fault?: FaultPoint;
  /**
   * Write the injector's variables (LD_PRELOAD, UV_USE_IO_URING and the
   * FSJOB_CRASH_* of this run) to this file, as NAME=value words on one line,
   * before the program starts: a process whose environment was scrubbed (a
   * consumer's command, EXEC-6) can re-enter the run with `env $(cat FILE) ...`.
   * The values hold no blanks (interposer.ts refuses such paths).
   */
  envFile?: string;
  /** The run's wall clock starts this many milliseconds off the host's (interpose-clock.c); see CrashRun.setWallClockOffset. */
  wallClockOffsetMs?: number;
}

/**
 * Where a run stops itself: at its k-th counted call, or at the nth
 * (default first) call of a family (callFamily: `link`, `rename`, `open`,
 * `write`, `fsync`, ...) whose path or destination, relative to the root,
 * matches a glob (`*` and `?`, both matching `/` too). Either `k`, or `op`
 * and/or `path`.
 */
export interface PausePoint {
  k?: number;
  op?: string;
  path?: string;
  /**
   * An absolute-path glob: stop at the nth read-only open of a matching
   * path, inside the root or not (a judge's look at /proc/<pid>/stat, which
   * no mutating call marks). Alone or with nth; that open is the one call
   * the run logs.
   */
  read?: string;
  nth?: number;
}

export type { FaultPoint };
export type { TraceRecord };

export interface CountedCall {
  k: number;
  pid: number;
  /** Exact libc symbol, e.g. `openat64`, `renameat2`, `pwrite64`; see callFamily. */
  op: string;
  /** Absolute target; for rename/link the source, for symlink the link itself. */
  path: string;
  /** rename/link destination, or symlink's literal link text. */
  path2?: string;
  /** An open's flags (O_CREAT, O_EXCL, ...; fopen's translated; mkstemp's as glibc opens). */
  flags?: number;
  /** The mode an open (with O_CREAT), mkstemp (0600), mkdir or mkdtemp asked for. */
  mode?: number;
}

export interface CrashRunResult {
  calls: CountedCall[]; // every counted call in order (up to and including the interrupted one)
  crashed: boolean; // true when killAt was reached and the group was killed
  interrupted?: CountedCall; // the call that was not performed
  paused?: CountedCall; // the call the run paused at (performed after its resume)
  trace?: TraceRecord[]; // with options.trace: what each counted call did, by k
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
}

/** Environment variables understood by interpose.c. */
export const CRASH_ENV = {
  root: 'FSJOB_CRASH_ROOT',
  killAt: 'FSJOB_CRASH_KILL_AT',
  counter: 'FSJOB_CRASH_COUNTER',
  log: 'FSJOB_CRASH_LOG',
  pgid: 'FSJOB_CRASH_PGID',
  pauseAt: 'FSJOB_CRASH_PAUSE_AT',
  pauseOp: 'FSJOB_CRASH_PAUSE_OP',
  pausePath: 'FSJOB_CRASH_PAUSE_PATH',
  pauseNth: 'FSJOB_CRASH_PAUSE_NTH',
  pauseRead: 'FSJOB_CRASH_PAUSE_READ',
  ...FAULT_ENV,
  trace: 'FSJOB_CRASH_TRACE',
  traceData: 'FSJOB_CRASH_TRACE_DATA',
} as const;

/** A run under the injector, started: see startWithCrash. */
export interface CrashRun {
  /** The program's pid, which is also its process group. */
  pid: number;
  /**
   * Settles once the process that drew the pause point has stopped itself
   * (state T), with the call it is about to make; with undefined when the run
   * ends without reaching it, or has no pause point.
   */
  paused: Promise<CountedCall | undefined>;
  /** Lets the paused process go on (SIGCONT): its call happens now. */
  resume: () => void;
  /** SIGKILLs the whole group now. */
  kill: () => void;
  /**
   * Moves the wall clock of every process of the run (CLOCK_REALTIME and
   * what reads it: gettimeofday, time, timespec_get) to the host's plus `ms`,
   * at once and while it runs; monotonic clocks stay as they are. Throws once
   * the run has ended.
   */
  setWallClockOffset: (ms: number) => void;
  result: Promise<CrashRunResult>;
}

const COUNTER_BYTES = 4096;
/** Offsets in the counter file (struct shared in interpose.h). */
const PAUSED_PID_OFFSET = 32;
const PAUSED_K_OFFSET = 40;
const POLL_MS = 10;
const STREAM_GRACE_MS = 2_000;

/**
 * Collapses the libc variants one language or another happens to use
 * (open64, __openat_2, renameat2, pwrite64, ...) into the operation they
 * perform, so expectations can be written once for every implementation.
 */
export function callFamily(op: string): string {
  if (/^(__)?open(at)?(64)?(_2)?$|^creat(64)?$|^f(re)?open(64)?$/.test(op)) return 'open';
  if (/^mk(o?stemps?(64)?|dtemp)$/.test(op)) return 'mktemp';
  if (/^mkdir(at)?$/.test(op)) return 'mkdir';
  if (/^rename(at2?)?$/.test(op)) return 'rename';
  if (/^link(at)?$/.test(op)) return 'link';
  if (/^symlink(at)?$/.test(op)) return 'symlink';
  if (/^unlink(at)?$/.test(op)) return 'unlink';
  if (/^f?chmod(at)?$/.test(op)) return 'chmod';
  if (/^f?truncate(64)?$/.test(op)) return 'truncate';
  if (/^(p?writev?(64)?(v2)?|copy_file_range|sendfile(64)?|fflush(_unlocked)?|fclose)$/.test(op)) return 'write';
  if (/^(fsync|fdatasync|sync_file_range|syncfs|sync)$/.test(op)) return 'fsync';
  if (/^(__x)?mknod(at)?$|^mkfifo(at)?$/.test(op)) return 'mknod';
  if (/^(utimensat|futimens)$/.test(op)) return 'utime';
  if (/^(posix_)?fallocate(64)?$/.test(op)) return 'fallocate';
  return op;
}

export async function runWithCrash(options: CrashRunOptions): Promise<CrashRunResult> {
  return (await startWithCrash(options)).result;
}

/**
 * Starts a program under the injector and hands back control at once, so a
 * caller can act while it runs: with `pause`, wait for `paused`, let other
 * processes run (the paused one is stopped just before its call), then
 * `resume()`. `result` settles as runWithCrash's would.
 */
export async function startWithCrash(options: CrashRunOptions): Promise<CrashRun> {
  const [command, ...args] = options.argv;
  if (command === undefined) throw new TypeError('runWithCrash: argv must name a program');
  const killAt = options.killAt;
  if (killAt !== undefined && (!Number.isSafeInteger(killAt) || killAt < 1)) {
    throw new RangeError(`runWithCrash: killAt must be a positive integer, got ${killAt}`);
  }
  const pause = checkPause(options.pause);
  const library = await interposerPath();
  // The library compares against real paths; a symlinked root would
  // otherwise never match anything.
  const root = await realpath(options.root);

  const work = await mkdtemp(path.join(os.tmpdir(), 'fsjob-crash-run-'));
  const counterFile = path.join(work, 'counter');
  const logFile = path.join(work, 'calls.log');
  const traceFile = path.join(work, 'trace');
  const traceData = path.join(work, 'trace.data');
  const clock = new WallClockOffset(counterFile);
  let ended = false;
  const env: NodeJS.ProcessEnv = { ...(options.env ?? process.env) };
  for (const name of Object.values(CRASH_ENV)) delete env[name];
  const inherited = env.LD_PRELOAD;
  env.LD_PRELOAD = inherited ? `${library}:${inherited}` : library;
  env.UV_USE_IO_URING = '0';
  env[CRASH_ENV.root] = root;
  env[CRASH_ENV.counter] = counterFile;
  env[CRASH_ENV.log] = logFile;
  env[CRASH_ENV.killAt] = String(killAt ?? 0);
  // The group is recorded by the spawned leader itself (see interpose.c);
  // a stale override from the caller's environment must not win (deleted above).
  if (pause?.k !== undefined) env[CRASH_ENV.pauseAt] = String(pause.k);
  if (pause?.op !== undefined) env[CRASH_ENV.pauseOp] = pause.op;
  if (pause?.path !== undefined) env[CRASH_ENV.pausePath] = pause.path;
  if (pause?.nth !== undefined) env[CRASH_ENV.pauseNth] = String(pause.nth);
  if (pause?.read !== undefined) env[CRASH_ENV.pauseRead] = pause.read;
  if (options.fault !== undefined) Object.assign(env, faultEnv(options.fault));
  if (options.trace === true) {
    env[CRASH_ENV.trace] = traceFile;
    env[CRASH_ENV.traceData] = traceData;
  }
  try {
    await writeFile(counterFile, Buffer.alloc(COUNTER_BYTES));
    if (options.wallClockOffsetMs !== undefined) clock.set(options.wallClockOffsetMs);
    await writeFile(logFile, '');
    if (options.trace === true) {
      await writeFile(traceFile, '');
      await writeFile(traceData, '');
    }
    if (options.envFile !== undefined) {
      const names = ['LD_PRELOAD', 'UV_USE_IO_URING', ...Object.values(CRASH_ENV)];
      const words = names.filter((name) => env[name] !== undefined).map((name) => `${name}=${env[name] as string}`);
      if (words.some((word) => /\s/.test(word))) throw new Error(`runWithCrash: an injector variable holds a blank and cannot go to ${options.envFile}: ${words.join(' ')}`);
      await writeFile(options.envFile, `${words.join(' ')}\n`, { mode: 0o600 });
    }
  } catch (error) {
    await rm(work, { recursive: true, force: true });
    throw error;
  }

  const readCounter = (): number => Number(readFileSync(counterFile).readBigUInt64LE(0));
  const reached = (): boolean => killAt !== undefined && readCounter() >= killAt;
  // The library logs the interrupted call before it kills, so once the
  // marker is there nothing is lost by killing the group ourselves.
  const interruptLogged = (): boolean => reached() && readFileSync(logFile, 'utf8').includes('\tinterrupted\t');

  const pauseWatch = watchPause(pause !== undefined, counterFile, logFile);
  const supervised = supervise({
    command,
    args,
    cwd: options.cwd,
    env,
    stdin: options.stdin,
    timeoutMs: options.timeoutMs ?? 60_000,
    interruptLogged,
    onTick: pauseWatch.tick,
  });

  const result = (async (): Promise<CrashRunResult> => {
    try {
      const outcome = await supervised.outcome;
      pauseWatch.ended();
      const crashed = reached();
      if (crashed || outcome.timedOut) {
        killGroup(outcome.pgid);
        await waitGroupGone(outcome.pgid);
      }
      const logged = parseLog(await readFile(logFile, 'utf8'));
      const calls = logged.calls.filter((call) => killAt === undefined || call.k <= killAt);
      const done: CrashRunResult = {
        calls,
        crashed,
        exitCode: outcome.exitCode,
        signal: outcome.signal,
        timedOut: outcome.timedOut,
        stdout: outcome.stdout,
        stderr: outcome.stderr,
      };
      if (logged.interrupted) done.interrupted = logged.interrupted;
      if (logged.paused) done.paused = logged.paused;
      if (options.trace === true) done.trace = parseTrace(await readFile(traceFile, 'utf8'), await readFile(traceData));
      return done;
    } finally {
      pauseWatch.ended();
      ended = true;
      await rm(work, { recursive: true, force: true });
    }
  })();
  result.catch(() => undefined); // observed by the caller through `result`
  return {
    pid: supervised.pid,
    paused: pauseWatch.paused,
    resume: pauseWatch.resume,
    kill: () => killGroup(supervised.pid),
    setWallClockOffset: (ms: number) => {
      if (ended) throw new Error('runWithCrash: setWallClockOffset() after the run ended');
      clock.set(ms);
    },
    result,
  };
}

function checkPause(pause: PausePoint | undefined): PausePoint | undefined {
  if (pause === undefined) return undefined;
  const positive = (n: number | undefined): boolean => n === undefined || (Number.isSafeInteger(n) && n >= 1);
  if (!positive(pause.k) || !positive(pause.nth)) throw new RangeError(`runWithCrash: pause.k and pause.nth must be positive integers, got ${JSON.stringify(pause)}`);
  const byMatch = pause.op !== undefined || pause.path !== undefined;
  const ways = [pause.k !== undefined, byMatch, pause.read !== undefined].filter(Boolean).length;
  if (ways !== 1 || (pause.k !== undefined && pause.nth !== undefined)) {
    throw new TypeError(`runWithCrash: pause takes either k, or op and/or path, or read (the last two with an optional nth), got ${JSON.stringify(pause)}`);
  }
  if (pause.read !== undefined && !pause.read.startsWith('/')) throw new TypeError(`runWithCrash: pause.read must be an absolute path glob, got ${JSON.stringify(pause.read)}`);
  if (/[\t\n]/.test(`${pause.op ?? ''}${pause.path ?? ''}${pause.read ?? ''}`)) throw new TypeError('runWithCrash: pause.op, pause.path and pause.read cannot hold tabs or newlines');
  return pause;
}

interface PauseWatch {
  paused: Promise<CountedCall | undefined>;
  resume: () => void;
  tick: () => void;
  ended: () => void;
}

/**
 * Notices the pause through the counter file (the library writes the
 * stopped process's pid there before it stops) and /proc (state T: it has
 * really stopped, so a SIGCONT cannot arrive before its SIGSTOP).
 */
function watchPause(enabled: boolean, counterFile: string, logFile: string): PauseWatch {
  let settle: (call: CountedCall | undefined) => void = () => undefined;
  const paused = new Promise<CountedCall | undefined>((resolve) => {
    settle = resolve;
  });
  if (!enabled) {
    settle(undefined);
    return { paused, resume: () => { throw new Error('runWithCrash: this run has no pause point'); }, tick: () => undefined, ended: () => undefined };
  }
  let stopped: { pid: number; call: CountedCall } | undefined;
  let settled = false;
  let resumed = false;
  return {
    paused,
    tick: () => {
      if (settled) return;
      let counter: Buffer;
      try {
        counter = readFileSync(counterFile);
      } catch {
        return;
      }
      const pid = Number(counter.readBigInt64LE(PAUSED_PID_OFFSET));
      if (pid <= 0 || processState(pid) !== 'T') return;
      const k = Number(counter.readBigUInt64LE(PAUSED_K_OFFSET));
      const call = parseLog(readFileSync(logFile, 'utf8')).calls.find((c) => c.k === k);
      if (call === undefined) return;
      stopped = { pid, call };
      settled = true;
      settle(call);
    },
    resume: () => {
      if (stopped === undefined) throw new Error('runWithCrash: resume() before the run paused');
      if (resumed) return;
      resumed = true;
      try {
        process.kill(stopped.pid, 'SIGCONT');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
      }
    },
    ended: () => {
      if (!settled) {
        settled = true;
        settle(undefined);
      }
    },
  };
}

/** Field 3 of /proc/<pid>/stat (R, S, T, Z, ...), or undefined when it is gone. */
function processState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  } catch {
    return undefined;
  }
}

interface SuperviseOptions {
  command: string;
  args: string[];
  cwd: string | undefined;
  env: NodeJS.ProcessEnv;
  stdin: string | Buffer | undefined;
  timeoutMs: number;
  interruptLogged: () => boolean;
  /** Called at every poll while the program runs. */
  onTick: () => void;
}

interface Outcome {
  pgid: number;
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
}

function supervise(options: SuperviseOptions): { pid: number; outcome: Promise<Outcome> } {
  let pid = -1;
  const outcome = new Promise<Outcome>((resolve, reject) => {
    const child = spawn(options.command, options.args, {
      cwd: options.cwd,
      env: options.env,
      detached: true, // own process group, so one kill(-pgid) reaches the whole tree
      stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    pid = child.pid ?? -1;
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout?.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));
    if (child.stdin && options.stdin !== undefined) {
      child.stdin.on('error', () => {}); // EPIPE when the program dies before reading
      child.stdin.end(options.stdin);
    }

    let timedOut = false;
    let graceTimer: NodeJS.Timeout | undefined;
    // Stray processes outside the group can hold our pipes open; once the
    // leader is gone for good, stop waiting for them.
    const armGrace = (): void => {
      graceTimer ??= setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
      }, STREAM_GRACE_MS);
    };
    const timeout = setTimeout(() => {
      timedOut = true;
      if (child.pid !== undefined) killGroup(child.pid);
      armGrace();
    }, options.timeoutMs);
    // Fallback for group members the library cannot kill itself (a static
    // leader never records the group). Killing on the counter alone could
    // beat the interrupted call's log line, so wait for the line.
    const poll = setInterval(() => {
      if (child.pid !== undefined && options.interruptLogged()) killGroup(child.pid);
      options.onTick();
    }, POLL_MS);

    const stop = (): void => {
      clearTimeout(timeout);
      clearInterval(poll);
      if (graceTimer) clearTimeout(graceTimer);
    };
    child.on('error', (error) => {
      stop();
      reject(error);
    });
    child.on('exit', () => {
      if (timedOut || options.interruptLogged()) {
        if (child.pid !== undefined) killGroup(child.pid);
        armGrace();
      }
    });
    child.on('close', (exitCode, signal) => {
      stop();
      if (child.pid === undefined) return; // spawn failed; 'error' rejects
      resolve({
        pgid: child.pid,
        exitCode,
        signal,
        timedOut,
        stdout: Buffer.concat(stdout).toString('utf8'),
        stderr: Buffer.concat(stderr).toString('utf8'),
      });
    });
  });
  return { pid, outcome };
}

function unescapeField(field: string): string {
  return field.replace(/\\([\\tn])/g, (_, c: string) => (c === 't' ? '\t' : c === 'n' ? '\n' : '\\'));
}

function parseLog(text: string): { calls: CountedCall[]; interrupted?: CountedCall; paused?: CountedCall } {
  const calls: CountedCall[] = [];
  let interrupted: CountedCall | undefined;
  let paused: CountedCall | undefined;
  for (const line of text.split('\n')) {
    const [k, pid, op, target, target2, mark, flags, mode] = line.split('\t');
    if (k === undefined || pid === undefined || op === undefined || target === undefined) continue;
    const call: CountedCall = { k: Number(k), pid: Number(pid), op: unescapeField(op), path: unescapeField(target) };
    if (target2) call.path2 = unescapeField(target2);
    if (flags) call.flags = Number(flags);
    if (mode) call.mode = parseInt(mode, 8);
    calls.push(call);
    if (mark === 'interrupted') interrupted = call;
    if (mark === 'paused') paused = call;
  }
  // Appends from concurrent processes may land out of k order.
  calls.sort((a, b) => a.k - b.k);
  return { calls, ...(interrupted ? { interrupted } : {}), ...(paused ? { paused } : {}) };
}
