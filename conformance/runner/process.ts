/**
 * Running the roles of an implementation (MANIFEST-2): each role command runs
 * in its own process group with the runner's environment plus the manifest's
 * `env`, and the whole group is killed when it exceeds the time limit. After
 * the leader exits, whatever it left in its group is killed too, so a case
 * never leaks processes into the next one.
 */
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { CRASH_ENV } from '../crash/run.ts';
import { HOST_OVERRIDE_ENV } from '../../src/model/identity.ts';
import { type Manifest, type Placeholders, type Role, roleArgv } from './manifest.ts';

export interface ProcessResult {
  argv: string[];
  /** Exit status, or null when a signal ended the leader. */
  code: number | null;
  signal: string | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
  ms: number;
}

export interface RunOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs: number;
  /** Bytes of each output stream kept (the rest is counted, not kept). */
  keepBytes?: number;
}

const KEEP_DEFAULT = 1 << 20;
const STREAM_GRACE_MS = 1500;

/** The environment every role gets: ours minus the crash injector's and identity-override variables, plus `extra`. */
export function roleEnv(manifest: Manifest, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.values(CRASH_ENV)) delete env[name];
  delete env[HOST_OVERRIDE_ENV];
  delete env['LD_PRELOAD'];
  return { ...env, ...manifest.env, ...extra };
}

export function killGroup(pgid: number, signal: NodeJS.Signals = 'SIGKILL'): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: nothing left; EPERM cannot happen for our own children.
  }
}

export interface Spawned {
  pid: number;
  done: Promise<ProcessResult>;
  /** SIGKILL the whole group now. */
  kill: () => void;
}

/** Starts argv as the leader of a new process group; `done` settles when it exited and its output was collected. */
export function start(argv: string[], options: RunOptions): Spawned {
  const [command, ...args] = argv;
  if (command === undefined) throw new TypeError('start: empty argv');
  const began = Date.now();
  const keep = options.keepBytes ?? KEEP_DEFAULT;
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const collect = (): { push: (chunk: Buffer) => void; text: () => string } => {
    const parts: Buffer[] = [];
    let size = 0;
    return {
      push: (chunk) => {
        if (size >= keep) return;
        parts.push(chunk.subarray(0, keep - size));
        size += Math.min(chunk.length, keep - size);
      },
      text: () => Buffer.concat(parts).toString('utf8'),
    };
  };
  const out = collect();
  const err = collect();
  child.stdout.on('data', out.push);
  child.stderr.on('data', err.push);
  let timedOut = false;
  const pid = child.pid ?? -1;
  const done = new Promise<ProcessResult>((resolve) => {
    let exit: { code: number | null; signal: string | null } | undefined;
    let graceTimer: NodeJS.Timeout | undefined;
    const timer = setTimeout(() => {
      timedOut = true;
      if (pid > 0) killGroup(pid);
    }, options.timeoutMs);
    const finish = (): void => {
      clearTimeout(timer);
      if (graceTimer !== undefined) clearTimeout(graceTimer);
      resolve({ argv, code: exit?.code ?? null, signal: exit?.signal ?? null, timedOut, stdout: out.text(), stderr: err.text(), ms: Date.now() - began });
    };
    child.on('error', (error) => {
      exit = { code: 127, signal: null };
      err.push(Buffer.from(`cannot start ${command}: ${error.message}\n`));
      finish();
    });
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      // Leftovers in the role's group (a helper it forgot) end with it.
      if (pid > 0) killGroup(pid);
      // Something outside the group may still hold our pipes: stop waiting soon.
      graceTimer = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
      }, STREAM_GRACE_MS);
    });
    child.on('close', () => {
      if (exit !== undefined) finish();
    });
  });
  return { pid, done, kill: () => pid > 0 && killGroup(pid) };
}

export function run(argv: string[], options: RunOptions): Promise<ProcessResult> {
  return start(argv, options).done;
}

export interface RoleRunOptions {
  /** Added to the role's environment. */
  env?: NodeJS.ProcessEnv;
  /** Overrides the manifest's timeout_s. */
  timeoutMs?: number;
}

/** Runs one role of an implementation with its placeholders filled in. */
export function startRole(manifest: Manifest, role: Role, values: Placeholders, options: RoleRunOptions = {}): Spawned {
  return start(roleArgv(manifest, role, values), {
    cwd: manifest.dir,
    env: roleEnv(manifest, options.env),
    timeoutMs: options.timeoutMs ?? manifest.timeoutMs,
  });
}

export function runRole(manifest: Manifest, role: Role, values: Placeholders, options: RoleRunOptions = {}): Promise<ProcessResult> {
  return startRole(manifest, role, values, options).done;
}

/** One line describing how a process ended, for evidence. */
export function describeExit(result: ProcessResult): string {
  const how = result.timedOut ? `killed after its time limit (${result.ms} ms)` : result.signal !== null ? `killed by ${result.signal}` : `exit ${result.code}`;
  const tail = (text: string): string => {
    const trimmed = text.trim();
    if (trimmed === '') return '';
    const lines = trimmed.split('\n');
    return lines.slice(-3).join(' | ').slice(0, 400);
  };
  const err = tail(result.stderr);
  return `${result.argv.map((a) => (/^[\w./:=@%+-]+$/.test(a) ? a : JSON.stringify(a))).join(' ')}: ${how}${err === '' ? '' : `; stderr: ${err}`}`;
}

export { sleep };
