/**
 * Watching what runs: the commands of timing and ownership cases are probes
 * that write what happens to them to a log OUTSIDE the queue (their pid, the
 * instant a SIGTERM reached them, ticks while they live), and the runner
 * watches process groups in /proc itself. The runner never uses the
 * reference's liveness code to judge another implementation: a bug shared
 * by both would blind the suite.
 *
 * Timing clauses are checked against the spec's number plus
 * SCHEDULING_TOLERANCE_MS, stated in every message that uses it: on a loaded
 * 2-core machine a sleeping poller may be scheduled late and a fork may
 * take a few hundred milliseconds (probes log with shell builtins only, so
 * their own lines are not late). A violation the suite must catch (acting
 * after 5 s instead of 2 s, KILL without TERM) lies far outside that band.
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, readdirSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { sleep } from '../runner/process.ts';
import { sh, type Argv } from './jobs.ts';

/** What a loaded 2-core machine may add to a reaction the spec bounds. */
export const SCHEDULING_TOLERANCE_MS = 1500;

/** "2000 ms + 1500 ms scheduling tolerance": how every bound reads in a failure. */
export function bound(name: string, specMs: number, toleranceMs = SCHEDULING_TOLERANCE_MS): string {
  return `${name} ${specMs} ms + ${toleranceMs} ms scheduling tolerance`;
}

/** Polls until `test` holds or `ms` passed; resolves to whether it held. */
export async function waitFor(test: () => boolean | Promise<boolean>, ms: number, every = 25): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await test()) return true;
    if (Date.now() > deadline) return false;
    await sleep(every);
  }
}

interface Stat {
  pid: number;
  state: string;
  pgrp: number;
  start: string;
}

/** /proc/<pid>/stat, parsed after the last ") " (ID-2); undefined when the process is gone. */
export function procStat(pid: number): Stat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  const close = text.lastIndexOf(') ');
  if (close < 0) return undefined;
  const fields = text.slice(close + 2).trim().split(' ');
  const start = fields[19];
  if (fields[0] === undefined || start === undefined) return undefined;
  return { pid, state: fields[0], pgrp: Number(fields[2]), start };
}

/** The process `pid` still runs with start `start` (not gone, not a zombie, not reused). */
export function processLives(pid: number, start?: string): boolean {
  const st = procStat(pid);
  return st !== undefined && st.state !== 'Z' && st.state !== 'X' && (start === undefined || st.start === start);
}

/** Pids of the live (non-zombie) members of process group `pgid`, from one scan of /proc. */
export function groupMembers(pgid: number): number[] {
  const live: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const st = procStat(Number(name));
    if (st !== undefined && st.pgrp === pgid && st.state !== 'Z' && st.state !== 'X') live.push(st.pid);
  }
  return live;
}

export function groupLives(pgid: number): boolean {
  return groupMembers(pgid).length > 0;
}

/** SIGKILL whatever is left of a group (a case's cleanup: it must never leak processes). */
export function killGroupNow(pgid: number | undefined): void {
  if (pgid === undefined || pgid < 2) return;
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // gone
  }
}

export function killNow(pid: number | undefined): void {
  if (pid === undefined || pid < 2) return;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // gone
  }
}

/**
 * A probe command: logs "start TAG" (the start log of every case) and
 * "pid TAG PID", traps SIGTERM (logging "term TAG UPTIME"; with `onTerm`
 * 'ignore' it then keeps running, so only SIGKILL stops it), optionally
 * logs "tick TAG UPTIME" every 100 ms, and runs until the file `gate` exists
 * (then logs "done TAG" and exits 0). `gate` undefined: until killed.
 */
export function probe(log: string, tag: string, options: { gate?: string; onTerm?: 'exit' | 'ignore'; ticks?: boolean } = {}): Argv {
  const onTerm = options.onTerm === 'ignore' ? '' : '; exit 143';
  // Instants are /proc/uptime (read by a builtin: no fork, so a probe logs at once even on a loaded machine).
  const tick = options.ticks === true ? `read -r u x < /proc/uptime; printf 'tick %s %s\\n' "$1" "$u" >> "$2"; ` : '';
  const until = options.gate === undefined ? 'while :' : 'while [ ! -e "$3" ]';
  // The trap is set before the "pid" line: a probe whose pid is known handles SIGTERM.
  return sh(
    `trap 'read -r u x < /proc/uptime; printf "term %s %s\\n" "$1" "$u" >> "$2"${onTerm}' TERM; ` +
      `printf 'start %s\\npid %s %s\\n' "$1" "$1" "$$" >> "$2"; ` +
      `${until}; do ${tick}sleep 0.1; done; printf 'done %s\\n' "$1" >> "$2"`,
    tag,
    log,
    options.gate ?? '/nonexistent',
  );
}

/** Runs in the background of the job's group: survives its leader, ignores SIGTERM, logs it ("term member <uptime>"). */
const MEMBER_SCRIPT = `trap 'read -r u x < /proc/uptime; printf "term member %s\\n" "$u" >> "$1"' TERM
: > "$2"
while :; do sleep 0.1; done
`;

/**
 * A command whose leader starts a member in its group (MEMBER_SCRIPT), waits
 * until the member's trap is set, logs "start leader" and "member <pid>" to
 * `log`, and exits 0 at once: what EXEC-11 stops is the member alone.
 */
export async function leaderLeavingMember(work: string, log: string): Promise<Argv> {
  const member = path.join(work, 'member.sh');
  const ready = path.join(work, 'member.ready');
  await writeFile(member, MEMBER_SCRIPT, { mode: 0o600 });
  return sh(`printf 'start %s\\n' "$1" >> "$2"; sh "$3" "$2" "$4" & printf 'member %s\\n' "$!" >> "$2"; while [ ! -e "$4" ]; do sleep 0.02; done; exit 0`, 'leader', log, member, ready);
}

export interface ProbeLog {
  lines: string[];
  /** The probe's pid, from its "pid" line. */
  pid: (tag: string) => number | undefined;
  /** Instants of its "term" lines. */
  terms: (tag: string) => number[];
  ticks: (tag: string) => number[];
  starts: (tag: string) => number;
  has: (line: string) => boolean;
}

/** Seconds since boot, as /proc/uptime says. */
function uptimeSeconds(): number {
  return Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
}

/** A probe's /proc/uptime reading as milliseconds since the epoch (10 ms resolution). */
export function uptimeToEpochMs(uptime: string): number {
  return Math.round(Date.now() - (uptimeSeconds() - Number(uptime)) * 1000);
}

export async function readProbeLog(file: string): Promise<ProbeLog> {
  const lines = (await readFile(file, 'utf8').catch(() => '')).split('\n').filter((line) => line !== '');
  const field = (kind: string, tag: string): string[] => lines.filter((l) => l.startsWith(`${kind} ${tag} `)).map((l) => l.slice(kind.length + tag.length + 2));
  return {
    lines,
    pid: (tag) => {
      const v = field('pid', tag).at(-1);
      return v === undefined ? undefined : Number(v);
    },
    terms: (tag) => field('term', tag).map(uptimeToEpochMs),
    ticks: (tag) => field('tick', tag).map(uptimeToEpochMs),
    starts: (tag) => lines.filter((l) => l === `start ${tag}`).length,
    has: (line) => lines.includes(line),
  };
}

export interface PlantedGroup {
  /** The group id: the leader's pid. */
  pgid: number;
  /** The leader's start (ID-2), as an exec record names it. */
  start: string;
  /** The probe's pid (the leader itself, or the member the leader left behind). */
  probePid: number;
  probeStart: string;
  /** SIGKILL whatever is left of it (cleanup). */
  kill: () => void;
}

/**
 * A process group outside any consumer, to be named by a planted exec record:
 * a probe (see `probe`) leading its own group, or, with `leaderExits`, a
 * leader that starts the probe in its group and exits, leaving a group
 * without a leader whose member lives (ID-8).
 */
export async function spawnGroup(log: string, tag: string, options: { onTerm: 'exit' | 'ignore'; leaderExits?: boolean; scratch: string }): Promise<PlantedGroup> {
  const probeArgv = probe(log, tag, { onTerm: options.onTerm });
  const leaderGate = `${options.scratch}/${tag}.leader-may-exit`;
  const argv = options.leaderExits === true ? ['-c', 'sh -c "$1" "$2" "$3" "$4" "$5" & while [ ! -e "$6" ]; do sleep 0.02; done', 'fsjob-leader', ...probeArgv.slice(2), leaderGate] : probeArgv.slice(1);
  const child = spawn('sh', argv, { detached: true, stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const pgid = child.pid;
  if (pgid === undefined) throw new Error(`cannot start the planted group ${tag}`);
  const kill = (): void => {
    if (groupLives(pgid)) killGroupNow(pgid);
  };
  let start: string | undefined;
  let probePid: number | undefined;
  const ready = await waitFor(async () => {
    start ??= procStat(pgid)?.start;
    probePid ??= (await readProbeLog(log)).pid(tag);
    return start !== undefined && probePid !== undefined;
  }, 20_000, 10);
  const probeStart = probePid === undefined ? undefined : procStat(probePid)?.start;
  if (!ready || start === undefined || probePid === undefined || probeStart === undefined) {
    kill();
    throw new Error(`the planted group ${tag} did not start within 20 s`);
  }
  if (options.leaderExits === true) {
    closeSync(openSync(leaderGate, 'w'));
    await exited;
  }
  return { pgid, start, probePid, probeStart, kill };
}

/**
 * The instant a process ended, as a watcher process outside the runner saw
 * it: it waits for the line `KEY PID` in `log` (a probe's log), then reads
 * /proc/PID/stat with shell builtins every 20 ms until the process is gone
 * (no entry, a zombie, or another process's start time) and writes its
 * /proc/uptime reading to `out`. A case that polls from the runner's event
 * loop learns of a death late whenever other cases keep that loop busy
 * (seconds on a loaded machine); the watcher is scheduled on its own, as the
 * probe that logs its SIGTERM is. It gives up after `watchdogMs`.
 */
export interface DeathWatcher {
  /** Epoch ms of the watcher's first sight of the process gone; undefined while it has not seen it. */
  diedAt: () => Promise<number | undefined>;
  stop: () => void;
}

const DEATH_WATCHER = `log=$1 key=$2 out=$3 left=$4
pid=
while [ -z "$pid" ]; do
  [ "$left" -gt 0 ] || exit 1
  if [ -e "$log" ]; then
    while read -r k v; do [ "$k" = "$key" ] && pid=$v; done < "$log"
  fi
  [ -n "$pid" ] || { sleep 0.02; left=$((left - 1)); }
done
start=
while [ "$left" -gt 0 ]; do
  line=
  { read -r line < "/proc/$pid/stat"; } 2>/dev/null
  [ -n "$line" ] || break
  set -- \${line##*) }
  case $1 in Z|X) break ;; esac
  shift 19
  [ -n "$start" ] || start=$1
  [ "$start" = "$1" ] || break
  sleep 0.02
  left=$((left - 1))
done
[ "$left" -gt 0 ] || exit 1
read -r u x < /proc/uptime
printf '%s\\n' "$u" > "$out"
`;

export function watchDeath(log: string, key: string, out: string, watchdogMs: number): DeathWatcher {
  const child = spawn('sh', ['-c', DEATH_WATCHER, 'fsjob-death-watcher', log, key, out, String(Math.ceil(watchdogMs / 20))], { stdio: 'ignore' });
  child.on('error', () => undefined);
  return {
    diedAt: async () => {
      const text = (await readFile(out, 'utf8').catch(() => '')).trim();
      return text === '' ? undefined : uptimeToEpochMs(text);
    },
    stop: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}
