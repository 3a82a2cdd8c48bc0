/**
 * Issue 19's points 1, 2, 6, 9, 10 (SIGHUP), 11 and 12, and issue 28's points
 * 1 (bytes that are not UTF-8), 2 (a judge whose clock goes back), 3 (too few
 * descriptors), 4 (a hard-linked receipt; receipt times after a clock jump)
 * and 5 (containment by default), through the real CLI only: every job
 * is enqueued, run, recovered and read back by `fsjob` processes (the CLI
 * the support starts: this checkout's, or FSJOB_TEST_CLI's), and every
 * check reads the queue's files or the job's own marks. Nothing is written
 * through this checkout's library, so the same cases run against an older
 * fsjob (protocol 1.0 records, older flags: only options both have are used)
 * and show which of the holes it had: `npm run battery:before-after -- REV`
 * (tools/battery/before-after.ts) runs them against REV and against this
 * checkout; results of one run are in
 * bench/results/2026-12-01-hostile-before-after.md.
 *
 * Opt-in (a .battery.ts file: not part of npm test), about three minutes:
 * the fencing cases wait out lease + GUARDIAN_LIMIT + LEASE_SKEW (3 + 10 +
 * 5 s) three times. Another host is a worker with FSJOB_HOST_OVERRIDE (it
 * judges and is judged by leases only, ID-7); a wrong wall clock is
 * test/support/clock-shift.mjs imported into the fsjob process.
 *
 * FSJOB_BEFORE_AFTER_LOG, when set, gets one JSON line per case (name, ok,
 * the failure's first line): the runner's table. FSJOB_BEFORE_AFTER_ONLY
 * (the runner's --only) runs only the cases whose names match it.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { appendFileSync, chmodSync, chownSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { GUARDIAN_LIMIT, LEASE_SKEW } from '../../src/base/constants.ts';
import { batteryDir, isDead, removeBatteryDirs, runFsjob, startFsjob, type FsjobProcess } from '../support/battery.ts';
import { delay, waitFor } from '../support/consumer.ts';
import { FSJOB_ARGV } from '../support/cli.ts';
import { spawnSync } from 'node:child_process';

/** Scheduling tolerance on a loaded 2-core machine, added to every bound the spec states. */
const TOLERANCE_MS = 5000;
const LEASE_S = 3;
/** LEASE-3: how long a foreign judge watches an unchanged renewal before it may break a claim. */
const WATCH_MS = LEASE_S * 1000 + GUARDIAN_LIMIT + LEASE_SKEW;
const WAIT_MS = 90_000;
const HOUR = 3_600_000;
const hostEnv = (name: string): NodeJS.ProcessEnv => ({ FSJOB_HOST_OVERRIDE: `${name}/boot-${name}` });
const CLOCK_SHIFT = pathToFileURL(join(import.meta.dirname, '..', 'support', 'clock-shift.mjs')).href;

/** The environment that gives an fsjob process a wrong wall clock (clock-shift.mjs). */
function clockEnv(settings: Record<string, string>): NodeJS.ProcessEnv {
  const options = [process.env['NODE_OPTIONS'] ?? '', `--import=${CLOCK_SHIFT}`].filter((o) => o !== '').join(' ');
  return { NODE_OPTIONS: options, ...settings };
}

const LOG = process.env['FSJOB_BEFORE_AFTER_LOG'];
/** FSJOB_BEFORE_AFTER_ONLY: a pattern; cases whose names it does not match are skipped (uvu lists them as skipped). */
const ONLY = process.env['FSJOB_BEFORE_AFTER_ONLY'];

/** A case whose result also goes to FSJOB_BEFORE_AFTER_LOG. */
function point(s: ReturnType<typeof suite>, name: string, body: () => Promise<void>): void {
  if (ONLY !== undefined && ONLY !== '' && !new RegExp(ONLY).test(name)) return s.skip(name, () => undefined);
  s(name, async () => {
    const began = Date.now();
    try {
      await body();
      if (LOG !== undefined) appendFileSync(LOG, `${JSON.stringify({ name, ok: true, ms: Date.now() - began })}\n`);
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      if (LOG !== undefined) appendFileSync(LOG, `${JSON.stringify({ name, ok: false, ms: Date.now() - began, why: message.split('\n')[0]?.slice(0, 600) })}\n`);
      throw e;
    }
  });
}

interface Place {
  dir: string;
  q: string;
  job: (id: string, name: string) => string;
}

async function place(label: string): Promise<Place> {
  const dir = await batteryDir(label);
  const q = join(dir, 'q');
  const init = await runFsjob(['init', '--queue', q]);
  assert.is(init.code, 0, `fsjob init: ${init.stderr}`);
  return { dir, q, job: (id, name) => join(q, 'jobs', id, name) };
}

async function enqueue(p: Place, options: string[], argv: string[]): Promise<string> {
  const run = await runFsjob(['enqueue', '--queue', p.q, '--cwd', p.dir, ...options, '--', ...argv]);
  assert.is(run.code, 0, `fsjob enqueue: ${run.stderr}`);
  const id = run.stdout.trim().split('\n').at(-1) ?? '';
  assert.ok(id !== '', 'enqueue printed an id');
  return id;
}

function readJson<T = Record<string, unknown>>(file: string): T | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

const receiptOf = (p: Place, id: string): Record<string, unknown> | undefined => readJson(p.job(id, 'receipt.json'));
const waitReceipt = (p: Place, id: string, what = 'the receipt', ms = WAIT_MS): Promise<Record<string, unknown>> => waitFor(what, () => receiptOf(p, id), ms);

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // gone
  }
}

/** Stops what a case started: CONT first (a stopped process ignores TERM), then TERM, then KILL. */
async function stopAll(workers: FsjobProcess[], groups: number[]): Promise<void> {
  for (const w of workers) signal(w.pid, 'SIGCONT');
  for (const g of groups) signal(-g, 'SIGCONT');
  for (const w of workers) signal(w.pid, 'SIGTERM');
  await Promise.race([Promise.all(workers.map((w) => w.exited)), delay(20_000)]);
  for (const w of workers) signal(w.pid, 'SIGKILL');
  for (const g of groups) signal(-g, 'SIGKILL');
  await Promise.all(workers.map((w) => w.exited));
}

const fsjobWork = (p: Place, name: string, more: string[] = []): FsjobProcess => startFsjob(['work', '--queue', p.q, '--lease', String(LEASE_S), ...more], hostEnv(name));

// ---------------------------------------------------------------------------
// Point 1: a paused owner is fenced (LEASE-2, LEASE-5, LEASE-3, I2).

interface Tick {
  attempt: number;
  ms: number;
}

/**
 * The fencing job: it logs its start, "overlap" when the previous
 * attempt's process is still there (running or stopped, not a zombie), then
 * a tick every 200 ms until the gate exists. max_attempts 2, so a broken
 * claim is run again and two executions at once show in the ticks.
 */
async function fencedJob(p: Place): Promise<{ id: string; ticks: string; gate: string }> {
  const ticks = join(p.dir, 'ticks');
  const gate = join(p.dir, 'gate');
  const pidFile = join(p.dir, 'pid');
  const script = [
    `if [ -s "${pidFile}" ]; then s=$(cut -d' ' -f3 /proc/$(cat "${pidFile}")/stat 2>/dev/null); case "$s" in ''|Z|X) ;; *) echo "overlap $FSJOB_ATTEMPT $s" >> "${ticks}";; esac; fi`,
    `echo $$ > "${pidFile}"`,
    `echo "start $FSJOB_ATTEMPT" >> "${ticks}"`,
    `while [ ! -e "${gate}" ]; do echo "tick $FSJOB_ATTEMPT $(date +%s%3N)" >> "${ticks}"; sleep 0.2; done`,
  ].join('; ');
  const id = await enqueue(p, ['--max-attempts', '2', '--kill-grace', '1s'], ['sh', '-c', script]);
  return { id, ticks, gate };
}

function ticksOf(file: string): { ticks: Tick[]; overlaps: string[]; starts: number[] } {
  const lines = existsSync(file) ? readFileSync(file, 'utf8').split('\n') : [];
  const ticks = lines.filter((l) => l.startsWith('tick ')).map((l) => ({ attempt: Number(l.split(' ')[1]), ms: Number(l.split(' ')[2]) }));
  return { ticks, overlaps: lines.filter((l) => l.startsWith('overlap ')), starts: lines.filter((l) => l.startsWith('start ')).map((l) => Number(l.slice(6))) };
}

/** Two executions at once, from the job's own marks: attempt 1 ticking after attempt 2 began, or still there when it began. */
function concurrency(file: string): string | undefined {
  const { ticks, overlaps } = ticksOf(file);
  const secondBegan = ticks.find((t) => t.attempt === 2)?.ms;
  const firstLast = ticks.filter((t) => t.attempt === 1).at(-1)?.ms;
  if (overlaps.length > 0) return `attempt 2 started while attempt 1's process was still there (${overlaps.join('; ')})`;
  if (secondBegan !== undefined && firstLast !== undefined && firstLast >= secondBegan) return `attempt 1 ticked at ${firstLast}, ${firstLast - secondBegan} ms after attempt 2 began at ${secondBegan}`;
  return undefined;
}

/** Pids whose parent is `ppid`, but not in process group `pgid` (the worker's guardian, not its command). */
function guardianOf(ppid: number, commandGroup: number): number | undefined {
  for (const name of readdirSyncSafe('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readFileSafe(`/proc/${name}/stat`);
    if (stat === undefined) continue;
    const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
    if (Number(fields[1]) === ppid && Number(fields[2]) !== commandGroup && fields[0] !== 'Z') return Number(name);
  }
  return undefined;
}

function readdirSyncSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
function readFileSafe(file: string): string | undefined {
  try {
    return readFileSync(file, 'latin1');
  } catch {
    return undefined;
  }
}

type Paused = 'worker' | 'guardian' | 'command';

/**
 * Host A runs the fencing job; the case stops one of A's processes; host B
 * serves the queue meanwhile, for WATCH_MS + TOLERANCE_MS past A's stop (or
 * until B has run attempt 2). Then everything resumes, the gate opens, and
 * the job must have ended without two executions at once.
 */
async function pausedOwner(paused: Paused): Promise<void> {
  const p = await place(`paused-${paused}`);
  const job = await fencedJob(p);
  const a = fsjobWork(p, 'host-a');
  const workers = [a];
  const groups: number[] = [];
  try {
    const exec = await waitFor('exec.1.json', () => readJson<{ group?: { pgid: number } }>(p.job(job.id, 'exec.1.json')), WAIT_MS);
    const pgid = exec.group?.pgid;
    assert.ok(typeof pgid === 'number', `exec.1.json names the command's group: ${JSON.stringify(exec)}`);
    groups.push(pgid);
    await waitFor('attempt 1 to tick', () => ticksOf(job.ticks).ticks.length >= 3, WAIT_MS);
    const target = paused === 'worker' ? a.pid : paused === 'guardian' ? guardianOf(a.pid, pgid) : -pgid;
    assert.ok(target !== undefined, `found the worker's guardian (a child of ${a.pid} outside group ${pgid})`);
    signal(target, 'SIGSTOP');
    const stoppedAt = Date.now();
    const b = fsjobWork(p, 'host-b');
    workers.push(b);
    // B judges by lease only. A stopped worker's claim lapses: hold until B has run attempt 2
    // for a while (LEASE-3: after its watch). A running worker renews: hold past B's watch.
    const holdMs = paused === 'worker' ? WAIT_MS : WATCH_MS + TOLERANCE_MS + 5000;
    while (Date.now() - stoppedAt < holdMs && ticksOf(job.ticks).ticks.filter((t) => t.attempt === 2).length < 10) await delay(200);
    const rerun = ticksOf(job.ticks).ticks.some((t) => t.attempt === 2);
    const exec2 = readJson<{ group?: { pgid: number } }>(p.job(job.id, 'exec.2.json'));
    if (exec2?.group?.pgid !== undefined) groups.push(exec2.group.pgid);
    signal(target, 'SIGCONT');
    await delay(1500); // a resumed attempt 1 ticks again if it was never stopped
    const found = concurrency(job.ticks);
    writeFileSync(job.gate, '');
    const receipt = await waitReceipt(p, job.id);
    const evidence = `${found ?? 'no overlap'}; starts ${JSON.stringify(ticksOf(job.ticks).starts)}; receipt gen ${String(receipt['gen'])} ${String(receipt['outcome'])} (${String(receipt['reason'])}); claim.2.json ${existsSync(p.job(job.id, 'claim.2.json')) ? 'exists' : 'absent'}`;
    assert.is(found, undefined, `two executions at once with the ${paused} stopped (I2, LEASE-2): ${evidence}`);
    if (paused === 'worker') assert.ok(rerun, `host B never ran the job of the stopped owner within ${WAIT_MS} ms (LEASE-3: it may after its watch of ${WATCH_MS} ms): ${evidence}`);
  } finally {
    await stopAll(workers, groups);
  }
}

const fencing = suite('point 1: a stopped owner, guardian or command group never gives two executions at once');
fencing.after(removeBatteryDirs);
point(fencing, 'point 1a: a SIGSTOPped worker past lease + GUARDIAN_LIMIT + LEASE_SKEW: its guardian stops its command before another host runs the job again (LEASE-5, LEASE-2)', () => pausedOwner('worker'));
point(fencing, "point 1b: a SIGSTOPped guardian under a running worker: the renewing claim is not broken, one execution at a time (LEASE-3)", () => pausedOwner('guardian'));
point(fencing, 'point 1c: a SIGSTOPped command group under a running worker: the renewing claim is not broken, one execution at a time (LEASE-3)', () => pausedOwner('command'));
fencing.run();

// ---------------------------------------------------------------------------
// Point 2: the allowlist judges the program that runs (EXEC-9, EXEC-15).

/** Two directories that both hold a `tool`: the worker's trusted one and the job's evil one; each writes its name to `marks`. */
function tools(p: Place): { trusted: string; evil: string; marks: string } {
  const marks = join(p.dir, 'marks');
  const trusted = join(p.dir, 'trusted');
  const evil = join(p.dir, 'evil');
  for (const [dir, name] of [[trusted, 'trusted'], [evil, 'evil']] as const) {
    mkdirSync(dir);
    writeFileSync(join(dir, 'tool'), `#!/bin/sh\necho "${name} $1" >> "${marks}"\n`);
    chmodSync(join(dir, 'tool'), 0o755);
  }
  writeFileSync(join(evil, 'rc'), `echo "evil bash_env" >> "${marks}"\n`);
  return { trusted, evil, marks };
}

const marksOf = (file: string): string[] => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter((l) => l !== '') : []);

const allow = suite('point 2: --allow is not bypassed by the job\'s own environment');
allow.after(removeBatteryDirs);

point(allow, "point 2a: --allow tool with a job whose env sets PATH to a directory with its own tool: the job's tool never runs (EXEC-15)", async () => {
  const p = await place('allow-path');
  const t = tools(p);
  const id = await enqueue(p, ['--env', `PATH=${t.evil}:/usr/bin:/bin`], ['tool', 'from-job']);
  const run = await runFsjob(['work', '--queue', p.q, '--drain', '--allow', 'tool'], { PATH: `${t.trusted}:/usr/bin:/bin` });
  assert.is(run.code, 0, run.stderr);
  const receipt = receiptOf(p, id);
  const marks = marksOf(t.marks);
  assert.not.ok(marks.includes('evil from-job'), `the job's PATH chose the program an allowed name runs: marks ${JSON.stringify(marks)}, receipt ${String(receipt?.['outcome'])} (${String(receipt?.['reason'])})`);
  assert.ok(marks.includes('trusted from-job') || receipt?.['reason'] === 'not_allowed', `the worker's own tool ran, or the job was refused: marks ${JSON.stringify(marks)}, receipt ${JSON.stringify(receipt)}`);
});

point(allow, 'point 2b: --allow with a job whose env sets LD_PRELOAD or BASH_ENV: rejected not_allowed, never run (EXEC-15)', async () => {
  const p = await place('allow-loader');
  const t = tools(p);
  const path = `${t.trusted}:/usr/bin:/bin`;
  const preload = await enqueue(p, ['--env', `PATH=${path}`, '--env', `LD_PRELOAD=${join(t.evil, 'evil.so')}`], ['tool', 'preloaded']);
  const bashEnv = await enqueue(p, ['--env', `PATH=${path}`, '--env', `BASH_ENV=${join(t.evil, 'rc')}`], ['bash', '-c', 'tool bash']);
  const run = await runFsjob(['work', '--queue', p.q, '--drain', '--allow', 'tool', '--allow', 'bash'], { PATH: path });
  assert.is(run.code, 0, run.stderr);
  const marks = marksOf(t.marks);
  const outcomes = [preload, bashEnv].map((id) => `${String(receiptOf(p, id)?.['outcome'])}/${String(receiptOf(p, id)?.['reason'])}`);
  const evidence = `receipts ${outcomes.join(', ')}; marks ${JSON.stringify(marks)}`;
  assert.equal(outcomes, ['rejected/not_allowed', 'rejected/not_allowed'], `loader and shell start-up variables under a policy: ${evidence}`);
  assert.equal(marks, [], `nothing ran: ${evidence}`);
});
allow.run();

// ---------------------------------------------------------------------------
// Point 9: clocks (LEASE-3, LEASE-4, RETRY-4).

const clocks = suite('point 9: wrong and jumping wall clocks');
clocks.after(removeBatteryDirs);

point(clocks, "point 9a: a one-shot fsjob recover whose clock is 1 h ahead leaves a live, renewing foreign claim alone (LEASE-3)", async () => {
  const p = await place('clock-recover');
  const gate = join(p.dir, 'gate');
  const id = await enqueue(p, [], ['sh', '-c', `while [ ! -e "${gate}" ]; do sleep 0.1; done`]);
  const owner = fsjobWork(p, 'host-a');
  const groups: number[] = [];
  try {
    const exec = await waitFor('exec.1.json', () => readJson<{ group?: { pgid: number } }>(p.job(id, 'exec.1.json')), WAIT_MS);
    if (exec.group?.pgid !== undefined) groups.push(exec.group.pgid);
    const beat = (): unknown => readJson(p.job(id, 'state.1.json'))?.['heartbeat_ms'];
    const first = await waitFor('a renewal', () => beat(), WAIT_MS);
    await waitFor('the next renewal', () => beat() !== first && beat(), WAIT_MS);
    const results: string[] = [];
    for (let run = 0; run < 2; run++) {
      const judge = await runFsjob(['recover', '--queue', p.q], clockEnv({ FSJOB_TEST_CLOCK_OFFSET_MS: String(HOUR) }));
      results.push(`exit ${judge.code}: ${judge.stdout.trim().split('\n').slice(0, 3).join(' / ')}`);
      const broken = ['claim.2.json', 'end.1.json', 'receipt.json'].filter((name) => existsSync(p.job(id, name)));
      assert.equal(broken, [], `recover an hour ahead (run ${run + 1}) broke the live claim: ${broken.join(', ')} appeared; ${results.join('; ')}`);
    }
    writeFileSync(gate, '');
    const receipt = await waitReceipt(p, id);
    assert.equal([receipt['gen'], receipt['outcome']], [1, 'succeeded'], `finished by its live owner: ${JSON.stringify(receipt)}`);
  } finally {
    await stopAll([owner], groups);
  }
});

point(clocks, "point 9b: a 5 s retry delay is run within the delay plus tolerance when the consumer's clock jumps back 1 h after the failure (RETRY-4)", async () => {
  const p = await place('clock-retry');
  const id = await enqueue(p, ['--max-attempts', '2', '--retry-delay', '5s'], ['sh', '-c', '[ "$FSJOB_ATTEMPT" = 2 ] || exit 1; echo second']);
  const end = p.job(id, 'end.1.json');
  const worker = startFsjob(['work', '--queue', p.q, '--drain'], clockEnv({ FSJOB_TEST_CLOCK_JUMP_WHEN: end, FSJOB_TEST_CLOCK_JUMP_MS: String(-HOUR) }));
  let exit = 'still running';
  void worker.exited.then(({ code }) => (exit = `exited ${code}`));
  try {
    await waitFor('end.1.json (the first attempt failed)', () => existsSync(end), WAIT_MS);
    const record = readJson(end);
    const delayMs = Number(record?.['retry_at_ms']) - Number(record?.['ended_ms']);
    const bound = delayMs + 2000 + TOLERANCE_MS; // RETRY-4's delay, the drain's wait granularity, scheduling
    const receipt = await waitReceipt(p, id, `the retry within ${bound} ms of the failure (retry_at_ms ${String(record?.['retry_at_ms'])}, a delay of ${delayMs} ms; the clock went back ${HOUR} ms)`, bound).catch((e: unknown) => {
      throw new Error(`${e instanceof Error ? e.message : String(e)}; status: ${existsSync(p.job(id, 'claim.2.json')) ? 'claim.2.json exists' : 'no claim.2.json'}; the worker (--drain) ${exit}`);
    });
    assert.equal([receipt['outcome'], receipt['attempts']], ['succeeded', 2], JSON.stringify(receipt));
  } finally {
    await stopAll([worker], []);
  }
});
clocks.run();

// ---------------------------------------------------------------------------
// Point 11: a hard-linked stdin (SEC-9, SEC-10).

const stdin = suite('point 11: a stdin hard-linked to a file outside the queue');
stdin.after(removeBatteryDirs);

point(stdin, 'point 11: a job whose stdin is a hard link to a file outside the queue is rejected stdin_unusable and never run (SEC-10)', async () => {
  const p = await place('stdin-link');
  const outside = join(p.dir, 'outside');
  mkdirSync(outside);
  const secret = join(outside, 'secret');
  writeFileSync(secret, 'the content of a file outside the queue\n');
  // The spec's bytes and sha256 match the outside file: enqueued from a copy, then swapped for a link to it.
  const copy = join(p.dir, 'copy');
  writeFileSync(copy, readFileSync(secret));
  const ran = join(p.dir, 'ran');
  const id = await enqueue(p, ['--stdin', copy], ['sh', '-c', `cat; touch "${ran}"`]);
  unlinkSync(p.job(id, 'stdin'));
  linkSync(secret, p.job(id, 'stdin'));
  const run = await runFsjob(['work', '--queue', p.q, '--drain']);
  assert.ok(run.code === 0 || run.code === 1, run.stderr);
  const receipt = receiptOf(p, id);
  const evidence = `receipt ${String(receipt?.['outcome'])}/${String(receipt?.['reason'])}; the command ${existsSync(ran) ? 'ran' : 'did not run'}`;
  assert.equal([receipt?.['outcome'], receipt?.['reason']], ['rejected', 'stdin_unusable'], evidence);
  assert.not.ok(existsSync(ran), evidence);
});
stdin.run();

// ---------------------------------------------------------------------------
// Point 12: a process that leaves the group (EXEC-12, EXEC-16).

const escaped = suite('point 12: a daemon that leaves its job\'s process group');
escaped.after(removeBatteryDirs);

point(escaped, 'point 12: a setsid daemon that keeps stdout open: the attempt ends and its receipt and fsjob status say a process outside the group was not stopped (EXEC-16)', async () => {
  const p = await place('escaped');
  const pidFile = join(p.dir, 'daemon.pid');
  const id = await enqueue(p, [], ['sh', '-c', `setsid sleep 60 & echo "$!" > "${pidFile}"; echo out`]);
  let daemon = 0;
  try {
    const run = await runFsjob(['work', '--queue', p.q, '--drain']);
    daemon = Number(readFileSafe(pidFile)?.trim() ?? 0);
    const receipt = await waitReceipt(p, id);
    const status = await runFsjob(['status', '--queue', p.q, id]);
    const alive = daemon > 0 && !(await isDead(daemon));
    const evidence = `work exit ${run.code}; receipt ${String(receipt['outcome'])}, message ${JSON.stringify(receipt['message'])}; the daemon (pid ${daemon}) is ${alive ? 'alive' : 'gone'} at the receipt`;
    assert.ok(alive, `the escaped daemon should outlive the attempt here (fsjob cannot stop it): ${evidence}`);
    assert.match(String(receipt['message']), /outside the command's group/, `the receipt says nothing of the process fsjob left running: ${evidence}`);
    assert.match(status.stdout, /outside the command's group/, `fsjob status ID says nothing of it: ${evidence}; status: ${status.stdout.slice(0, 1500)}`);
  } finally {
    if (daemon > 0) signal(daemon, 'SIGKILL');
  }
});
escaped.run();

// ---------------------------------------------------------------------------
// Points 6 and 10: a worker's log pipe and SIGHUP (WORKER-3).

/** A job that runs until its gate file exists. */
async function gatedJob(p: Place, name: string): Promise<{ id: string; open: () => void }> {
  const gate = join(p.dir, `gate-${name}`);
  const id = await enqueue(p, [], ['sh', '-c', `while [ ! -e "${gate}" ]; do sleep 0.1; done; echo ${name}`]);
  return { id, open: () => writeFileSync(gate, '') };
}

const signals = suite("points 6 and 10: a worker's closed log pipe and SIGHUP");
signals.after(removeBatteryDirs);

point(signals, 'point 6: a worker whose log pipe closes (work 2>&1 | head) keeps serving: its running job ends succeeded, not lost', async () => {
  const p = await place('epipe');
  const running = await gatedJob(p, 'running');
  const worker = startFsjob(['work', '--queue', p.q, '--concurrency', '2']);
  let exit = 'still running';
  void worker.exited.then(({ code, signal: sig }) => (exit = `exited ${code ?? sig}`));
  const groups: number[] = [];
  try {
    const exec = await waitFor('the running job to start', () => readJson<{ group?: { pgid: number } }>(p.job(running.id, 'exec.1.json')), WAIT_MS);
    if (exec.group?.pgid !== undefined) groups.push(exec.group.pgid);
    // The reader goes away: every later log line meets a closed pipe.
    worker.child.stdout?.destroy();
    worker.child.stderr?.destroy();
    const next = await enqueue(p, [], ['true']); // the worker logs its claim and its end
    await waitFor('the next job (whose log lines meet the closed pipe)', () => {
      if (exit !== 'still running') throw new Error(`the worker ${exit} once its log pipe closed, with a job running (${running.id})`);
      return receiptOf(p, next);
    }, WAIT_MS);
    running.open();
    const receipt = await waitReceipt(p, running.id, 'the running job', 30_000).catch((e: unknown) => {
      throw new Error(`${e instanceof Error ? e.message : String(e)}; the worker ${exit}`);
    });
    assert.equal([receipt['outcome'], receipt['gen']], ['succeeded', 1], `the running job after the pipe closed (worker ${exit}): ${JSON.stringify(receipt)}`);
    assert.is(exit, 'still running', 'the worker still serves');
  } finally {
    running.open();
    await stopAll([worker], groups);
  }
});

point(signals, 'point 10a: SIGHUP stops a worker like SIGTERM: it claims nothing more and its running job finishes within the grace (WORKER-3), not lost', async () => {
  const p = await place('sighup');
  const running = await gatedJob(p, 'running');
  const worker = startFsjob(['work', '--queue', p.q]);
  const groups: number[] = [];
  try {
    const exec = await waitFor('the running job to start', () => readJson<{ group?: { pgid: number } }>(p.job(running.id, 'exec.1.json')), WAIT_MS);
    if (exec.group?.pgid !== undefined) groups.push(exec.group.pgid);
    signal(worker.pid, 'SIGHUP');
    await delay(1000);
    running.open();
    const ended = await Promise.race([worker.exited, delay(30_000).then(() => undefined)]);
    const receipt = receiptOf(p, running.id);
    const evidence = `worker ${ended === undefined ? 'still running 30 s after SIGHUP' : `exited ${ended.code ?? ended.signal}`}; receipt ${receipt === undefined ? 'none' : `${String(receipt['outcome'])} (${String(receipt['reason'])})`}`;
    assert.equal([receipt?.['outcome'], receipt?.['gen']], ['succeeded', 1], `the job running at SIGHUP: ${evidence}`);
    assert.equal(ended, { code: 0, signal: null }, `a clean shutdown: ${evidence}`);
  } finally {
    running.open();
    await stopAll([worker], groups);
  }
});
signals.run();

// ---------------------------------------------------------------------------
// Issue 28: hostile conditions, round three.

const round3 = suite('issue 28: bytes, a judge whose clock goes back, descriptors, receipts');
round3.after(removeBatteryDirs);

point(round3, "issue 28 point 2: host A's worker dies and host B's wall clock goes back an hour: B still breaks A's claim after its watch of lease + GUARDIAN_LIMIT + LEASE_SKEW (LEASE-3, LEASE-4)", async () => {
  const p = await place('judge-clock');
  const jump = join(p.dir, 'jump');
  const id = await enqueue(p, ['--max-attempts', '2'], ['sh', '-c', 'sleep 600']);
  const a = fsjobWork(p, 'host-a');
  const workers = [a];
  const groups: number[] = [];
  try {
    const exec = await waitFor('exec.1.json', () => readJson<{ group?: { pgid: number } }>(p.job(id, 'exec.1.json')), WAIT_MS);
    if (exec.group?.pgid !== undefined) groups.push(exec.group.pgid);
    // B serves the queue while A renews: it looks at A's live claim and puts it aside for a while.
    const b = startFsjob(['work', '--queue', p.q, '--lease', String(LEASE_S)], { ...hostEnv('host-b'), ...clockEnv({ FSJOB_TEST_CLOCK_JUMP_WHEN: jump, FSJOB_TEST_CLOCK_JUMP_MS: String(-HOUR) }) });
    workers.push(b);
    await waitFor("host B's registration", () => readdirSyncSafe(join(p.q, 'workers')).length >= 2 || undefined, WAIT_MS);
    await delay(3000); // a few of B's scans see A renewing
    signal(a.pid, 'SIGKILL');
    writeFileSync(jump, '');
    const died = Date.now();
    const bound = WATCH_MS + 2 * TOLERANCE_MS; // the watch, B's poll, scheduling
    const broken = await waitFor('claim.2.json', () => existsSync(p.job(id, 'claim.2.json')) || undefined, bound).catch(() => false);
    assert.ok(broken === true, `host B, whose wall clock went back an hour just after host A died, had not broken A's claim ${Math.round((Date.now() - died) / 1000)} s after the death (LEASE-3: after ${WATCH_MS} ms of its monotonic watch): ${readdirSyncSafe(join(p.q, 'jobs', id)).join(' ')}`);
  } finally {
    await stopAll(workers, groups);
  }
});
point(round3, 'issue 28 point 3: fsjob work --drain under every ulimit -n from 24 to 64: a working worker, or one line that names EMFILE and the limit (no stack trace)', async () => {
  const p = await place('nofile');
  const id = await enqueue(p, [], ['true']);
  const bad: string[] = [];
  let worked = 0;
  for (let limit = 24; limit <= 64; limit++) {
    const run = spawnSync('sh', ['-c', `ulimit -n ${limit} && exec "$@"`, 'sh', ...FSJOB_ARGV, 'work', '--queue', p.q, '--drain'], { encoding: 'utf8', timeout: 60_000 });
    const lines = (run.stderr ?? '').trim().split('\n');
    if (run.status === 0) worked += 1;
    else if (run.status !== 1 || lines.length !== 1 || !new RegExp(`EMFILE.*ulimit -n ${limit}\\b`).test(lines[0] ?? '')) bad.push(`${limit}: exit ${String(run.status ?? run.signal)}: ${lines.slice(0, 2).join(' / ').slice(0, 160)}`);
  }
  assert.equal(bad, [], `limits whose answer was neither a working worker nor one clear line: ${bad.join('; ')}`);
  assert.ok(worked > 0 && receiptOf(p, id) !== undefined, `a worker worked at some limit and ran the job (${worked} worked)`);
});
point(round3, "issue 28 point 1: an argument and an --env value that are not UTF-8 reach the command as exactly their bytes, and a --cwd that is not UTF-8 is refused naming it (SPEC-3)", async () => {
  const p = await place('bytes');
  const out = join(p.dir, 'out');
  // Node passes strings to a child: the bytes are made by printf in a shell, as a user's shell has them.
  const script = [
    'arg=$(printf "caf\\351 %%s\\\\\\\\\\377"); value=$(printf "\\376=")',
    `id=$("$@" enqueue --queue "${p.q}" --cwd "${p.dir}" --env "X=$value" -- sh -c 'printf %s "$1" > "$2.arg"; printf %s "$X" > "$2.env"' sh "$arg" "${out}") || exit 1`,
    'echo "$id"',
  ].join('\n');
  const made = spawnSync('sh', ['-c', script, 'sh', ...FSJOB_ARGV], { encoding: 'utf8' });
  assert.is(made.status, 0, `fsjob enqueue: ${made.stderr}`);
  const run = await runFsjob(['work', '--queue', p.q, '--drain']);
  assert.is(run.code, 0, run.stderr);
  const arg = readFileSafe(`${out}.arg`);
  const env = readFileSafe(`${out}.env`);
  const hex = (text: string | undefined): string => (text === undefined ? 'nothing' : Buffer.from(text, 'latin1').toString('hex'));
  assert.is(hex(arg), Buffer.from('caf\xe9 %s\\\xff', 'latin1').toString('hex'), `the argument's bytes (e9 and ff are not UTF-8; U+FFFD is ef bf bd): got ${hex(arg)}`);
  assert.is(hex(env), 'fe3d', `the --env value's bytes: got ${hex(env)}`);
  const refused = spawnSync('sh', ['-c', `"$@" enqueue --queue "${p.q}" --cwd "$(printf '${p.dir}/\\377')" -- true`, 'sh', ...FSJOB_ARGV], { encoding: 'utf8' });
  assert.is(refused.status, 2, `a --cwd that is not UTF-8: exit ${String(refused.status)}: ${refused.stderr}`);
  assert.match(refused.stderr, /--cwd/, `the refusal names --cwd: ${refused.stderr}`);
});
point(round3, "issue 28 point 4a: fsjob retry refuses a job whose receipt.json is a hard link to another job's receipt, as wait and validate do (REC-7)", async () => {
  const p = await place('retry-link');
  const done = await enqueue(p, [], ['true']);
  const run = await runFsjob(['work', '--queue', p.q, '--drain']);
  assert.is(run.code, 0, run.stderr);
  const other = await enqueue(p, ['--delay', '1h'], ['echo', 'never']);
  linkSync(p.job(done, 'receipt.json'), p.job(other, 'receipt.json'));
  const before = readdirSyncSafe(join(p.q, 'jobs')).length;
  const retried = await runFsjob(['retry', '--queue', p.q, other]);
  const after = readdirSyncSafe(join(p.q, 'jobs')).length;
  assert.ok(retried.code !== 0 && after === before, `retry of a job whose receipt is another job's: exit ${String(retried.code)}, jobs ${before} -> ${after}; ${retried.stdout.trim()} ${retried.stderr.trim()}`);
});

point(round3, "issue 28 point 4b: a worker whose wall clock goes back a day mid-run writes a receipt that does not finish before it started, and validate says so when one does (LEASE-4)", async () => {
  const p = await place('receipt-clock');
  const gate = join(p.dir, 'gate');
  const id = await enqueue(p, [], ['sh', '-c', `while [ ! -e "${gate}" ]; do sleep 0.1; done`]);
  const worker = startFsjob(['work', '--queue', p.q, '--drain'], clockEnv({ FSJOB_TEST_CLOCK_JUMP_WHEN: p.job(id, 'exec.1.json'), FSJOB_TEST_CLOCK_JUMP_MS: String(-24 * HOUR) }));
  try {
    await waitFor('exec.1.json', () => existsSync(p.job(id, 'exec.1.json')) || undefined, WAIT_MS);
    await delay(500); // the jump is polled every 10 ms
    writeFileSync(gate, '');
    const receipt = await waitReceipt(p, id);
    const started = Number(receipt['started_ms']);
    const finished = Number(receipt['finished_ms']);
    const audit = await runFsjob(['validate', '--queue', p.q]);
    assert.ok(finished >= started, `the receipt finished ${started - finished} ms before it started (finished_ms ${finished}, started_ms ${started}); validate exit ${String(audit.code)}: ${audit.stdout.trim().split('\n').slice(-2).join(' / ')}`);
  } finally {
    await stopAll([worker], []);
  }
  // validate reports what it sees: a receipt planted with its instants the wrong way round.
  const planted = await enqueue(p, [], ['true']);
  await runFsjob(['work', '--queue', p.q, '--drain']);
  const file = p.job(planted, 'receipt.json');
  const record = readJson(file) ?? {};
  const wrong = { ...record, finished_ms: Number(record['started_ms']) - 86_396_000 };
  unlinkSync(file);
  writeFileSync(file, `${JSON.stringify(wrong)}\n`, { mode: 0o600 });
  const audit = await runFsjob(['validate', '--queue', p.q]);
  assert.match(audit.stdout, /RECEIPT_TIME_ORDER|finished_ms .* before its started_ms/, `validate says nothing of a receipt that finished 86,396 s before it started: ${audit.stdout.slice(-800)}`);
});
point(round3, "issue 28 point 5: a non-root worker that owns its cgroup (systemd's Delegate=yes) contains its jobs by default: a setsid daemon does not outlive its attempt (EXEC-16)", async () => {
  const mount = ['/sys/fs/cgroup', '/sys/fs/cgroup/unified'].find((dir) => existsSync(join(dir, 'cgroup.procs')) && !existsSync(join(dir, 'memory')));
  if (process.getuid?.() !== 0 || mount === undefined) {
    console.log(`  point 5 not run: ${mount === undefined ? 'no cgroup v2 mount' : 'it needs root to make a delegated cgroup'}`);
    return;
  }
  const own = join(mount, `fsjob-before-after-${process.pid}`);
  mkdirSync(own);
  const p = await place('delegated');
  const pidFile = join(p.dir, 'daemon.pid');
  const nobody = 65534;
  for (const path of [own, join(own, 'cgroup.procs'), join(own, 'cgroup.threads')]) chownSync(path, nobody, nobody);
  spawnSync('chown', ['-R', `${nobody}:${nobody}`, p.dir]);
  const asUser = (...args: string[]): ReturnType<typeof spawnSync> =>
    spawnSync('sh', ['-c', `echo $$ > '${join(own, 'cgroup.procs')}' && exec setpriv --reuid=${nobody} --regid=${nobody} --clear-groups -- "$@"`, 'sh', ...FSJOB_ARGV, ...args], { encoding: 'utf8', env: { ...process.env, HOME: p.dir }, cwd: p.dir, timeout: 120_000 });
  let daemon = 0;
  try {
    const q = join(p.dir, 'q2');
    assert.is(asUser('init', '--queue', q).status, 0);
    const id = String(asUser('enqueue', '--queue', q, '--', 'sh', '-c', `setsid sleep 60 & echo "$!" > "${pidFile}"; echo out`).stdout).trim();
    const work = asUser('work', '--queue', q, '--drain');
    daemon = Number(readFileSafe(pidFile)?.trim() ?? 0);
    const receipt = readJson(join(q, 'jobs', id, 'receipt.json'));
    const alive = daemon > 0 && !(await isDead(daemon));
    assert.not.ok(alive, `the setsid daemon (pid ${daemon}) outlived its attempt under the default flags of a worker whose cgroup is delegated to it; work exit ${String(work.status)}; receipt ${String(receipt?.['outcome'])}: ${String(receipt?.['message'])}`);
  } finally {
    if (daemon > 0) signal(daemon, 'SIGKILL');
    for (const name of existsSync(own) ? readdirSync(own) : []) spawnSync('rmdir', [join(own, name)]);
    spawnSync('rmdir', [own]);
  }
});
round3.run();
