/**
 * The cases of spec/running.md: what a command runs with, what is left of
 * it, and what its receipt reports.
 *
 * - execution/group-members (EXEC-11, RCPT-1): a command leaves a member in
 *   its process group that ignores SIGTERM and exits 0; only a sweep of
 *   SIGTERM, then SIGKILL after kill_grace_ms, stops it, and the receipt may
 *   be published only once it is gone;
 * - consumer/escaped-output (EXEC-12, EXEC-16): a process that left the
 *   group keeps the output pipes open; the receipt comes DRAIN_LIMIT later;
 * - consumer/output-keep (EXEC-17): a long output keeps the bytes its job's
 *   output_keep asks for;
 * - behaviour/process-state (EXEC-13): signals, mask, descriptors, umask;
 * - behaviour/receipt-reports (RCPT-8): a cancel while retrying reports no
 *   execution; a lost receipt's started_ms and truncated;
 * - behaviour/cancel-trap-exit0 (EXEC-14): the cause, not the exit status;
 * - behaviour/home-fallback (EXEC-6): HOME from the user database;
 * - execution/shell-variables (EXEC-6, EXEC-1): names a shell sets or reads
 *   itself (IFS, OPTIND, PPID, PWD, _, BASH_ENV, ENV, ...) reach the command
 *   as the job gave them, and no start-up file or warning of a shell on
 *   the way writes to its stderr;
 * - behaviour/cwd-lexical (EXEC-5): a cwd inside the queue as written is
 *   rejected though a link resolves it outside.
 *
 * The behaviour plans (behaviour.ts) check the rest of running.md job by
 * job; the armed handshake's forced interleavings are races.ts's.
 */
import { readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { existsSync } from 'node:fs';
import { userInfo } from 'node:os';
import { DRAIN_LIMIT } from '../../src/base/constants.ts';
import { selfIdentity } from '../../src/model/identity.ts';
import type { ReceiptRecord } from '../../src/records/codec.ts';
import { type CaseContext, type ConformanceCase, countBy, readStarts } from '../runner/case.ts';
import { checkInvariants, listing, outputOf } from '../runner/inspect.ts';
import { describeExit, run as runProcess, sleep } from '../runner/process.ts';
import { freshQueue, plantBytes, plantRecord, reopen, stageJob } from '../runner/stage.ts';
import { cancelRecord, claimRecord, deadOwner, execRecord, stateRecord } from '../runner/fixtures.ts';
import { logged, sh } from './jobs.ts';
import { bound, killGroupNow, killNow, leaderLeavingMember, probe, processLives, procStat, readProbeLog, SCHEDULING_TOLERANCE_MS, waitFor, watchDeath } from './probes.ts';

const KILL_GRACE_MS = 2000;
const WATCHDOG_MS = 90_000;

async function groupMembersCase(ctx: CaseContext): Promise<void> {
  const queue = await ctx.newQueue('members');
  const work = await ctx.subdir('members/work');
  const log = path.join(work, 'probe.log');
  const argv = await leaderLeavingMember(work, log);
  const id = await ctx.produceOk(queue, { argv, cwd: work, kill_grace_ms: KILL_GRACE_MS, timeout_ms: 60_000 }, ['EXEC-11']);
  if (id === undefined) return;
  const receiptFile = path.join(queue, 'jobs', id, 'receipt.json');
  // The member's death as a process of its own saw it: this case's polls share the runner's event loop with other cases.
  const watcher = watchDeath(log, 'member', path.join(work, 'member.gone'), WATCHDOG_MS + KILL_GRACE_MS + SCHEDULING_TOLERANCE_MS);
  const consumer = ctx.startRole('consume', { queue });
  let memberPid: number | undefined;
  let memberStart: string | undefined;
  let pgid: number | undefined;
  try {
    let aliveAtReceipt = false;
    let diedAt: number | undefined;
    const finished = await waitFor(async () => {
      if (memberPid === undefined) {
        const pid = Number((await readProbeLog(log)).lines.find((l) => l.startsWith('member '))?.slice(7));
        const st = Number.isInteger(pid) && pid > 0 ? procStat(pid) : undefined;
        if (st !== undefined) [memberPid, memberStart, pgid] = [pid, st.start, st.pgrp];
      }
      const alive = memberPid !== undefined && processLives(memberPid, memberStart);
      if (memberPid !== undefined && !alive && diedAt === undefined) diedAt = Date.now();
      if (existsSync(receiptFile)) {
        aliveAtReceipt = alive;
        return true;
      }
      return false;
    }, WATCHDOG_MS);
    const done = await consumer.done;
    // The member may outlive the receipt only when something is wrong: watch it a little longer then.
    if (memberPid !== undefined && diedAt === undefined) {
      await waitFor(() => !processLives(memberPid as number, memberStart), KILL_GRACE_MS + SCHEDULING_TOLERANCE_MS);
      if (!processLives(memberPid, memberStart)) diedAt = Date.now();
    }
    const aliveAfter = memberPid !== undefined && processLives(memberPid, memberStart);
    // The earlier of the two sightings: a late poll makes a kill on time look late, never the reverse.
    const watched = aliveAfter ? undefined : await watcher.diedAt();
    if (watched !== undefined) diedAt = diedAt === undefined ? watched : Math.min(diedAt, watched);
    const probes = await readProbeLog(log);
    const snapshot = await ctx.snapshot(queue);
    const evidence = [describeExit(done), ...probes.lines.slice(0, 12).map((l) => `log: ${l}`), ...listing(snapshot, new Set([id]))];
    if (memberPid === undefined) {
      ctx.fail(['EXEC-4', 'MANIFEST-1'], `the job's command never started its member process (no pid in ${log})`, evidence);
      return;
    }
    if (!ctx.check(finished, ['RCPT-3', 'MANIFEST-2'], `no receipt within ${WATCHDOG_MS} ms`, evidence)) return;
    const term = probes.terms('member')[0];
    if (aliveAfter) {
      ctx.fail(['EXEC-11', 'RCPT-1'], `the leader exited, but the member it left in the recorded group (pid ${memberPid}, pgid ${pgid}) still runs after consume exited: when the leader exits, members left in its group are sent SIGTERM and, after kill_grace_ms (${KILL_GRACE_MS} ms), SIGKILL`, evidence);
    } else if (term === undefined) {
      ctx.fail(['EXEC-11'], `the member left in the group was killed without a SIGTERM first: EXEC-11 sends SIGTERM, and SIGKILL only after kill_grace_ms (${KILL_GRACE_MS} ms)`, evidence);
    } else if (diedAt !== undefined) {
      const lived = diedAt - term;
      ctx.check(lived >= KILL_GRACE_MS - SCHEDULING_TOLERANCE_MS, ['EXEC-11'], `the member (ignoring SIGTERM) was killed ${lived} ms after its SIGTERM: SIGKILL comes only after kill_grace_ms (${KILL_GRACE_MS} ms, less ${SCHEDULING_TOLERANCE_MS} ms tolerance)`, evidence);
      ctx.check(lived <= KILL_GRACE_MS + SCHEDULING_TOLERANCE_MS + 1000, ['EXEC-11'], `the member (ignoring SIGTERM) lived ${lived} ms after its SIGTERM: SIGKILL is due after ${bound('kill_grace_ms', KILL_GRACE_MS)} (+ 1000 ms for the polling of this case and its watcher)`, evidence);
    }
    if (!aliveAfter) ctx.check(!aliveAtReceipt, ['RCPT-1', 'EXEC-11'], `receipt.json was published while a member of the execution (pid ${memberPid}) still ran: the execution is stopped completely before the receipt`, evidence);
    const receipt = snapshot.jobs.get(id)?.receipt;
    ctx.check(receipt?.outcome === 'succeeded' && receipt.exit_code === 0, ['EXEC-10'], `the leader exited 0: the receipt says ${receipt?.outcome} (${receipt?.exit_code}), expected succeeded (0)`, evidence);
    for (const failure of await checkInvariants(snapshot, { accepted: [id] })) ctx.failures.push(failure);
  } finally {
    watcher.stop();
    consumer.kill();
    if (memberPid !== undefined && processLives(memberPid, memberStart)) {
      killGroupNow(pgid);
      killNow(memberPid);
    }
  }
}

/** Scheduling tolerance on a loaded 2-core machine, added to every bound the spec states. */
const TOLERANCE_MS = 3000;

async function escapedOutputCase(ctx: CaseContext): Promise<void> {
  const f = await freshQueue(ctx, 'escaped');
  const pidFile = path.join(f.work, 'escaped.pid');
  // coreutils timeout puts its child in a group of its own: it has left the job's group, stdout still open.
  const job = await stageJob(f.queue, {
    argv: sh(`timeout 0 sleep 30 & echo "$!" > "$1"; printf 'end %s\\n' "$(date +%s%3N)" >> "$2"; echo out`, pidFile, f.log),
    cwd: f.work,
  });
  try {
    const run = await ctx.consumeOk(f.root, ['EXEC-12']);
    const snapshot = await ctx.snapshot(f.root);
    const receipt = snapshot.jobs.get(job.id)?.receipt;
    const lines = (await readFile(f.log, 'utf8').catch(() => '')).split('\n');
    const end = Number(lines.find((l) => l.startsWith('end '))?.slice(4));
    const late = receipt === undefined ? Number.NaN : receipt.finished_ms - end;
    const evidence = [describeExit(run), `the command ended at ${end}; receipt at ${receipt?.finished_ms ?? 'none'}`, ...listing(snapshot, new Set([job.id]))];
    ctx.check(
      receipt !== undefined && Number.isFinite(late) && late <= DRAIN_LIMIT + TOLERANCE_MS,
      ['EXEC-12', 'EXEC-16', 'EXEC-11'],
      `a process that left the group holds the output pipes: the owner waits at most DRAIN_LIMIT (${DRAIN_LIMIT} ms, + ${TOLERANCE_MS} ms tolerance) after the group is gone; the receipt came ${late} ms after the command ended`,
      evidence,
    );
    ctx.check(receipt?.stdout?.bytes_total === null, ['EXEC-12', 'RCPT-5'], `when the owner stops waiting for a pipe, bytes_total is null (unknown); got ${JSON.stringify(receipt?.stdout)}`, evidence);
  } finally {
    const pid = Number((await readFile(pidFile, 'utf8').catch(() => '')).trim());
    if (pid > 0) {
      for (const target of [-pid, pid]) {
        try {
          process.kill(target, 'SIGKILL');
        } catch {
          // gone
        }
      }
    }
  }
}

async function processStateCase(ctx: CaseContext): Promise<void> {
  const f = await freshQueue(ctx, 'state');
  const status = await stageJob(f.queue, { argv: ['cat', '/proc/self/status'], cwd: f.work });
  const fds = await stageJob(f.queue, { argv: ['ls', '-l', '/proc/self/fd'], cwd: f.work });
  const run = await ctx.consumeOk(f.root, ['EXEC-13']);
  const snapshot = await ctx.snapshot(f.root);
  const text = (await outputOf(snapshot.jobs.get(status.id), 'stdout')) ?? '';
  const field = (name: string): string | undefined => text.split('\n').find((l) => l.startsWith(`${name}:`))?.split(/\s+/)[1];
  const evidence = [describeExit(run), ...text.split('\n').filter((l) => /^(SigIgn|SigBlk|Umask):/.test(l))];
  ctx.check(field('SigIgn') === '0000000000000000', ['EXEC-13'], `a command starts with every signal at its default disposition; /proc/self/status says SigIgn ${field('SigIgn') ?? '?'}`, evidence);
  ctx.check(field('SigBlk') === '0000000000000000', ['EXEC-13'], `a command starts with an empty signal mask; SigBlk ${field('SigBlk') ?? '?'}`, evidence);
  ctx.check(field('Umask') === '0022', ['EXEC-13'], `a command starts with umask 0022; Umask ${field('Umask') ?? '?'}`, evidence);
  const listed = (await outputOf(snapshot.jobs.get(fds.id), 'stdout')) ?? '';
  // Descriptors the runner itself passes to every role (inherited from whatever
  // started it) are the consumer's inheritance, which EXEC-13 only advises
  // against passing on: a probe started the way roles are tells them.
  const inherited = new Set(descriptorsOf((await runProcess(['ls', '-l', '/proc/self/fd'], { timeoutMs: 30_000 })).stdout).map(([fd]) => fd));
  // ls's own directory descriptor on /proc/self/fd is the one extra allowed.
  const extra = descriptorsOf(listed)
    .filter(([fd, target]) => fd > 2 && !inherited.has(fd) && !/^\/proc\/[0-9]+\/fd$/.test(target))
    .map(([fd, target]) => `${fd} -> ${target}`);
  ctx.check(listed !== '' && extra.length === 0, ['EXEC-13'], `a command starts with no descriptor but 0, 1 and 2 opened by the consumer; it had ${extra.join(', ') || '(no listing)'}`, [describeExit(run)]);
}

/** The descriptors of an `ls -l /proc/self/fd` listing: [fd, target]. */
function descriptorsOf(listing: string): [number, string][] {
  return listing
    .split('\n')
    .map((l) => /\s([0-9]+) -> (.*)$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => [Number(m[1]), m[2] ?? '']);
}

async function receiptReportsCase(ctx: CaseContext): Promise<void> {
  const f = await freshQueue(ctx, 'reports');
  // (a) attempt 1 fails, the retry is 10 minutes away, then a cancel: the receipt reports no execution.
  const failing = await stageJob(f.queue, { argv: logged(f.log, 'failing', 'exit 3'), cwd: f.work, max_attempts: 2, retry_delay_ms: 600_000 });
  const first = await ctx.consumeOk(f.root, ['RETRY-3', 'MANIFEST-4']);
  let snapshot = await ctx.snapshot(f.root);
  const ended = snapshot.jobs.get(failing.id)?.ends.includes(1) === true;
  if (!ctx.check(ended, ['RETRY-3'], 'attempt 1 failed with an attempt left: an end record, not a receipt', [describeExit(first), ...listing(snapshot, new Set([failing.id]))])) return;
  await plantRecord(f.queue, failing.dir, 'cancel.json', 'cancel', cancelRecord(failing.id, false, await selfIdentity()));
  // (b) a dead owner's last attempt, with max_output_bytes 0: lost, nothing known to be discarded.
  const lostJob = await stageJob(f.queue, { argv: logged(f.log, 'lost'), cwd: f.work, max_attempts: 1, max_output_bytes: 0 });
  const dead = await deadOwner();
  await plantRecord(f.queue, lostJob.dir, 'claim.1.json', 'claim', claimRecord(lostJob.id, 1, dead, Date.now() - 5000));
  const exec = execRecord(lostJob.id, 1, dead);
  await plantRecord(f.queue, lostJob.dir, 'exec.1.json', 'exec', exec);
  await plantBytes(path.join(lostJob.dir, 'stdout.1'), '');
  await plantBytes(path.join(lostJob.dir, 'stderr.1'), '');
  // (c) a dead owner kept 100 bytes of a stream under max_output_bytes 1000
  // (its own consumer limit, say), and its state record says 500 were
  // produced: truncated is judged from max_output_bytes alone, so false; (d)
  // one that kept exactly 1000 bytes: true.
  const limited = await stageJob(f.queue, { argv: logged(f.log, 'limited'), cwd: f.work, max_attempts: 1, max_output_bytes: 1000 });
  await plantRecord(f.queue, limited.dir, 'claim.1.json', 'claim', claimRecord(limited.id, 1, dead, Date.now() - 5000));
  await plantRecord(f.queue, limited.dir, 'exec.1.json', 'exec', execRecord(limited.id, 1, dead));
  await plantRecord(f.queue, limited.dir, 'state.1.json', 'state', stateRecord(limited.id, 1, { phase: 'running', attempt: 1, stdout_bytes: 500, stderr_bytes: 0 }));
  await plantBytes(path.join(limited.dir, 'stdout.1'), 'x'.repeat(100));
  await plantBytes(path.join(limited.dir, 'stderr.1'), '');
  const full = await stageJob(f.queue, { argv: logged(f.log, 'full'), cwd: f.work, max_attempts: 1, max_output_bytes: 1000 });
  await plantRecord(f.queue, full.dir, 'claim.1.json', 'claim', claimRecord(full.id, 1, dead, Date.now() - 5000));
  await plantRecord(f.queue, full.dir, 'exec.1.json', 'exec', execRecord(full.id, 1, dead));
  await plantBytes(path.join(full.dir, 'stdout.1'), 'x'.repeat(1000));
  await plantBytes(path.join(full.dir, 'stderr.1'), '');
  const second = await ctx.consumeOk(f.root, ['RCPT-8']);
  snapshot = await ctx.snapshot(f.root);
  const evidence = [describeExit(second), ...listing(snapshot, new Set([failing.id, lostJob.id, limited.id, full.id]))];
  const cancelled: ReceiptRecord | undefined = snapshot.jobs.get(failing.id)?.receipt;
  ctx.check(
    cancelled?.outcome === 'cancelled' && cancelled.status === null && cancelled.started_ms === null && cancelled.stdout === null && cancelled.stderr === null && cancelled.attempts === 1,
    ['RCPT-8', 'RCPT-5'],
    `a job cancelled while retrying gets a receipt that reports no execution (status, started_ms, stdout, stderr null) and counts attempt 1; got ${JSON.stringify(cancelled && { outcome: cancelled.outcome, status: cancelled.status, started_ms: cancelled.started_ms, stdout: cancelled.stdout, attempts: cancelled.attempts })}`,
    evidence,
  );
  const lost = snapshot.jobs.get(lostJob.id)?.receipt;
  ctx.check(
    lost?.outcome === 'lost' && lost.reason === 'owner_lost' && lost.started_ms === exec.recorded_ms && lost.stdout?.bytes_total === null && lost.stdout.truncated === false,
    ['RCPT-8', 'RECOV-1'],
    `a lost receipt reports the dead generation: started_ms = its exec record's recorded_ms (${exec.recorded_ms}), bytes_total null, truncated false when max_output_bytes is 0; got ${JSON.stringify(lost && { outcome: lost.outcome, reason: lost.reason, started_ms: lost.started_ms, stdout: lost.stdout })}`,
    evidence,
  );
  const kept100 = snapshot.jobs.get(limited.id)?.receipt?.stdout;
  ctx.check(
    kept100?.bytes_kept === 100 && kept100.bytes_total === null && kept100.truncated === false,
    ['RCPT-8', 'EXEC-17'],
    `a dead generation kept 100 bytes under max_output_bytes 1000 (its state record says 500 were produced): truncated is judged from max_output_bytes alone, not from a bound the recoverer cannot know nor from the state's counts, so it is false with bytes_total null; got ${JSON.stringify(kept100)}`,
    evidence,
  );
  const kept1000 = snapshot.jobs.get(full.id)?.receipt?.stdout;
  ctx.check(kept1000?.bytes_kept === 1000 && kept1000.truncated === true, ['RCPT-8', 'EXEC-17'], `a dead generation that kept exactly max_output_bytes (1000) may have discarded bytes: truncated true; got ${JSON.stringify(kept1000)}`, evidence);
}

async function cancelTrapCase(ctx: CaseContext): Promise<void> {
  const f = await freshQueue(ctx, 'trap');
  // The trap is set before the start line: a SIGTERM the case's cancel causes always finds it.
  const job = await stageJob(f.queue, { argv: sh(`trap 'exit 0' TERM; printf 'start %s\\n' "$1" >> "$2"; while :; do sleep 0.1; done`, 'trap', f.log), cwd: f.work });
  const consumer = ctx.startRole('consume', { queue: f.root });
  const began = Date.now();
  while ((await readStarts(f.log)).length === 0 && Date.now() - began < 60_000) await sleep(100);
  if ((await readStarts(f.log)).length === 0) {
    consumer.kill();
    ctx.fail(['EXEC-3', 'MANIFEST-1'], 'the command never started, so it could not be cancelled', [describeExit(await consumer.done)]);
    return;
  }
  await plantRecord(f.queue, job.dir, 'cancel.json', 'cancel', cancelRecord(job.id, false, await selfIdentity()));
  const run = await consumer.done;
  const snapshot = await ctx.snapshot(f.root);
  const receipt = snapshot.jobs.get(job.id)?.receipt;
  ctx.check(
    receipt?.outcome === 'cancelled' && receipt.exit_code === 130 && receipt.status?.exit === 0,
    ['EXEC-14', 'CANCEL-3', 'EXEC-10'],
    `a command that traps SIGTERM and exits 0 during a cancel's grace is cancelled (130), its status exit 0; got ${JSON.stringify(receipt && { outcome: receipt.outcome, exit_code: receipt.exit_code, status: receipt.status })}`,
    [describeExit(run), ...listing(snapshot, new Set([job.id]))],
  );
}

async function homeFallbackCase(ctx: CaseContext): Promise<void> {
  const f = await freshQueue(ctx, 'home');
  const job = await stageJob(f.queue, { argv: sh('printf "%s" "$HOME"'), cwd: f.work });
  const run = await ctx.consumeOk(f.root, ['EXEC-6'], { env: { HOME: 'not-absolute' } });
  const snapshot = await ctx.snapshot(f.root);
  const home = await outputOf(snapshot.jobs.get(job.id), 'stdout');
  let expected = '/';
  try {
    if (userInfo().homedir.startsWith('/')) expected = userInfo().homedir;
  } catch {
    // no user database entry: "/"
  }
  ctx.check(home === expected, ['EXEC-6'], `with HOME not absolute in the consumer's environment the command's HOME is the user database's home (${expected}); got ${JSON.stringify(home)}`, [describeExit(run)]);
}

/**
 * EXEC-6 for the names a shell treats as its own. A consumer that starts the
 * command through a shell (a gate, a wrapper) hands that shell the job's
 * environment, and the shell resets IFS, OPTIND and PPID, exports PWD, sets
 * `_`, reads BASH_ENV or ENV, traces under SHELLOPTS, warns about LC_ALL,
 * and may keep a variable of its own under a name the job uses: the command
 * then sees another environment than the job's. Three jobs, each reading
 * its own /proc/self/environ (the exact block execve gave it, NUL-separated;
 * no shell of the case's own on the way):
 * - `plain`: names that bash and dash both treat specially, IFS holding
 *   digits (a gate's unquoted `shift $((...))` splits on it), and names a
 *   gate or wrapper script might use for itself;
 * - `bash`: no PWD, and the names bash sets read-only or again after each
 *   command (`_`, PPID, SHELLOPTS, BASH_ENV...), which a consumer may route
 *   otherwise;
 * - `equals`: argv[0] (a link to node) contains `=`, which env(1) would
 *   take for an assignment, so a consumer using env(1) must start it
 *   another way; no PWD.
 * Each must see exactly its spec's env plus FSJOB_JOB_ID, FSJOB_ATTEMPT and
 * FSJOB_QUEUE (PATH and HOME are in the spec's env), and its stderr must be
 * empty: the command writes none, and the start-up files write a line.
 */
async function shellVariablesCase(ctx: CaseContext): Promise<void> {
  const f = await freshQueue(ctx, 'shellvars');
  // Start-up files that say so when a shell reads them (BASH_ENV: bash, ENV: an interactive sh).
  const startup = path.join(f.work, 'startup.sh');
  await writeFile(startup, "echo 'fsjob-case: a shell read its start-up file' >&2\n", { mode: 0o644 });
  const named = path.join(f.work, 'env=dump');
  await symlink(process.execPath, named);
  const readEnviron = ['/bin/cat', '/proc/self/environ'] as [string, ...string[]];
  const plain: Record<string, string> = {
    PATH: '/usr/bin:/bin',
    HOME: '/fsjob-conformance-home',
    IFS: ':0123456789',
    OPTIND: '7',
    OPTARG: 'o',
    PWD: '/fsjob-not-the-cwd',
    OLDPWD: '/fsjob-old',
    CDPATH: '/tmp',
    ENV: startup,
    PS1: '$ one ',
    PS2: '> two ',
    PS4: '+ trace ',
    SHLVL: '41',
    LINENO: '12',
    RANDOM: '4',
    SRANDOM: '5',
    SECONDS: '99',
    EPOCHSECONDS: '1',
    TMOUT: '1',
    POSIXLY_CORRECT: 'y',
    GLOBIGNORE: '*',
    HISTFILE: '/fsjob-history',
    MAIL: '/fsjob-mail',
    LC_ALL: 'xx_XX.fsjob-no-such-locale',
    fsjob_release: "the job's own",
    fsjob_request: 'r',
    _go: 'g',
    E: 'e',
    G: 'g',
    id: 'i',
    VALUE: "it's \"quoted\" $HOME `x` \\ \t\n\u00e9 = ",
  };
  // Without PWD: a shell on the way exports its own.
  const { PWD: _cwd, ...bashBase } = plain;
  const bash: Record<string, string> = {
    ...bashBase,
    _: 'underscore',
    PPID: '1',
    SHELLOPTS: 'xtrace',
    BASHOPTS: 'xpg_echo',
    BASH_ENV: startup,
    BASH_XTRACEFD: '2',
    EXECIGNORE: '*',
    UID: '0',
    EUID: '0',
    FUNCNAME: 'f',
  };
  const plans: { tag: string; argv: [string, ...string[]]; env: Record<string, string> }[] = [
    { tag: 'plain', argv: readEnviron, env: plain },
    { tag: 'bash', argv: readEnviron, env: bash },
    { tag: 'equals', argv: [named, '-e', "process.stdout.write(require('fs').readFileSync('/proc/self/environ'))"], env: { ...bashBase, PATH: '/fsjob-nothing-here', PPID: '1' } },
  ];
  const staged = [];
  for (const plan of plans) staged.push(await stageJob(f.queue, { argv: plan.argv, cwd: f.work, env: plan.env }));
  const run = await ctx.consumeOk(f.root, ['EXEC-6']);
  const snapshot = await ctx.snapshot(f.root);
  for (const [index, plan] of plans.entries()) {
    const id = (staged[index] as { id: string }).id;
    const job = snapshot.jobs.get(id);
    const evidence = (): string[] => [describeExit(run), ...listing(snapshot, new Set([id]))];
    const receipt = job?.receipt;
    if (receipt === undefined || receipt.outcome !== 'succeeded' || receipt.stdout === null) {
      ctx.fail(['EXEC-6', 'EXEC-4'], `the ${plan.tag} job, ${JSON.stringify(plan.argv[0])} with its env, must succeed and keep its stdout; got ${receipt === undefined ? 'no receipt' : `${receipt.outcome} ${receipt.exit_code}`}`, evidence());
      continue;
    }
    const want = { ...plan.env, FSJOB_JOB_ID: id, FSJOB_ATTEMPT: '1', FSJOB_QUEUE: f.root };
    const environ = await readFile(path.join(job?.dir as string, `stdout.${receipt.stdout.gen}`)).catch(() => Buffer.alloc(0));
    const seen = environ.toString('utf8').split('\0');
    if (seen.at(-1) === '') seen.pop();
    const expected = Object.entries(want).map(([name, value]) => `${name}=${value}`);
    const lost = expected.filter((entry) => !seen.includes(entry));
    const added = seen.filter((entry) => !expected.includes(entry));
    ctx.check(
      lost.length === 0 && added.length === 0 && seen.length === expected.length,
      ['EXEC-6'],
      `the ${plan.tag} job's command must see exactly its spec's env and FSJOB_JOB_ID, FSJOB_ATTEMPT, FSJOB_QUEUE; ${lost.length === 0 ? '' : `lost or changed ${JSON.stringify(lost)}; `}${added.length === 0 ? '' : `added ${JSON.stringify(added)}; `}${seen.length} entries for ${expected.length}`,
      evidence,
    );
    const stderr = await outputOf(job, 'stderr');
    ctx.check(stderr === '', ['EXEC-1', 'EXEC-6'], `the ${plan.tag} job's stderr must hold only what its command wrote, nothing; it holds ${JSON.stringify(stderr?.slice(0, 300))} (a shell on the way read a start-up file, traced, or warned about a variable of the job)`, evidence);
  }
}

async function cwdLexicalCase(ctx: CaseContext): Promise<void> {
  const f = await freshQueue(ctx, 'lexical');
  const outside = await ctx.subdir('lexical/outside');
  // Inside the queue as written, outside once the link is resolved: EXEC-5 judges both ways.
  await symlink(outside, path.join(f.root, 'cwd-link'));
  const job = await stageJob(f.queue, { argv: logged(f.log, 'lexical'), cwd: path.join(f.root, 'cwd-link') });
  const run = await ctx.consumeOk(f.root, ['EXEC-5']);
  const snapshot = await ctx.snapshot(f.root);
  const receipt = snapshot.jobs.get(job.id)?.receipt;
  const starts = countBy(await readStarts(f.log)).get('lexical') ?? 0;
  ctx.check(
    receipt?.outcome === 'rejected' && receipt.reason === 'cwd_unusable' && starts === 0,
    ['EXEC-5', 'SEC-8'],
    `a cwd inside the queue root as written (${path.join(f.root, 'cwd-link')}), though a link resolves it outside, must be rejected cwd_unusable; got ${receipt?.outcome ?? 'no receipt'} ${receipt?.reason ?? ''}, ${starts} starts`,
    [describeExit(run), ...listing(snapshot, new Set([job.id]))],
  );
}

const LINES = 3000;

const BOUND = 1000;

/** The bytes `seq 1 N` prints. */
function seqBytes(n: number): Buffer {
  return Buffer.from(Array.from({ length: n }, (_, i) => `${i + 1}\n`).join(''));
}

/**
 * EXEC-17: three jobs print the same 13,893 bytes with a bound of 1000 and
 * keep the head, the tail, or both halves; a fourth prints less than the
 * bound in tail mode and keeps all of it, in order. The file and its receipt
 * summary must say exactly that.
 */
async function outputKeep(ctx: CaseContext): Promise<void> {
  const root = await ctx.newQueue('keep');
  const queue = await reopen(root);
  const work = await ctx.subdir('keep/work');
  const all = seqBytes(LINES);
  const short = seqBytes(10);
  const half = Math.floor(BOUND / 2);
  const plans = [
    { keep: 'head_tail' as const, lines: LINES, want: Buffer.concat([all.subarray(0, half), all.subarray(all.length - (BOUND - half))]) },
    { keep: 'tail' as const, lines: LINES, want: all.subarray(all.length - BOUND) },
    { keep: 'head' as const, lines: LINES, want: all.subarray(0, BOUND) },
    { keep: 'tail' as const, lines: 10, want: short },
  ];
  const staged = [];
  for (const plan of plans) {
    staged.push(await stageJob(queue, { argv: sh(`seq 1 ${plan.lines}`), cwd: work, max_output_bytes: BOUND, output_keep: plan.keep }));
  }
  const consumed = await ctx.consumeOk(root, ['EXEC-17']);
  const snapshot = await ctx.snapshot(root);
  for (const [index, plan] of plans.entries()) {
    const id = (staged[index] as { id: string }).id;
    const receipt = snapshot.jobs.get(id)?.receipt;
    const evidence = [describeExit(consumed), ...listing(snapshot, new Set([id]))];
    if (receipt === undefined || receipt.stdout === null) {
      ctx.fail(['EXEC-17', 'RCPT-5'], `the ${plan.keep} job (${plan.lines} lines) has no receipt with a stdout summary`, evidence);
      continue;
    }
    const kept = await readFile(path.join(root, 'jobs', id, `stdout.${receipt.stdout.gen}`)).catch(() => Buffer.alloc(0));
    const total = plan.lines === LINES ? all.length : short.length;
    const shown = (bytes: Buffer): string => JSON.stringify(bytes.toString('utf8').slice(0, 40)) + (bytes.length > 40 ? `...${JSON.stringify(bytes.toString('utf8').slice(-40))}` : '');
    ctx.check(kept.equals(plan.want), ['EXEC-17'], `output_keep ${plan.keep} of ${total} bytes with max_output_bytes ${BOUND} must keep ${plan.want.length} bytes ${shown(plan.want)}; stdout.${receipt.stdout.gen} holds ${kept.length}: ${shown(kept)}`, evidence);
    const summary = receipt.stdout;
    ctx.check(
      summary.bytes_total === total && summary.bytes_kept === kept.length && summary.truncated === total > BOUND,
      ['RCPT-5', 'EXEC-17'],
      `the receipt must say bytes_total ${total}, bytes_kept ${kept.length}, truncated ${total > BOUND}; it says ${summary.bytes_total}, ${summary.bytes_kept}, ${summary.truncated}`,
      evidence,
    );
  }
  for (const failure of await checkInvariants(snapshot, { accepted: staged.map((job) => job.id) })) ctx.failures.push(failure);
}

export const runningCases: ConformanceCase[] = [
  { name: 'execution/group-members', clauses: ['EXEC-11', 'RCPT-1'], level: 'consumer', strength: 'MUST', run: groupMembersCase },
  { name: 'consumer/escaped-output', clauses: ['EXEC-12', 'EXEC-16', 'EXEC-11', 'RCPT-5'], level: 'consumer', strength: 'MUST', run: escapedOutputCase },
  { name: 'behaviour/process-state', clauses: ['EXEC-13'], level: 'consumer', strength: 'MUST', run: processStateCase },
  { name: 'behaviour/receipt-reports', clauses: ['RCPT-8', 'RCPT-5', 'RETRY-3', 'RECOV-1', 'MANIFEST-4', 'EXEC-17'], level: 'consumer', strength: 'MUST', run: receiptReportsCase },
  { name: 'behaviour/cancel-trap-exit0', clauses: ['EXEC-14', 'CANCEL-3', 'EXEC-10'], level: 'consumer', strength: 'MUST', run: cancelTrapCase },
  { name: 'behaviour/home-fallback', clauses: ['EXEC-6'], level: 'consumer', strength: 'MUST', run: homeFallbackCase },
  { name: 'execution/shell-variables', clauses: ['EXEC-6', 'EXEC-1'], level: 'consumer', strength: 'MUST', run: shellVariablesCase },
  { name: 'behaviour/cwd-lexical', clauses: ['EXEC-5', 'SEC-8'], level: 'consumer', strength: 'MUST', run: cwdLexicalCase },
  { name: 'consumer/output-keep', clauses: ['EXEC-17', 'RCPT-5'], level: 'consumer', strength: 'MUST', run: outputKeep },
];
