/**
 * Who owns a claim, and is that owner (or the process group it started)
 * still running?
 *
 * Guarantees (clause ids as in the spec):
 * - ID-1 an identity is { host, boot_id, pid_ns, pid, start, uid }.
 * - ID-2 Linux `start` is field 22 of /proc/<pid>/stat, counted after the LAST
 *   ") " so a comm containing spaces or parentheses cannot shift the fields.
 * - ID-3/ID-4 Linux boot_id and pid_ns come from /proc; ID-5 macOS falls back
 *   to `ps -o lstart=` and `sysctl kern.boottime`, pid_ns "none".
 * - ID-6 a LOCAL owner (same boot_id and pid_ns) is alive iff its pid exists,
 *   is not a zombie and has the recorded start; a different start is a reused
 *   pid (dead). When /proc cannot tell (EACCES, hidepid) the verdict is
 *   `unknown`, never `dead`.
 * - ID-7 a FOREIGN owner is judged only by its lease, plus GUARDIAN_LIMIT and
 *   LEASE_SKEW (LEASE-3, foreignLeaseGraceMs).
 * - ID-8/ID-9 the process group of an execution: src/model/groups.ts.
 *
 * Residual limit: `start` has clock-tick resolution (10 ms), so a pid reused
 * within the same tick as the original's start is indistinguishable (it needs
 * the whole pid space to wrap within one tick).
 */
import type * as nodeFs from 'node:fs/promises';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { hostname as osHostname } from 'node:os';
import { FsjobError, errnoOf } from '../base/errors.ts';
import { wrapIo } from '../fs/io-error.ts';
import { GUARDIAN_LIMIT, LEASE_SKEW } from '../base/constants.ts';

/**
 * LEASE-3 (ID-7): how long after its last renewal a foreign claim must be
 * left alone. An owner that cannot renew may run until just before lease_ms
 * (LEASE-2) and die there; its guardian then has up to GUARDIAN_LIMIT to stop
 * the commands (WORKER-2). Breaking earlier could let a second execution
 * overlap the first. LEASE_SKEW covers the two hosts' clocks.
 */
export function foreignLeaseGraceMs(leaseMs: number): number {
  return leaseMs + GUARDIAN_LIMIT + LEASE_SKEW;
}
/** "<host>/<boot_id>": makes this process act as another host (tests only). */
export const HOST_OVERRIDE_ENV = 'FSJOB_HOST_OVERRIDE';
const HOST_MAX_BYTES = 255;

/** ID-1: the record type is the one source of truth (schemas/common.schema.json). */
export type { Identity } from '../records/generated/types.ts';
import type { Identity, Group } from '../records/generated/types.ts';

/** ID-8: a process group as recorded when it was started (exec.<g>.json `group`). */
export type ProcessGroup = Group;

export interface ProcessStart {
  start: string;
  /** one-letter state: field 3 on Linux, first letter of `ps -o stat` on macOS */
  state: string;
}

export type Verdict = 'alive' | 'dead' | 'unknown';

export interface OwnerJudgement {
  verdict: Verdict;
  basis: 'process' | 'lease';
  reason: string;
  /**
   * A foreign claim that missed a renewal by the wall clock and is being
   * watched (LEASE-3): how much longer the watch must see its renewal
   * unchanged before the claim may be broken. A one-shot consumer waits for
   * it (tools.md MANIFEST-4); undefined otherwise.
   */
  watchRemainingMs?: number;
}

export interface LeaseFacts {
  nowMs: number;
  lastRenewalMs: number;
  leaseMs: number;
}

export type GroupState = 'running' | 'stopped' | 'unknown';
export type SignalOutcome = 'signalled' | 'stopped' | 'refused';

export interface ExecResult {
  status: number;
  stdout: string;
}

/** Seams for everything this module asks the operating system. */
export interface IdentityOptions {
  fs?: Pick<typeof nodeFs, 'readFile' | 'readlink' | 'readdir'>;
  /** process.kill semantics: throws an errno error on failure. */
  kill?: (pid: number, signal: NodeJS.Signals | 0) => void;
  /** Runs a command with LC_ALL=C; resolves with its status, rejects only if it cannot start. */
  exec?: (file: string, args: string[]) => Promise<ExecResult>;
  platform?: NodeJS.Platform;
  env?: NodeJS.ProcessEnv;
}

export interface System {
  fs: Pick<typeof nodeFs, 'readFile' | 'readlink' | 'readdir'>;
  kill: (pid: number, signal: NodeJS.Signals | 0) => void;
  exec: (file: string, args: string[]) => Promise<ExecResult>;
  platform: NodeJS.Platform;
  env: NodeJS.ProcessEnv;
}

async function runWithCLocale(file: string, args: string[]): Promise<ExecResult> {
  // Loaded here: only macOS (ps) needs it, and loading child_process costs every enqueue a few milliseconds.
  const { execFile } = await import('node:child_process');
  return new Promise((resolve, reject) => {
    execFile(file, args, { env: { ...process.env, LC_ALL: 'C' }, timeout: 10_000 }, (error, stdout) => {
      if (error === null) return resolve({ status: 0, stdout });
      if (typeof error.code === 'number') return resolve({ status: error.code, stdout });
      reject(error);
    });
  });
}

/**
 * /proc and /sys answer from memory: read synchronously, these cost
 * microseconds, where each promise call was several thread-pool round trips
 * (readFile alone is open, fstat, read and close); a command job reads
 * /proc/<pid>/stat a few times.
 */
const procFs = {
  readFile: async (path: string, encoding: BufferEncoding) => readFileSync(path, encoding),
  readlink: async (path: string) => readlinkSync(path),
  readdir: async (path: string) => readdirSync(path),
} as unknown as System['fs'];

export function systemOf(options: IdentityOptions = {}): System {
  return {
    fs: options.fs ?? procFs,
    kill: options.kill ?? ((pid, signal) => void process.kill(pid, signal)),
    exec: options.exec ?? runWithCLocale,
    platform: options.platform ?? process.platform,
    env: options.env ?? process.env,
  };
}

function unsupported(platform: string): FsjobError {
  return new FsjobError('USAGE', `fsjob supports Linux and macOS, not ${platform}; run it on one of those`);
}

export function isDeadState(state: string): boolean {
  return state === 'Z' || state === 'X' || state === 'x';
}

function requirePid(pid: number): void {
  // pid 1 is legitimate: a consumer may be a container's init.
  if (!Number.isSafeInteger(pid) || pid < 1) {
    throw new FsjobError('USAGE', `pid ${pid} is not a process id (must be a positive integer)`);
  }
}

export function requirePgid(pgid: number): void {
  // kill(-0) would hit our own group and kill(-1) every process we may signal.
  if (!Number.isSafeInteger(pgid) || pgid < 2) {
    throw new FsjobError('USAGE', `pgid ${pgid} is not a usable process group id (must be an integer >= 2)`);
  }
}

export interface ProcStatFields {
  state: string;
  ppid: number;
  pgrp: number;
  start: string;
}

/**
 * ID-2: parse /proc/<pid>/stat. The comm field (2) may contain anything but
 * the kernel writes ") " right after it, and no later field contains ")", so
 * the text after the LAST ") " begins with field 3.
 */
export function parseProcStat(text: string): ProcStatFields | undefined {
  const close = text.lastIndexOf(') ');
  if (close < 0) return undefined;
  const fields = text.slice(close + 2).trim().split(' ');
  const state = fields[0];
  const ppid = Number(fields[1]);
  const pgrp = Number(fields[2]);
  const start = fields[19]; // field 22
  if (state === undefined || start === undefined || !/^\d+$/.test(start)) return undefined;
  if (!Number.isInteger(ppid) || !Number.isInteger(pgrp)) return undefined;
  return { state, ppid, pgrp, start };
}

/** ID-5: `ps -o lstart=` text as an identity start. */
export function normalizeLstart(text: string): string {
  return `lstart:${text.replace(/\s+/g, ' ').trim()}`;
}

/** ID-5: `sysctl -n kern.boottime` ("{ sec = 1700000000, usec = 12345 } ...") as a boot id. */
export function parseBoottime(text: string): string | undefined {
  const match = /sec\s*=\s*(\d+)\s*,\s*usec\s*=\s*(\d+)/.exec(text);
  return match === null ? undefined : `boottime:${match[1]}.${match[2]}`;
}

function truncateUtf8(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return text;
  let end = maxBytes;
  // Never cut inside a multi-byte character.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}

/** kill(pid, 0): does the pid exist at all (EPERM means it does, just not ours)? */
function pidExists(system: System, pid: number): boolean {
  try {
    system.kill(pid, 0);
    return true;
  } catch (error) {
    return errnoOf(error) !== 'ESRCH';
  }
}

export async function readProcStat(system: System, pid: number): Promise<ProcStatFields | null> {
  const path = `/proc/${pid}/stat`;
  let text: string;
  try {
    // latin1: byte-exact for any comm; the fields we read are ASCII.
    text = await system.fs.readFile(path, 'latin1');
  } catch (error) {
    const errno = errnoOf(error);
    if (errno === 'ENOENT' || errno === 'ESRCH') {
      // hidepid makes other users' processes look absent; kill(0) still sees them.
      if (!pidExists(system, pid)) return null;
      throw new FsjobError(
        'IO',
        `${path} is unreadable although process ${pid} exists (/proc mounted with hidepid?); its liveness cannot be judged here`,
        { path, errno: errno ?? 'ENOENT', cause: error },
      );
    }
    throw wrapIo(error, path, 'reading');
  }
  const fields = parseProcStat(text);
  if (fields === undefined) {
    throw new FsjobError('IO', `${path} has an unexpected format; cannot judge process ${pid}`, {
      path,
      errno: 'EPROTO',
    });
  }
  return fields;
}

/**
 * The start (ID-2/ID-5) and state of a process, or null when no such process
 * exists. Throws IO when the system will not say (EACCES, hidepid).
 */
export async function processStart(pid: number, options: IdentityOptions = {}): Promise<ProcessStart | null> {
  requirePid(pid);
  const system = systemOf(options);
  if (system.platform === 'linux') {
    const fields = await readProcStat(system, pid);
    return fields === null ? null : { start: fields.start, state: fields.state };
  }
  if (system.platform === 'darwin') {
    const { status, stdout } = await system.exec('ps', ['-o', 'stat=', '-o', 'lstart=', '-p', String(pid)]);
    const line = stdout.trim();
    if (line === '') {
      if (status !== 0 && !pidExists(system, pid)) return null;
      throw new FsjobError('IO', `ps gave no answer for process ${pid} (status ${status})`, { errno: 'EPROTO' });
    }
    const space = line.search(/\s/);
    if (space < 0) throw new FsjobError('IO', `ps output for ${pid} is malformed: ${line}`, { errno: 'EPROTO' });
    return { state: line.slice(0, 1), start: normalizeLstart(line.slice(space)) };
  }
  throw unsupported(system.platform);
}

function parseOverride(value: string): { host: string; boot_id: string } {
  const slash = value.indexOf('/');
  const host = slash < 0 ? '' : value.slice(0, slash);
  const bootId = slash < 0 ? '' : value.slice(slash + 1);
  if (host === '' || bootId === '') {
    throw new FsjobError('USAGE', `${HOST_OVERRIDE_ENV}=${JSON.stringify(value)} must look like "<host>/<boot_id>"`);
  }
  return { host, boot_id: bootId };
}

async function computeSelfIdentity(system: System): Promise<Identity> {
  const pid = process.pid;
  const uid = process.geteuid?.() ?? 0;
  const host = truncateUtf8(osHostname(), HOST_MAX_BYTES);
  let bootId: string;
  let pidNs: string;
  if (system.platform === 'linux') {
    const bootPath = '/proc/sys/kernel/random/boot_id';
    try {
      bootId = (await system.fs.readFile(bootPath, 'utf8')).replace(/\n$/, '');
      pidNs = await system.fs.readlink('/proc/self/ns/pid');
    } catch (error) {
      throw wrapIo(error, bootPath, 'reading host identity from');
    }
  } else if (system.platform === 'darwin') {
    const { stdout } = await system.exec('sysctl', ['-n', 'kern.boottime']);
    const parsed = parseBoottime(stdout);
    if (parsed === undefined) {
      throw new FsjobError('IO', `cannot parse "sysctl -n kern.boottime" output: ${stdout.trim()}`, { errno: 'EPROTO' });
    }
    bootId = parsed;
    pidNs = 'none';
  } else {
    throw unsupported(system.platform);
  }
  const own = await processStart(pid, { ...system });
  if (own === null) throw new FsjobError('IO', `cannot find our own process ${pid}`, { errno: 'ESRCH' });
  const identity: Identity = { host, boot_id: bootId, pid_ns: pidNs, pid, start: own.start, uid };
  const override = system.env[HOST_OVERRIDE_ENV];
  return override === undefined || override === '' ? identity : { ...identity, ...parseOverride(override) };
}

const selfCache = new Map<string, Promise<Identity>>();

/**
 * This process's identity (ID-1). Cached per value of FSJOB_HOST_OVERRIDE,
 * which replaces host and boot_id so two processes on one machine can act as
 * two hosts. Injected seams bypass the cache.
 */
export function selfIdentity(options: IdentityOptions = {}): Promise<Identity> {
  const system = systemOf(options);
  const seamed = options.fs !== undefined || options.exec !== undefined || options.platform !== undefined;
  if (seamed) return computeSelfIdentity(system);
  const key = system.env[HOST_OVERRIDE_ENV] ?? '';
  let cached = selfCache.get(key);
  if (cached === undefined) {
    cached = computeSelfIdentity(system);
    selfCache.set(key, cached);
    cached.catch(() => selfCache.delete(key));
  }
  return cached;
}

/** Same boot and pid namespace as us: its pids mean something here. */
export async function isLocal(
  identity: Pick<Identity, 'boot_id' | 'pid_ns'>,
  options: IdentityOptions = {},
): Promise<boolean> {
  const self = await selfIdentity(options);
  return identity.boot_id === self.boot_id && identity.pid_ns === self.pid_ns;
}

/** ID-6 for local owners, ID-7 (lease only) for foreign ones. */
export async function judgeOwner(
  owner: Identity,
  lease: LeaseFacts,
  options: IdentityOptions = {},
): Promise<OwnerJudgement> {
  if (!(await isLocal(owner, options))) {
    const expiresMs = lease.lastRenewalMs + foreignLeaseGraceMs(lease.leaseMs);
    return lease.nowMs > expiresMs
      ? { verdict: 'dead', basis: 'lease', reason: `foreign owner on ${owner.host}: lease expired ${lease.nowMs - expiresMs} ms ago (guardian limit and skew allowance included, LEASE-3)` }
      : { verdict: 'alive', basis: 'lease', reason: `foreign owner on ${owner.host}: lease valid for ${expiresMs - lease.nowMs} ms more (guardian limit and skew allowance included, LEASE-3)` };
  }
  let current: ProcessStart | null;
  try {
    current = await processStart(owner.pid, options);
  } catch (error) {
    const detail = error instanceof FsjobError ? `${error.errno ?? error.code}: ${error.message}` : String(error);
    return { verdict: 'unknown', basis: 'process', reason: `cannot inspect pid ${owner.pid} (${detail})` };
  }
  if (current === null) return { verdict: 'dead', basis: 'process', reason: `no process with pid ${owner.pid} exists` };
  if (isDeadState(current.state)) {
    return { verdict: 'dead', basis: 'process', reason: `pid ${owner.pid} is a zombie (state ${current.state})` };
  }
  if (current.start !== owner.start) {
    return {
      verdict: 'dead',
      basis: 'process',
      reason: `pid ${owner.pid} was reused: it now has start ${current.start}, the owner had ${owner.start}`,
    };
  }
  return { verdict: 'alive', basis: 'process', reason: `pid ${owner.pid} is running with the recorded start` };
}
