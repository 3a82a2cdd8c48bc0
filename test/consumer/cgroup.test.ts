/**
 * `fsjob work --cgroup DIR` (EXEC-16, issue 19 point 12), through the real
 * CLI and real processes: a job's command starts a daemon that leaves the
 * job's process group (setsid). Without --cgroup the daemon outlives the
 * attempt and the receipt says a process outside the group kept an output
 * open; with it, the daemon is killed when the attempt ends (the leader
 * exited, or a timeout stopped it), the receipt and `fsjob status ID` count
 * it, and the attempt's cgroup is removed. When the worker itself is
 * SIGKILLed, its guardian (WORKER-2) kills what is left in the cgroup too.
 *
 * The test's cgroup is a fresh directory under the cgroup2 mount
 * (/sys/fs/cgroup, or /sys/fs/cgroup/unified in hybrid mode), removed after.
 * Where there is no cgroup2 mount or no directory can be made in it (not
 * root, no delegation), the cgroup tests are skipped with a printed reason;
 * the refusals of a bad DIR run everywhere.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readFileSync, readdirSync, rmdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { initQueue, type Queue } from '../../src/model/queue.ts';
import type { ReceiptRecord } from '../../src/records/codec.ts';
import { NOBODY, cleanupAll, freshDir } from '../support/helpers.ts';
import { waitFor } from '../support/consumer.ts';
import { FSJOB_ARGV, runFsjob, startFsjob, CLI_WATCHDOG_MS } from '../support/cli.ts';
import { isDead } from '../support/battery.ts';
import { AttemptCgroup, openCgroupBase } from '../../src/consumer/cgroup.ts';
import { systemClock } from '../../src/base/clock.ts';
import { cgroup2Mount } from '../../bench/lib/cgroup-cpu.ts';

/** A fresh cgroup for this test file, or why there is none. */
function makeTestCgroup(): { dir: string } | { missing: string } {
  const mount = cgroup2Mount();
  if (mount === undefined) return { missing: 'no cgroup2 filesystem is mounted (cgroup v1 only, or no /proc)' };
  const dir = join(mount, `fsjob-test-${process.pid}`);
  try {
    mkdirSync(dir);
  } catch (error) {
    return { missing: `cannot create a cgroup under ${mount} (${(error as NodeJS.ErrnoException).code ?? String(error)}): not root and no delegated directory` };
  }
  return { dir };
}

const made = makeTestCgroup();
const cgroupDir = 'dir' in made ? made.dir : undefined;
if ('missing' in made) console.log(`consumer/cgroup: the --cgroup tests are skipped: ${made.missing}`);

/** Removes the test's cgroup: every attempt cgroup left in it (there should be none), then itself. */
function removeTestCgroup(): void {
  if (cgroupDir === undefined || !existsSync(cgroupDir)) return;
  for (const name of readdirSync(cgroupDir)) if (name.startsWith('fsjob-')) rmdirSync(join(cgroupDir, name));
  rmdirSync(cgroupDir);
}

const attemptCgroups = (): string[] => (cgroupDir === undefined ? [] : readdirSync(cgroupDir).filter((name) => name.startsWith('fsjob-')));

interface Setup {
  dir: string;
  queue: Queue;
  pidFile: string;
  enqueue(script: string, ...flags: string[]): Promise<string>;
}

async function setup(label: string): Promise<Setup> {
  const dir = await freshDir(`fsjob-cgroup-${label}`);
  const queue = await initQueue(join(dir, 'q'));
  const pidFile = join(dir, 'daemon.pid');
  return {
    dir,
    queue,
    pidFile,
    async enqueue(script, ...flags) {
      const run = await runFsjob(['enqueue', '-q', queue.root, ...flags, '--', 'sh', '-c', script], { cwd: dir });
      assert.is(run.status, 0, run.stderr);
      return run.stdout.trim();
    },
  };
}

/** The daemon: a sleep that leaves the job's process group and session, its pid written where the test reads it. */
// The daemon writes its pid after its setsid(), and the job waits for that:
// a job that ended before its child left the group would have it stopped as a
// member of the group, not counted as outside it (a race under load).
const daemon = (pidFile: string): string =>
  `setsid sh -c 'echo $$ > "$1.tmp" && mv "$1.tmp" "$1" && exec sleep 300' sh '${pidFile}' & while [ ! -s '${pidFile}' ]; do sleep 0.01; done`;

const receiptOf = async (queue: Queue, id: string): Promise<ReceiptRecord> => JSON.parse(await readFile(queue.paths.jobFile(id, 'receipt.json'), 'utf8')) as ReceiptRecord;

async function daemonPid(pidFile: string): Promise<number> {
  const pid = Number(readFileSync(pidFile, 'utf8').trim());
  assert.ok(Number.isInteger(pid) && pid > 1, `the job wrote its daemon's pid: ${pid}`);
  return pid;
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // gone
  }
}

const cg = suite('fsjob work --cgroup: a process that left the group is stopped with its attempt (EXEC-16)');
cg.after(async () => {
  removeTestCgroup();
  await cleanupAll();
});

cg('without --cgroup a setsid daemon outlives the attempt and the receipt says so; with it the daemon is killed, counted in the receipt and status, and the cgroup removed', async () => {
  if (cgroupDir === undefined) return;
  const plain = await setup('plain');
  const plainId = await plain.enqueue(`${daemon(plain.pidFile)}; echo started`);
  const without = await runFsjob(['work', '-q', plain.queue.root, '--drain'], { cwd: plain.dir });
  const escaped = await daemonPid(plain.pidFile);
  try {
    assert.is(without.status, 0, without.stderr);
    const receipt = await receiptOf(plain.queue, plainId);
    assert.ok(!(await isDead(escaped)), `without --cgroup the daemon (pid ${escaped}) survives: fsjob stops only the group`);
    assert.match(receipt.message ?? '', /outside the command's group kept an output open/, 'and the receipt says a process outside the group was left');
  } finally {
    killQuietly(escaped);
  }

  const boxed = await setup('boxed');
  const id = await boxed.enqueue(`${daemon(boxed.pidFile)}; echo started`);
  const withCgroup = await runFsjob(['work', '-q', boxed.queue.root, '--drain', '--cgroup', cgroupDir], { cwd: boxed.dir });
  const stopped = await daemonPid(boxed.pidFile);
  try {
    assert.is(withCgroup.status, 0, withCgroup.stderr);
    const receipt = await receiptOf(boxed.queue, id);
    assert.is(receipt.outcome, 'succeeded');
    assert.ok(await isDead(stopped), `with --cgroup the daemon (pid ${stopped}) is gone once the receipt is there; message: ${String(receipt.message)}`);
    // Not anchored: whether the daemon still held the output pipe when the
    // group was found stopped (EXEC-12's note) depends on scheduling; the
    // cgroup's count is what this test is about.
    assert.match(receipt.message ?? '', /(^|; )1 process outside the command's group \(setsid, a daemon\) stopped through cgroup \S+fsjob-\d+-[0-9a-f]+-1 \(EXEC-16\)(;|$)/, String(receipt.message));
    const status = await runFsjob(['status', '-q', boxed.queue.root, id], { cwd: boxed.dir });
    assert.match(status.stdout, /message +(.*; )?1 process outside the command's group \(setsid, a daemon\) stopped through cgroup/, status.stdout);
    assert.equal(attemptCgroups(), [], "the attempt's cgroup was removed");
    assert.is((await readFile(join(boxed.queue.paths.jobFile(id, 'stdout.1')), 'utf8')), 'started\n');
  } finally {
    killQuietly(stopped);
  }
});

cg('a timeout stops the group and then the cgroup: the receipt keeps its timed_out message and adds the count', async () => {
  if (cgroupDir === undefined) return;
  const s = await setup('timeout');
  const id = await s.enqueue(`${daemon(s.pidFile)}; exec sleep 300`, '--timeout', '1s');
  const run = await runFsjob(['work', '-q', s.queue.root, '--drain', '--cgroup', cgroupDir], { cwd: s.dir });
  const pid = await daemonPid(s.pidFile);
  try {
    assert.is(run.status, 0, run.stderr);
    const receipt = await receiptOf(s.queue, id);
    assert.is(receipt.outcome, 'timed_out');
    assert.ok(await isDead(pid), `the daemon (pid ${pid}) is gone`);
    assert.match(receipt.message ?? '', /^ran longer than timeout_ms 1000 \(EXEC-8\); (.*; )?1 process outside the command's group/, String(receipt.message));
    assert.equal(attemptCgroups(), []);
  } finally {
    killQuietly(pid);
  }
});

cg("a SIGKILLed worker's guardian (WORKER-2) kills what is left in the attempt's cgroup and removes it", async () => {
  if (cgroupDir === undefined) return;
  const s = await setup('guardian');
  const id = await s.enqueue(`${daemon(s.pidFile)}; exec sleep 300`);
  const worker = startFsjob(['work', '-q', s.queue.root, '--cgroup', cgroupDir], { cwd: s.dir });
  let pid = 0;
  try {
    await worker.waitForStderr(`claimed ${id}`);
    // The exec record is published before the release; the pid file appears once the command ran.
    await waitFor('the daemon to write its pid', () => existsSync(s.pidFile) && readFileSync(s.pidFile, 'utf8').trim() !== '', CLI_WATCHDOG_MS);
    pid = await daemonPid(s.pidFile);
    assert.equal(attemptCgroups(), [`fsjob-${id}-1`], 'the attempt runs in its own cgroup');
    worker.child.kill('SIGKILL');
    await worker.result;
    // GUARDIAN_LIMIT is 10 s for the group; the cgroup follows. The wait is a watchdog, not a timing assertion.
    await waitFor("the guardian to stop the daemon and remove the attempt's cgroup", async () => (await isDead(pid)) && attemptCgroups().length === 0, CLI_WATCHDOG_MS);
    assert.ok(await isDead(pid), `the guardian killed the daemon (pid ${pid})`);
    assert.equal(attemptCgroups(), [], 'and removed the cgroup');
  } finally {
    worker.child.kill('SIGKILL');
    if (pid > 0) killQuietly(pid);
  }
});

cg('without cgroup.kill (kernels before 5.14) the stop kills pid by pid until the cgroup is empty, counts what was outside the group, and removes it', async () => {
  if (cgroupDir === undefined) return;
  const box = new AttemptCgroup(await openCgroupBase(cgroupDir), '0000000000000000000-0000000000000000', 7, { killFile: false });
  // A gate of our own: it waits for a line before it forks, so both processes start inside the cgroup.
  const gate = spawn('/bin/sh', ['-c', 'read go; setsid sleep 300 & echo "$!"; exec sleep 300'], { detached: true, stdio: ['pipe', 'pipe', 'ignore'] });
  const pgid = gate.pid as number;
  let outsider = 0;
  try {
    await box.adopt(pgid);
    let out = '';
    gate.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    gate.stdin.end('go\n');
    outsider = Number(await waitFor("the gate to start its daemon", () => (out.includes('\n') ? out.trim() : false), CLI_WATCHDOG_MS));
    await waitFor('both processes in the cgroup', async () => (await box.pids()).length === 2, CLI_WATCHDOG_MS);
    const stop = await box.stop(pgid, systemClock);
    assert.equal({ outside: stop.outside, left: stop.left }, { outside: 1, left: 0 }, 'the daemon counted, the group leader not');
    assert.ok(await isDead(outsider), `the daemon (pid ${outsider}) is gone`);
    assert.ok(await isDead(pgid), 'and the group leader');
    assert.not.ok(existsSync(box.path), 'the cgroup is removed');
  } finally {
    killQuietly(pgid);
    if (outsider > 0) killQuietly(outsider);
  }
});

cg.run();

const auto = suite('--cgroup auto, the default: the worker\'s own cgroup when it is delegated to it (issue 28 point 5)');
auto.after(cleanupAll);

auto('as root no cgroup is taken automatically, and the start-up line says why', async () => {
  if (process.getuid?.() !== 0) return;
  const s = await setup('auto-root');
  const run = await runFsjob(['work', '-q', s.queue.root, '--drain'], { cwd: s.dir });
  assert.is(run.status, 0, run.stderr);
  assert.match(run.stderr, /no cgroup containment \(--cgroup auto: running as root/, run.stderr);
});

auto('a non-root worker that owns its cgroup contains its jobs by default: a setsid daemon is killed with its attempt, and counted', async () => {
  if (process.getuid?.() !== 0) return; // needs root to make the user's delegated cgroup
  const parent = makeTestCgroup(); // the suite above removed its own
  if (!('dir' in parent)) return;
  // What systemd's Delegate=yes does for a user's unit: a cgroup the user owns, with the worker in it.
  const own = join(parent.dir, 'delegated');
  mkdirSync(own);
  const dir = await freshDir('fsjob-cgroup-auto-user');
  for (const path of [own, join(own, 'cgroup.procs'), join(own, 'cgroup.threads'), dir]) chownSync(path, NOBODY, NOBODY);
  const pidFile = join(dir, 'daemon.pid');
  // The shell joins the cgroup as root, then becomes the worker's user and runs fsjob there.
  const asUser = (...args: string[]) =>
    spawnSync('sh', ['-c', `echo $$ > '${join(own, 'cgroup.procs')}' && exec setpriv --reuid=${NOBODY} --regid=${NOBODY} --clear-groups -- "$@"`, 'sh', ...FSJOB_ARGV, ...args], {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, HOME: dir },
      timeout: CLI_WATCHDOG_MS,
    });
  let daemonAt = 0;
  try {
    const q = join(dir, 'q');
    assert.is(asUser('init', '-q', q).status, 0);
    const id = asUser('enqueue', '-q', q, '--', 'sh', '-c', `${daemon(pidFile)}; echo started`).stdout.trim();
    const work = asUser('work', '-q', q, '--drain');
    assert.is(work.status, 0, work.stderr);
    assert.match(work.stderr, new RegExp(`commands contained in cgroup ${own}`), work.stderr);
    daemonAt = await daemonPid(pidFile);
    const receipt = JSON.parse(readFileSync(join(q, 'jobs', id, 'receipt.json'), 'utf8')) as ReceiptRecord;
    assert.ok(await isDead(daemonAt), `the daemon (pid ${daemonAt}) is gone with its attempt; message: ${String(receipt.message)}`);
    assert.match(receipt.message ?? '', /1 process outside the command's group \(setsid, a daemon\) stopped through cgroup/, String(receipt.message));
  } finally {
    if (daemonAt > 0) killQuietly(daemonAt);
    // The worker's spawner and guardian leave the cgroup as they exit, a moment after the worker.
    await waitFor('the delegated cgroup to empty', () => !existsSync(own) || readFileSync(join(own, 'cgroup.procs'), 'utf8').trim() === '', 10_000).catch(() => undefined);
    for (const name of existsSync(own) ? readdirSync(own) : []) if (name.startsWith('fsjob-')) rmdirSync(join(own, name));
    if (existsSync(own)) rmdirSync(own);
    rmdirSync(parent.dir);
  }
});

auto.run();

const refusals = suite('fsjob work --cgroup refuses a directory it cannot use, before anything runs');
refusals.after(cleanupAll);

refusals('a directory that is not on cgroup2, and one that does not exist: exit 2, naming the directory and why; the job is not claimed', async () => {
  const s = await setup('refused');
  const id = await s.enqueue('echo never');
  const notCgroup = await runFsjob(['work', '-q', s.queue.root, '--drain', '--cgroup', s.dir], { cwd: s.dir });
  assert.is(notCgroup.status, 2, notCgroup.stderr);
  assert.match(notCgroup.stderr, new RegExp(`--cgroup ${s.dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: not on a cgroup v2 filesystem`));
  const absent = await runFsjob(['work', '-q', s.queue.root, '--drain', '--cgroup', join(s.dir, 'none')], { cwd: s.dir });
  assert.is(absent.status, 2, absent.stderr);
  assert.match(absent.stderr, /none: does not exist/);
  assert.not.ok(existsSync(s.queue.paths.jobFile(id, 'claim.1.json')), 'nothing was claimed');
});

refusals.run();
