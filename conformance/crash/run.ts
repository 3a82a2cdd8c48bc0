// Runs one program under the crash injector and reports what it did to the
// queue directory. The conformance runner calls this once to count the calls
// of an operation, then once per k with killAt = k, and checks recovery.
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { interposerPath } from './interposer.ts';

export interface CrashRunOptions {
  argv: string[]; // program + args
  cwd?: string;
  env?: NodeJS.ProcessEnv; // base env (default process.env); driver adds its own vars
  root: string; // only calls whose target is inside this directory count
  killAt?: number; // 1-based k: kill the process group instead of performing the k-th counted call; undefined = count only
  timeoutMs?: number; // safety net: SIGKILL the group after this (default 60000), reported as timedOut
  stdin?: string | Buffer;
}

export interface CountedCall {
  k: number;
  pid: number;
  /** Exact libc symbol, e.g. `openat64`, `renameat2`, `pwrite64`; see callFamily. */
  op: string;
  /** Absolute target; for rename/link the source, for symlink the link itself. */
  path: string;
  /** rename/link destination, or symlink's literal link text. */
  path2?: string;
}

export interface CrashRunResult {
  calls: CountedCall[]; // every counted call in order (up to and including the interrupted one)
  crashed: boolean; // true when killAt was reached and the group was killed
  interrupted?: CountedCall; // the call that was not performed
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
} as const;

const COUNTER_BYTES = 4096;
const POLL_MS = 10;
const GROUP_GONE_MS = 10_000;
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
  if (/^(fsync|fdatasync|sync_file_range)$/.test(op)) return 'fsync';
  if (/^(__x)?mknod(at)?$|^mkfifo(at)?$/.test(op)) return 'mknod';
  if (/^(utimensat|futimens)$/.test(op)) return 'utime';
  if (/^(posix_)?fallocate(64)?$/.test(op)) return 'fallocate';
  return op;
}

export async function runWithCrash(options: CrashRunOptions): Promise<CrashRunResult> {
  const [command, ...args] = options.argv;
  if (command === undefined) throw new TypeError('runWithCrash: argv must name a program');
  const killAt = options.killAt;
  if (killAt !== undefined && (!Number.isSafeInteger(killAt) || killAt < 1)) {
    throw new RangeError(`runWithCrash: killAt must be a positive integer, got ${killAt}`);
  }
  const library = await interposerPath();
  // The library compares against real paths; a symlinked root would
  // otherwise never match anything.
  const root = await realpath(options.root);

  const work = await mkdtemp(path.join(os.tmpdir(), 'fsjob-crash-run-'));
  try {
    const counterFile = path.join(work, 'counter');
    const logFile = path.join(work, 'calls.log');
    await writeFile(counterFile, Buffer.alloc(COUNTER_BYTES));
    await writeFile(logFile, '');

    const env: NodeJS.ProcessEnv = { ...(options.env ?? process.env) };
    const inherited = env.LD_PRELOAD;
    env.LD_PRELOAD = inherited ? `${library}:${inherited}` : library;
    env.UV_USE_IO_URING = '0';
    env[CRASH_ENV.root] = root;
    env[CRASH_ENV.counter] = counterFile;
    env[CRASH_ENV.log] = logFile;
    env[CRASH_ENV.killAt] = String(killAt ?? 0);
    // The group is recorded by the spawned leader itself (see interpose.c);
    // a stale override from the caller's environment must not win.
    delete env[CRASH_ENV.pgid];

    const readCounter = (): number => Number(readFileSync(counterFile).readBigUInt64LE(0));
    const reached = (): boolean => killAt !== undefined && readCounter() >= killAt;
    // The library logs the interrupted call before it kills, so once the
    // marker is there nothing is lost by killing the group ourselves.
    const interruptLogged = (): boolean => reached() && readFileSync(logFile, 'utf8').includes('\tinterrupted\n');

    const outcome = await supervise({
      command,
      args,
      cwd: options.cwd,
      env,
      stdin: options.stdin,
      timeoutMs: options.timeoutMs ?? 60_000,
      interruptLogged,
    });

    const crashed = reached();
    if (crashed || outcome.timedOut) {
      killGroup(outcome.pgid);
      await waitGroupGone(outcome.pgid);
    }

    const logged = parseLog(await readFile(logFile, 'utf8'));
    const calls = logged.calls.filter((call) => killAt === undefined || call.k <= killAt);
    const result: CrashRunResult = {
      calls,
      crashed,
      exitCode: outcome.exitCode,
      signal: outcome.signal,
      timedOut: outcome.timedOut,
      stdout: outcome.stdout,
      stderr: outcome.stderr,
    };
    if (logged.interrupted) result.interrupted = logged.interrupted;
    return result;
  } finally {
    await rm(work, { recursive: true, force: true });
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
}

interface Outcome {
  pgid: number;
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
}

function supervise(options: SuperviseOptions): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(options.command, options.args, {
      cwd: options.cwd,
      env: options.env,
      detached: true, // own process group, so one kill(-pgid) reaches the whole tree
      stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
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
}

function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

async function waitGroupGone(pgid: number): Promise<void> {
  const deadline = Date.now() + GROUP_GONE_MS;
  while (groupAlive(pgid)) {
    if (Date.now() > deadline) {
      throw new Error(`runWithCrash: process group ${pgid} still has live members ${GROUP_GONE_MS} ms after SIGKILL`);
    }
    killGroup(pgid);
    await sleep(POLL_MS);
  }
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
  // kill(2) still finds zombies, and an init that never reaps (common in
  // containers) keeps orphaned ones forever; a zombie can touch nothing.
  return hasLiveMember(pgid);
}

function hasLiveMember(pgid: number): boolean {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return true;
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // exited while we looked
    }
    // Fields after "pid (comm) ": state ppid pgrp ...; comm may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) === pgid && fields[0] !== 'Z' && fields[0] !== 'X') return true;
  }
  return false;
}

function unescapeField(field: string): string {
  return field.replace(/\\([\\tn])/g, (_, c: string) => (c === 't' ? '\t' : c === 'n' ? '\n' : '\\'));
}

function parseLog(text: string): { calls: CountedCall[]; interrupted?: CountedCall } {
  const calls: CountedCall[] = [];
  let interrupted: CountedCall | undefined;
  for (const line of text.split('\n')) {
    const [k, pid, op, target, target2, mark] = line.split('\t');
    if (k === undefined || pid === undefined || op === undefined || target === undefined) continue;
    const call: CountedCall = { k: Number(k), pid: Number(pid), op: unescapeField(op), path: unescapeField(target) };
    if (target2) call.path2 = unescapeField(target2);
    calls.push(call);
    if (mark === 'interrupted') interrupted = call;
  }
  // Appends from concurrent processes may land out of k order.
  calls.sort((a, b) => a.k - b.k);
  return interrupted ? { calls, interrupted } : { calls };
}
