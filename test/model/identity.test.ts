import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import * as fsp from 'node:fs/promises';
import { spawn, execFileSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { HOST_OVERRIDE_ENV, foreignLeaseGraceMs, isLocal, judgeOwner, normalizeLstart, parseBoottime, parseProcStat, processStart, selfIdentity } from '../../src/model/identity.ts';
import { groupState, signalGroup, stopGroup } from '../../src/model/groups.ts';
import type { Identity, IdentityOptions, ProcessGroup } from '../../src/model/identity.ts';
import type { Clock } from '../../src/base/clock.ts';
import { GUARDIAN_LIMIT, LEASE_SKEW } from '../../src/base/constants.ts';
import { LeaseWatch } from '../../src/model/lease-watch.ts';
import { cleanupAll, freshDir, rejectsWith, withWatchdog } from '../support/helpers.ts';

const LEASE = { nowMs: 0, lastRenewalMs: 0, leaseMs: 30_000 };

/** Independent of the module: field 22 via a greedy sed strip up to the last ") ". */
function shellStart(pid: number): string {
  return execFileSync('sh', ['-c', `sed -e 's/^.*) //' /proc/${pid}/stat | cut -d' ' -f20`]).toString().trim();
}

function shell(command: string): string {
  return execFileSync('sh', ['-c', command]).toString().trim();
}

const children: ChildProcess[] = [];

async function started(child: ChildProcess): Promise<number> {
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  if (child.pid === undefined) throw new Error('child has no pid');
  return child.pid;
}

async function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => child.once('exit', () => resolve()));
}

/** Children that lead their own process group: cleanup kills the whole group. */
const groupLeaders = new Set<ChildProcess>();

async function killAll(): Promise<void> {
  for (const child of children.splice(0)) {
    if (groupLeaders.delete(child) && child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited(child);
    }
  }
}

async function identityOf(pid: number): Promise<Identity> {
  const self = await selfIdentity();
  const info = await processStart(pid);
  if (info === null) throw new Error(`pid ${pid} vanished`);
  return { ...self, pid, start: info.start };
}

async function groupOf(pgid: number): Promise<ProcessGroup> {
  const owner = await identityOf(pgid);
  return { pgid, start: owner.start, boot_id: owner.boot_id, pid_ns: owner.pid_ns };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitFor(what: string, test: () => Promise<boolean>, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(20);
  }
}

/**
 * The first line a child prints. Listen before anything else is awaited:
 * Node resumes (and discards) an unread stdout once the child exits.
 */
function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes('\n')) resolve(text.slice(0, text.indexOf('\n')));
    });
    child.once('error', reject);
  });
}

/** A clock the test moves by hand; sleep advances it instantly. */
function manualClock(startMs = 0): Clock & { advance(ms: number): void } {
  let now = startMs;
  return {
    nowMs: () => now,
    sleep: async (ms) => {
      now += ms;
      await delay(1);
    },
    advance: (ms) => {
      now += ms;
    },
  };
}

function errnoError(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: injected`), { code });
}

// ---------------------------------------------------------------- parsing
const parsing = suite('parsing (ID-2, ID-5)');

parsing('field 22 is counted after the last ") " even when comm contains ") " and "("', () => {
  const fields = Array.from({ length: 50 }, (_, i) => String(i + 3));
  fields[0] = 'S';
  const text = `4242 (x) S 1 2 (y) ${fields.join(' ')}\n`;
  assert.equal(parseProcStat(text), { state: 'S', ppid: 4, pgrp: 5, start: '22' });
  assert.is(parseProcStat('garbage'), undefined);
});

parsing('macOS lstart and boottime formats', () => {
  assert.is(normalizeLstart('  Mon Nov  3 04:05:06 2025 \n'), 'lstart:Mon Nov 3 04:05:06 2025');
  assert.is(parseBoottime('{ sec = 1700000000, usec = 123456 } Tue Nov 14 22:13:20 2023\n'), 'boottime:1700000000.123456');
  assert.is(parseBoottime('nonsense'), undefined);
});

parsing('the macOS fallback path builds start, state and boot id from ps and sysctl', async () => {
  const exec: IdentityOptions['exec'] = async (file, args) => {
    if (file === 'sysctl') return { status: 0, stdout: '{ sec = 1700000000, usec = 5 } Tue Nov 14 22:13:20 2023\n' };
    if (args.includes(String(process.pid))) return { status: 0, stdout: 'Ss   Mon Nov  3 04:05:06 2025\n' };
    return { status: 1, stdout: '' };
  };
  const darwin: IdentityOptions = { platform: 'darwin', exec };
  assert.equal(await processStart(process.pid, darwin), { state: 'S', start: 'lstart:Mon Nov 3 04:05:06 2025' });
  const self = await selfIdentity(darwin);
  assert.is(self.boot_id, 'boottime:1700000000.5');
  assert.is(self.pid_ns, 'none');
  assert.is(self.start, 'lstart:Mon Nov 3 04:05:06 2025');
  const gone: IdentityOptions = {
    ...darwin,
    kill: () => {
      throw errnoError('ESRCH');
    },
  };
  assert.is(await processStart(99999, gone), null);
});

parsing.run();

// ---------------------------------------------------------------- selfIdentity
const self = suite('selfIdentity');
self.after(killAll);

self('matches /proc values computed independently by a shell', async () => {
  const me = await selfIdentity();
  assert.is(me.pid, process.pid);
  assert.is(me.start, shellStart(process.pid));
  assert.is(me.boot_id, shell('cat /proc/sys/kernel/random/boot_id'));
  assert.is(me.pid_ns, shell('readlink /proc/self/ns/pid'));
  assert.ok(/^pid:\[\d+\]$/.test(me.pid_ns));
  assert.is(me.host, shell('cat /proc/sys/kernel/hostname'));
  assert.is(me.uid, Number(shell('id -u')));
  assert.is(await selfIdentity(), me, 'cached');
});

self('processStart of a child matches the shell computation', async () => {
  const pid = await started(spawn('sleep', ['100']));
  const info = await processStart(pid);
  assert.is(info?.start, shellStart(pid));
  assert.ok(info !== null && 'RSD'.includes(info.state), `state ${info?.state}`);
});

self(`${HOST_OVERRIDE_ENV} makes a second process on this machine a foreign host`, async () => {
  const script = `import('./src/model/identity.ts').then(async (m) => process.stdout.write(JSON.stringify(await m.selfIdentity())))`;
  const output = execFileSync(process.execPath, ['--import', 'tsx', '-e', script], {
    env: { ...process.env, [HOST_OVERRIDE_ENV]: 'other-host/other-boot' },
    cwd: join(import.meta.dirname, '..', '..'),
  }).toString();
  const other = JSON.parse(output) as Identity;
  assert.is(other.host, 'other-host');
  assert.is(other.boot_id, 'other-boot');
  assert.is(other.pid_ns, (await selfIdentity()).pid_ns);
  assert.not.ok(await isLocal(other));
  // Its process is gone, but a foreign owner is judged by its lease alone.
  const verdict = await judgeOwner(other, { nowMs: 1000, lastRenewalMs: 0, leaseMs: 10_000 });
  assert.equal([verdict.verdict, verdict.basis], ['alive', 'lease']);
});

self('the override is honoured in-process and a malformed one is USAGE', async () => {
  const saved = process.env[HOST_OVERRIDE_ENV];
  try {
    process.env[HOST_OVERRIDE_ENV] = 'h1/b1';
    const overridden = await selfIdentity();
    assert.equal([overridden.host, overridden.boot_id], ['h1', 'b1']);
    process.env[HOST_OVERRIDE_ENV] = 'no-slash';
    await rejectsWith(selfIdentity(), 'USAGE');
  } finally {
    if (saved === undefined) delete process.env[HOST_OVERRIDE_ENV];
    else process.env[HOST_OVERRIDE_ENV] = saved;
  }
  assert.is.not((await selfIdentity()).boot_id, 'b1');
});

self.run();

// ---------------------------------------------------------------- judgeOwner
const judging = suite('judgeOwner');
judging.after(async () => {
  await killAll();
  await cleanupAll();
});

judging('a live child is alive', async () => {
  const pid = await started(spawn('sleep', ['100']));
  const verdict = await judgeOwner(await identityOf(pid), LEASE);
  assert.equal([verdict.verdict, verdict.basis], ['alive', 'process']);
});

judging('a killed and reaped child is dead', async () => {
  const child = spawn('sleep', ['100']);
  const owner = await identityOf(await started(child));
  child.kill('SIGKILL');
  await exited(child);
  const verdict = await judgeOwner(owner, LEASE);
  assert.equal([verdict.verdict, verdict.basis], ['dead', 'process']);
});

judging('a REALLY reused pid is dead (pid recycled through ns_last_pid)', async () => {
  for (let attempt = 1; attempt <= 20; attempt++) {
    const victim = spawn('sleep', ['100']);
    const owner = await identityOf(await started(victim));
    await delay(30); // the newcomer must start on a later clock tick
    victim.kill('SIGKILL');
    await exited(victim);
    // The write and the fork in one shell, microseconds apart. From here they were the pool's write and a
    // spawn some milliseconds later, and on a loaded machine (CI's other stream forking) another process
    // took the pid first in 20 of 20 tries.
    const shell = spawn('sh', ['-c', `echo ${owner.pid - 1} > /proc/sys/kernel/ns_last_pid && { sleep 100 & echo $!; wait; }`], { stdio: ['ignore', 'pipe', 'inherit'] });
    await started(shell);
    const pid = Number(await new Promise<string>((resolve) => {
      let out = '';
      shell.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
        out += chunk;
        if (out.includes('\n')) resolve(out.trim());
      });
      shell.once('exit', () => resolve(out.trim()));
    }));
    try {
      if (pid === owner.pid) {
        const verdict = await judgeOwner(owner, LEASE);
        assert.is(verdict.verdict, 'dead');
        assert.ok(/reuse/.test(verdict.reason), verdict.reason);
        assert.is.not((await processStart(pid))?.start, owner.start);
        return;
      }
    } finally {
      if (pid > 0) process.kill(pid, 'SIGKILL');
      await exited(shell);
    }
  }
  assert.unreachable('could not get the same pid back in 20 attempts');
});

judging('a comm with spaces and ")" parses correctly', async () => {
  const dir = await freshDir('ident');
  const nasty = join(dir, 'x) S 1 2 (y');
  await fsp.copyFile('/bin/sleep', nasty);
  await fsp.chmod(nasty, 0o755);
  const pid = await started(spawn(nasty, ['100']));
  assert.is(await fsp.readFile(`/proc/${pid}/comm`, 'utf8'), 'x) S 1 2 (y\n');
  const info = await processStart(pid);
  assert.is(info?.start, shellStart(pid));
  // Counting from the first ")" would have read a different field.
  const stat = await fsp.readFile(`/proc/${pid}/stat`, 'utf8');
  const naive = stat.slice(stat.indexOf(')') + 2).split(' ')[19];
  assert.is.not(naive, info?.start);
  const verdict = await judgeOwner(await identityOf(pid), LEASE);
  assert.is(verdict.verdict, 'alive');
});

judging('a foreign owner is alive until lease + guardian limit + skew and dead after (LEASE-3)', async () => {
  const owner: Identity = { ...(await selfIdentity()), boot_id: 'another-boot', host: 'elsewhere', pid: 1 };
  const lastRenewalMs = 1_000_000;
  const leaseMs = 3_000;
  assert.is(foreignLeaseGraceMs(leaseMs), leaseMs + GUARDIAN_LIMIT + LEASE_SKEW);
  // Past lease + skew but within the guardian limit: the dead owner's commands may still run (WORKER-2).
  const beforeGuardian = await judgeOwner(owner, { nowMs: lastRenewalMs + leaseMs + LEASE_SKEW + 1, lastRenewalMs, leaseMs });
  assert.equal([beforeGuardian.verdict, beforeGuardian.basis], ['alive', 'lease']);
  const edge = lastRenewalMs + leaseMs + GUARDIAN_LIMIT + LEASE_SKEW;
  const atEdge = await judgeOwner(owner, { nowMs: edge, lastRenewalMs, leaseMs });
  assert.equal([atEdge.verdict, atEdge.basis], ['alive', 'lease']);
  const after = await judgeOwner(owner, { nowMs: edge + 1, lastRenewalMs, leaseMs });
  assert.equal([after.verdict, after.basis], ['dead', 'lease']);
  // Another pid namespace on the same boot is foreign too.
  const otherNs = { ...(await selfIdentity()), pid_ns: 'pid:[1]' };
  assert.is((await judgeOwner(otherNs, { nowMs: edge + 1, lastRenewalMs, leaseMs })).basis, 'lease');
});

judging('a zombie owner is dead', async () => {
  // The background sleep becomes a zombie: its parent execs sleep and never waits.
  const parent = spawn('sh', ['-c', 'sleep 0.2 & echo $!; exec sleep 100'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const line = firstLine(parent);
  await started(parent);
  const pid = Number(await line);
  const owner = await identityOf(pid);
  await waitFor('zombie', async () => (await processStart(pid))?.state === 'Z');
  const verdict = await judgeOwner(owner, LEASE);
  assert.equal([verdict.verdict, verdict.basis], ['dead', 'process']);
  assert.ok(/zombie/.test(verdict.reason));
});

judging('unreadable /proc (EACCES, or hidepid hiding a live pid) is unknown, never dead', async () => {
  const pid = await started(spawn('sleep', ['100']));
  const owner = await identityOf(pid);
  const failing = (errno: string): IdentityOptions => ({
    fs: {
      ...fsp,
      readFile: (async (path: string, encoding: BufferEncoding) =>
        path === `/proc/${pid}/stat` ? Promise.reject(errnoError(errno)) : fsp.readFile(path, encoding)) as typeof fsp.readFile,
    },
  });
  for (const errno of ['EACCES', 'ENOENT']) {
    const verdict = await judgeOwner(owner, LEASE, failing(errno));
    assert.equal([verdict.verdict, verdict.basis], ['unknown', 'process'], errno);
  }
});

judging('a long-running judge calls a foreign lease expired only after lease + guardian limit + skew of unchanged monotonic time (LEASE-4)', () => {
  let mono = 0;
  const watch = new LeaseWatch({ nowMs: () => 0, sleep: async () => undefined, monotonicMs: () => mono });
  const leaseMs = 3_000;
  // The wall clock says alive throughout (a renewal stamped in the future): only the watch can expire it.
  const lease = { nowMs: 0, lastRenewalMs: 86_400_000, leaseMs };
  const byWall = { verdict: 'alive', basis: 'lease', reason: 'wall' } as const;
  assert.is(watch.judge('k', lease, byWall).reason, 'wall', 'first sight: LEASE-3 on the wall clock');
  mono = leaseMs + LEASE_SKEW + 1;
  assert.is(watch.judge('k', lease, byWall).verdict, 'alive', 'past lease + skew, within the guardian limit');
  mono = leaseMs + GUARDIAN_LIMIT + LEASE_SKEW;
  assert.is(watch.judge('k', lease, byWall).verdict, 'alive', 'at the edge');
  mono += 1;
  assert.is(watch.judge('k', lease, byWall).verdict, 'dead', 'past the edge');
});

judging('a foreign claim the wall clock shows expired is unknown, never dead, until the watch completes (LEASE-3)', () => {
  let mono = 0;
  const watch = new LeaseWatch({ nowMs: () => 0, sleep: async () => undefined, monotonicMs: () => mono });
  const leaseMs = 3_000;
  // A judge whose clock runs an hour ahead: by the wall the lease expired long ago.
  const lease = { nowMs: 3_600_000, lastRenewalMs: 0, leaseMs };
  const byWall = { verdict: 'dead', basis: 'lease', reason: 'wall' } as const;
  const first = watch.judge('k', lease, byWall);
  assert.is(first.verdict, 'unknown', 'first sight of an expired-looking claim');
  assert.is(first.watchRemainingMs, leaseMs + GUARDIAN_LIMIT + LEASE_SKEW + 1, 'a one-shot consumer knows how long to wait');
  mono = leaseMs + GUARDIAN_LIMIT + LEASE_SKEW;
  assert.is(watch.judge('k', lease, byWall).verdict, 'unknown', 'at the edge of the watch');
  mono += 1;
  assert.is(watch.judge('k', lease, byWall).verdict, 'dead', 'the watch completed');
});

judging('a judge whose clock runs ahead sees a live foreign owner renew and never breaks it (LEASE-3, LEASE-4)', () => {
  let mono = 0;
  const watch = new LeaseWatch({ nowMs: () => 0, sleep: async () => undefined, monotonicMs: () => mono });
  const leaseMs = 3_000;
  const byWall = { verdict: 'dead', basis: 'lease', reason: 'wall' } as const;
  let renewal = 0;
  for (let step = 0; step < 30; step++) {
    mono += 1_000;
    renewal += 1_000; // the owner renews every second; the judge's wall clock says an hour late
    const verdict = watch.judge('k', { nowMs: renewal + 3_600_000, lastRenewalMs: renewal, leaseMs }, byWall);
    assert.ok(verdict.verdict !== 'dead', `step ${step}: ${verdict.reason}`);
  }
});

judging('a retry is due after its delay on the monotonic clock even when the wall clock jumped back (RETRY-4)', () => {
  let mono = 0;
  const watch = new LeaseWatch({ nowMs: () => 0, sleep: async () => undefined, monotonicMs: () => mono });
  const end = { ended_ms: 1_000_000, retry_at_ms: 1_005_000 };
  // The wall clock jumped back an hour just after the end record was written.
  const now = 1_000_000 - 3_600_000;
  assert.is(watch.retryDue('k', end, now), false, 'first sight');
  mono = 4_999;
  assert.is(watch.retryDue('k', end, now), false, 'before the delay');
  mono = 5_000;
  assert.is(watch.retryDue('k', end, now), true, 'the delay passed on the monotonic clock');
  assert.is(watch.retryDue('other', end, 1_005_000), true, 'or by the wall clock');
});

judging('the wait for a retry is the shorter of its two bounds, so a drain after a jump back waits the delay, not the jump (RETRY-4)', () => {
  let mono = 0;
  const watch = new LeaseWatch({ nowMs: () => 0, sleep: async () => undefined, monotonicMs: () => mono });
  const end = { ended_ms: 1_000_000, retry_at_ms: 1_005_000 };
  const back = 1_000_000 - 3_600_000;
  assert.is(watch.retryDueInMs('k', end, back), 5_000, 'first sight: the whole delay, not retry_at_ms - now (an hour more)');
  mono = 3_000;
  assert.is(watch.retryDueInMs('k', end, back), 2_000, 'the rest of the delay on the monotonic clock');
  assert.is(watch.retryDueInMs('fresh', end, 1_004_000), 1_000, 'by the wall clock when that comes first');
  mono = 6_000;
  assert.is(watch.retryDueInMs('k', end, back), 0, 'due');
});

judging.run();

// ---------------------------------------------------------------- process groups
const groups = suite('groupState / signalGroup / stopGroup');
groups.after(killAll);

function detachedGroup(script: string): ChildProcess {
  const child = spawn('sh', ['-c', script], { detached: true, stdio: 'ignore' });
  groupLeaders.add(child);
  return child;
}

groups('a running group is stopped by stopGroup', async () => {
  const pgid = await started(detachedGroup('sleep 100 & sleep 100'));
  const group = await groupOf(pgid);
  assert.is(await groupState(group), 'running');
  const outcome = await withWatchdog(8000, stopGroup(group, { graceMs: 2000 }));
  assert.is(outcome, 'stopped');
  assert.is(await groupState(group), 'stopped');
});

groups('a leaderless group with a live member is still running, and gets stopped', async () => {
  // The leader lingers briefly so its start can be recorded, then exits.
  const leader = spawn('sh', ['-c', 'sleep 100 & echo $!; sleep 0.3'], { detached: true, stdio: ['ignore', 'pipe', 'ignore'] });
  groupLeaders.add(leader);
  const line = firstLine(leader);
  const pgid = await started(leader);
  const group = await groupOf(pgid);
  const member = Number(await line);
  await exited(leader);
  assert.is(await processStart(pgid), null, 'leader reaped');
  assert.ok(alive(member));
  assert.is(await groupState(group), 'running');
  assert.is(await withWatchdog(8000, stopGroup(group, { graceMs: 2000 })), 'stopped');
  await waitFor('member gone or zombie', async () => {
    const info = await processStart(member);
    return info === null || info.state === 'Z';
  });
});

groups('a group that ignores SIGTERM is killed after the grace period (injected clock)', async () => {
  const pgid = await started(detachedGroup("trap '' TERM; sleep 100 & sleep 100 & wait"));
  await delay(100); // let the trap be installed before TERM arrives
  const group = await groupOf(pgid);
  const clock = manualClock();
  assert.is(await withWatchdog(8000, stopGroup(group, { graceMs: 500, clock })), 'stopped');
  assert.ok(clock.nowMs() >= 500, 'waited the grace period on the injected clock');
});

groups('signalGroup refuses a group whose recorded start does not match', async () => {
  const pgid = await started(detachedGroup('sleep 100 & sleep 100'));
  const group = await groupOf(pgid);
  const impostor: ProcessGroup = { ...group, start: String(Number(group.start) - 1) };
  assert.is(await signalGroup(impostor, 'SIGKILL'), 'refused');
  await delay(50);
  assert.ok(alive(pgid), 'nothing was signalled');
  // The recorded leader start differs, so the RECORDED group is provably gone.
  assert.is(await groupState(impostor), 'stopped');
  assert.is(await signalGroup(group, 'SIGKILL'), 'signalled');
  await waitFor('group gone', async () => (await groupState(group)) === 'stopped');
  assert.is(await signalGroup(group, 'SIGKILL'), 'stopped');
});

groups('a foreign group is unknown, is never signalled, and cannot be proven stopped', async () => {
  const pgid = await started(detachedGroup('sleep 100'));
  const group: ProcessGroup = { ...(await groupOf(pgid)), boot_id: 'another-boot' };
  assert.is(await groupState(group), 'unknown');
  assert.is(await signalGroup(group, 'SIGKILL'), 'refused');
  assert.is(await stopGroup(group, { graceMs: 100 }), 'unproven');
  assert.ok(alive(pgid));
});

groups('pgid 0 and 1 are refused outright (kill(-0)/kill(-1) would hit us or everyone)', async () => {
  const self = await selfIdentity();
  for (const pgid of [0, 1, -5, 1.5]) {
    const group: ProcessGroup = { pgid, start: '1', boot_id: self.boot_id, pid_ns: self.pid_ns };
    await rejectsWith(groupState(group), 'USAGE');
    await rejectsWith(signalGroup(group, 'SIGTERM'), 'USAGE');
  }
  // pid 1 itself is a legitimate owner pid (a container's init).
  assert.ok((await processStart(1)) !== null);
  await rejectsWith(processStart(0), 'USAGE');
});

groups.run();
