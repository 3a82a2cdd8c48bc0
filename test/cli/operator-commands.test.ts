/**
 * The commands an operator types in a day, through the real CLI: the
 * environment a job gets, the paper cuts of issue 18 (-q everywhere, several
 * ids, errors in the terms of the flag typed), status counts, filters and
 * short ids, retry, gc of one job, the advice when no worker serves a queue,
 * and a demo that leaves nothing behind.
 */
import { existsSync, linkSync, rmSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enqueue } from '../../src/producer/index.ts';
import { initQueue, type Queue } from '../../src/model/queue.ts';
import type { ReceiptRecord, SpecRecord } from '../../src/records/codec.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { runFsjob, startFsjob, type CliRun } from '../support/cli.ts';
import { writeClaim } from '../support/producer.ts';
import { registerWorker } from '../support/validate-queue.ts';
import { drain } from '../support/consumer.ts';
import { selfIdentity } from '../../src/model/identity.ts';

async function setup(): Promise<{ dir: string; queue: Queue; q: string[]; run: (args: string[], env?: Record<string, string | undefined>) => Promise<CliRun> }> {
  const dir = await freshDir('fsjob-operator');
  const queue = await initQueue(join(dir, 'q'));
  return { dir, queue, q: ['-q', queue.root], run: (args, env) => runFsjob(args, { cwd: dir, ...(env === undefined ? {} : { env }) }) };
}

const spec = async (queue: Queue, id: string): Promise<SpecRecord> => JSON.parse(await readFile(queue.paths.jobFile(id, 'spec.json'), 'utf8')) as SpecRecord;
const receipt = async (queue: Queue, id: string): Promise<ReceiptRecord> => JSON.parse(await readFile(queue.paths.jobFile(id, 'receipt.json'), 'utf8')) as ReceiptRecord;

const day = suite("the operator's day, command by command");
day.after(cleanupAll);

day('--env NAME passes this shell\'s value, an unset NAME is refused, and argv[0] missing from the job\'s PATH is warned about at enqueue', async () => {
  const { queue, q, run } = await setup();
  const [passed, unset, notOnPath, found, relative] = await Promise.all([
    run(['enqueue', ...q, '--env', 'DEPLOY_TARGET', '--env', 'MODE=fast', '--', 'sh', '-c', 'echo "$DEPLOY_TARGET $MODE"'], { DEPLOY_TARGET: 'staging=2' }),
    run(['enqueue', ...q, '--env', 'DEPLOY_TARGET', '--', 'true'], { DEPLOY_TARGET: undefined }),
    run(['enqueue', ...q, '--', 'fsjob-not-installed-anywhere', '--version']),
    run(['enqueue', ...q, '--', 'sh', '-c', 'true']),
    run(['enqueue', ...q, '--', './no-such-script.sh']),
  ]);
  assert.is(passed.status, 0, passed.stderr);
  assert.equal((await spec(queue, passed.stdout.trim())).env, { DEPLOY_TARGET: 'staging=2', MODE: 'fast' }, 'the value as this shell has it, "=" and all');
  assert.equal([unset.status, unset.stdout], [2, '']);
  assert.match(unset.stderr, /--env DEPLOY_TARGET: DEPLOY_TARGET is not set in this environment/);
  assert.is(notOnPath.status, 0, 'the job is accepted: the consumer may run elsewhere');
  assert.match(notOnPath.stderr, /warning: fsjob-not-installed-anywhere is not on the job's PATH \(\/usr\/local\/bin:\/usr\/bin:\/bin\), so the job will fail with exit 127/);
  assert.is(found.stderr, '', 'no warning for a command the job will find');
  assert.match(relative.stderr, /warning: \.\/no-such-script\.sh is not an executable file here/);
  await drain(queue);
  const logs = await run(['logs', ...q, passed.stdout.trim()]);
  assert.is(logs.stdout, 'staging=2 fast\n', 'the job saw the passed value');
  assert.is((await receipt(queue, notOnPath.stdout.trim())).exit_code, 127, 'and the warning was right');
});

day('paper cuts: -q on every queue command, several ids or a clear "one id", errors that name the flag and its limit, clause ids only with --verbose', async () => {
  const { dir, queue, q, run } = await setup();
  const a = await enqueue(queue, { argv: ['sh', '-c', 'echo a'] });
  const b = await enqueue(queue, { argv: ['sh', '-c', 'echo b >&2; exit 4'] });
  const work = await run(['work', ...q, '--drain']);
  assert.is(work.status, 0, `work takes -q: ${work.stderr}`);
  const [recover, validate, waitBoth, logsBoth, follow, timeout, lease, init, cwdWarn, cwdVerbose, badId] = await Promise.all([
    run(['recover', ...q]),
    run(['validate', ...q]),
    run(['wait', ...q, a.id, b.id]),
    run(['logs', ...q, a.id, b.id]),
    run(['logs', ...q, '--follow', a.id, b.id]),
    run(['enqueue', ...q, '--timeout', '8d', '--', 'true']),
    run(['work', ...q, '--lease', '1']),
    run(['init', '-q', '/proc/fsjob-nope']),
    run(['enqueue', ...q, '--cwd', queue.root, '--', 'true']),
    run(['enqueue', ...q, '--verbose', '--cwd', queue.root, '--', 'true']),
    run(['status', ...q, 'zz']),
  ]);
  assert.is(recover.status, 0, recover.stderr);
  assert.is(validate.status, 0, validate.stdout);
  assert.is(waitBoth.status, 4, 'several ids: the exit code of the first job that did not exit 0');
  assert.is(waitBoth.stdout, `${a.id} succeeded (exit code 0)\n${b.id} failed (exit code 4): exited with status 4\n`);
  assert.is(logsBoth.stdout, `==> ${a.id} <==\na\n\n==> ${b.id} <==\n`);
  assert.equal([follow.status, follow.stderr.trim()], [2, 'fsjob: logs --follow takes one job id, not 2 (see fsjob --help)']);
  assert.equal([timeout.status, timeout.stderr.trim()], [2, 'fsjob: --timeout 8d is too large: at most 7d (see fsjob --help)']);
  assert.equal([lease.status, lease.stderr.trim()], [2, 'fsjob: --lease 1 is too small: at least 3s (see fsjob --help)'], 'refused before any "serving" line');
  assert.is(init.status, 1);
  assert.match(init.stderr, /cannot create \/proc\/fsjob-nope: \/proc exists but does not take new directories/);
  assert.match(cwdWarn.stderr, /lies inside the queue; a consumer will reject the job \(cwd_unusable\)/);
  assert.match(cwdVerbose.stderr, /\(EXEC-5, cwd_unusable\)/, '--verbose keeps the clause');
  assert.is(badId.status, 2);
  assert.not.match(badId.stderr, /LAYOUT-4/);
  void dir;
});

day('status: counts at the top, --status by status or outcome, short ids, a shell-quoted COMMAND and a current JOBS column', async () => {
  const { dir, queue, q, run } = await setup();
  const quoted = await enqueue(queue, { argv: ['sh', '-c', "echo 'it''s'; exit 2"] });
  const ok = await enqueue(queue, { argv: ['true'] });
  await drain(queue);
  const waiting = await enqueue(queue, { argv: ['sleep', '1'] });
  // A live worker that runs `waiting` right now, as its open claim says; its registration (renewed every lease/3) still lists nothing.
  const self = await selfIdentity();
  await registerWorker(queue, 'abcdefabcdefabcd');
  await writeClaim(queue, waiting.id, 1, self, 'abcdefabcdefabcd');
  const [table, failed, short, hex] = await Promise.all([
    run(['status', ...q]),
    run(['status', ...q, '--status', 'failed']),
    run(['status', ...q, quoted.id.slice(0, 19)]),
    run(['status', ...q, ok.id.slice(20, 28)]),
  ]);
  assert.is(table.status, 0, table.stderr);
  const lines = table.stdout.split('\n');
  assert.is(lines[0], '3 jobs: 1 claimed, 2 finished (1 succeeded, 1 failed)');
  assert.ok(lines.some((line) => line.startsWith(quoted.id) && line.endsWith(`sh -c 'echo '\\''it'\\'''\\''s'\\''; exit 2'`)), table.stdout);
  assert.match(table.stdout, /abcdefabcdefabcd +pid \d+ on .+ +serving +1\/1 /, `JOBS counts the open claim naming the worker: ${table.stdout}`);
  assert.equal(failed.stdout.split('\n').filter((line) => /^\d{19}-/.test(line)).map((line) => line.slice(0, 36)), [quoted.id]);
  assert.match(short.stdout, new RegExp(`^job +${quoted.id}$`, 'm'), 'a unique prefix of the id');
  assert.match(hex.stdout, new RegExp(`^job +${ok.id}$`, 'm'), 'a unique prefix of its hex part');
  const ids = [quoted.id, ok.id, waiting.id];
  let common = quoted.id;
  while (!ids.every((id) => id.startsWith(common))) common = common.slice(0, -1);
  const ambiguous = await run(['status', ...q, common]);
  assert.equal(ambiguous.status, 2);
  assert.match(ambiguous.stderr, /is the start of 3 job ids .*type more of it/);
  void dir;
});

day('retry enqueues a finished job again (stdin and all, labelled retry-of); gc ID removes one finished job; gc without a selection removes nothing', async () => {
  const { dir, queue, q, run } = await setup();
  const failing = await enqueue(queue, { argv: ['sh', '-c', 'cat; exit 5'], stdin_text: 'input\n', max_attempts: 1, labels: { team: 'web' } });
  const early = await run(['retry', ...q, failing.id]);
  assert.equal([early.status, early.stdout], [2, ''], 'a job without a receipt is not retried');
  await drain(queue);
  const retried = await run(['retry', ...q, failing.id.slice(20, 30)]);
  assert.is(retried.status, 0, retried.stderr);
  const copy = await spec(queue, retried.stdout.trim());
  const original = await spec(queue, failing.id);
  assert.equal([copy.argv, copy.stdin, copy.labels], [original.argv, original.stdin, { team: 'web', 'retry-of': failing.id }]);
  // A receipt.json hard-linked from another job's names that job (REC-7): damaged, not finished (issue 28 point 4).
  const linked = await enqueue(queue, { argv: ['true'] });
  linkSync(queue.paths.jobFile(failing.id, 'receipt.json'), queue.paths.jobFile(linked.id, 'receipt.json'));
  const jobsBefore = await readdir(queue.paths.dir('jobs'));
  const damaged = await run(['retry', ...q, linked.id]);
  assert.equal([damaged.status, damaged.stdout], [1, ''], `a job whose receipt is another job's is not retried: ${damaged.stderr}`);
  assert.match(damaged.stderr, /receipt\.json exists but is not a valid receipt/);
  assert.equal(await readdir(queue.paths.dir('jobs')), jobsBefore, 'nothing was enqueued');
  rmSync(queue.paths.job(linked.id), { recursive: true });
  await drain(queue);
  const logs = await run(['logs', ...q, retried.stdout.trim()]);
  assert.is(logs.stdout, 'input\n', 'the same stdin bytes');
  const [bare, one] = await Promise.all([run(['gc', ...q]), run(['gc', ...q, failing.id])]);
  assert.equal([bare.status, bare.stdout], [2, '']);
  assert.match(bare.stderr, /say which with job ids, --keep N, --older-than 7d, or --all/);
  assert.is(one.status, 0, one.stderr);
  assert.equal(await readdir(queue.paths.dir('jobs')), [retried.stdout.trim()], 'only the named job went');
  const unfinished = await enqueue(queue, { argv: ['true'] });
  const refused = await run(['gc', ...q, unfinished.id]);
  assert.is(refused.status, 1);
  assert.match(refused.stderr, /left job .* alone: it is not finished/);
  assert.ok(existsSync(queue.paths.job(unfinished.id)));
  void dir;
});

day('wait and logs --follow say when no live worker serves the queue, and when one does', async () => {
  const { dir, queue, q } = await setup();
  const job = await enqueue(queue, { argv: ['sh', '-c', 'echo served'] });
  const waiter = startFsjob(['wait', ...q, job.id], { cwd: dir });
  const follower = startFsjob(['logs', ...q, '--follow', job.id], { cwd: dir });
  await waiter.waitForStderr('no live worker serves', 'the advice of wait');
  await follower.waitForStderr('no live worker serves', 'the advice of logs --follow');
  const worker = startFsjob(['work', ...q], { cwd: dir });
  const [waited, followed] = await Promise.all([waiter.result, follower.result]);
  worker.child.kill('SIGTERM');
  await worker.result;
  assert.is(waited.status, 0, waited.stderr);
  assert.match(waited.stderr, new RegExp(`no live worker serves ${queue.root}, so the job waits until one does \\(start one: fsjob work -q ${queue.root}\\)`));
  assert.is(followed.stdout, 'served\n');
});

day('a delayed start (--delay, --at), output_keep in logs, and pause/resume with a live worker', async () => {
  const { dir, queue, q, run } = await setup();
  const [delayed, past, garbage, tail, both] = await Promise.all([
    run(['enqueue', ...q, '--delay', '1h', '--', 'echo', 'later']),
    run(['enqueue', ...q, '--at', '2001-01-01T00:00Z', '--', 'true']),
    run(['enqueue', ...q, '--at', 'soonish', '--', 'true']),
    run(['enqueue', ...q, '--output-keep', 'tail', '--max-output', '20', '--', 'seq', '1', '100']),
    run(['enqueue', ...q, '--output-keep', 'head_tail', '--max-output', '20', '--', 'seq', '1', '100']),
  ]);
  assert.is(delayed.status, 0, delayed.stderr);
  const delayedId = delayed.stdout.trim();
  const delayedSpec = await spec(queue, delayedId);
  assert.equal([delayedSpec.fsjob, typeof delayedSpec.not_before_ms], ['1.2', 'number'], 'a spec written by this version says 1.2 (VER-4)');
  assert.equal([past.status, garbage.status], [2, 2]);
  assert.match(past.stderr, /--at 2001-01-01T00:00Z is in the past/);
  assert.match(garbage.stderr, /--at "soonish" is not a time/);
  const drained = await run(['work', ...q, '--drain']);
  assert.is(drained.status, 0, drained.stderr);
  assert.not.ok(existsSync(queue.paths.jobFile(delayedId, 'claim.1.json')), 'a job delayed by an hour is not claimed (DELAY-1)');
  const [table, detail, tailLogs, bothLogs, raw] = await Promise.all([
    run(['status', ...q]),
    run(['status', ...q, delayedId]),
    run(['logs', ...q, tail.stdout.trim()]),
    run(['logs', ...q, both.stdout.trim()]),
    run(['logs', ...q, '--raw', tail.stdout.trim()]),
  ]);
  assert.match(table.stdout, /^3 jobs: 1 delayed, 2 finished \(2 succeeded\)$/m);
  assert.match(detail.stdout, /^starts +not before \S+ \(in (59|60)m\)$/m);
  assert.is(tailLogs.stdout, '[truncated: 272 bytes dropped]\n\n95\n96\n97\n98\n99\n100\n', 'the marker stands before the kept tail');
  assert.is(bothLogs.stdout, '1\n2\n3\n4\n5\n[truncated: 272 bytes dropped]\n98\n99\n100\n', 'and between the two halves');
  assert.equal([raw.stdout, raw.stderr.trim()], ['\n95\n96\n97\n98\n99\n100\n', `fsjob: ${tail.stdout.trim()} stdout: [truncated: 272 bytes dropped]`], '--raw: exactly the kept bytes');

  const worker = startFsjob(['work', ...q], { cwd: dir });
  await worker.waitForStderr('serving', 'its first line');
  const paused = await run(['pause', ...q, '--reason', 'maintenance']);
  assert.is(paused.status, 0, paused.stderr);
  await worker.waitForStderr('is paused (pause.json exists): claiming nothing there', 'the paused line');
  const waiting = await enqueue(queue, { argv: ['echo', 'after the pause'] });
  const [pausedTable, oneShot] = await Promise.all([run(['status', ...q]), run(['work', ...q, '--drain'])]);
  assert.match(pausedTable.stdout, /^PAUSED since \S+ \(\d+s ago, by pid \d+ on .+\): maintenance; no job is claimed until fsjob resume$/m);
  assert.is(oneShot.status, 0, oneShot.stderr);
  assert.not.ok(existsSync(queue.paths.jobFile(waiting.id, 'claim.1.json')), 'nothing is claimed from a paused queue (PAUSE-1)');
  const resumed = await run(['resume', ...q]);
  assert.is(resumed.status, 0, resumed.stderr);
  const waited = await run(['wait', ...q, '--timeout', '60s', waiting.id]);
  assert.is(waited.status, 0, `the live worker runs it once resumed: ${waited.stdout} ${waited.stderr}`);
  await worker.waitForStderr('is resumed: claiming again', 'the resumed line');
  worker.child.kill('SIGTERM');
  assert.is((await worker.result).status, 0);
});

day('the demo removes its temporary directory (--keep keeps it: test/cli/json-output.test.ts)', async () => {
  const dir = await freshDir('fsjob-demo-test');
  const before = (await readdir(tmpdir())).filter((name) => name.startsWith('fsjob-demo-'));
  const demo = await runFsjob(['demo'], { cwd: dir });
  assert.is(demo.status, 0, demo.stderr);
  assert.match(demo.stdout, /the demo queue was removed/);
  const after = (await readdir(tmpdir())).filter((name) => name.startsWith('fsjob-demo-'));
  assert.equal(after.filter((name) => !before.includes(name)), [], 'nothing new in the temporary directory');
});

day('--after, --hold and release as a pueue user types them: blocked and held in status, release --json, exits 1/2/4, a failed dependency cancels (wait exits 130)', async () => {
  const { queue, q, run } = await setup();
  const build = await enqueue(queue, { argv: ['sh', '-c', 'exit 3'] });
  const [tests, cleanup, held, noLane, badWhen] = await Promise.all([
    run(['enqueue', ...q, '--after', build.id, '--', 'echo', 'tests']),
    run(['enqueue', ...q, '--after', `${build.id.slice(20, 28)}:finished`, '--', 'echo', 'cleanup']),
    run(['enqueue', ...q, '--hold', '--lane', 'db', '--label', 'batch=nightly', '--', 'echo', 'migrate']),
    run(['enqueue', ...q, '--lane-slots', '3', '--', 'true']),
    run(['enqueue', ...q, '--after', `${build.id}:maybe`, '--', 'true']),
  ]);
  for (const done of [tests, cleanup, held]) assert.is(done.status, 0, done.stderr);
  assert.ok(existsSync(queue.paths.gatedJob(held.stdout.trim())), 'GATE-1: published at jobs/<id>.gated');
  assert.equal([noLane.status, badWhen.status], [2, 2]);
  assert.match(noLane.stderr, /--lane-slots needs --lane/);
  assert.match(badWhen.stderr, /ID:finished/);
  const [blocked, heldStatus, neverHeld, none, missing] = await Promise.all([
    run(['status', ...q, tests.stdout.trim()]),
    run(['status', ...q, held.stdout.trim()]),
    run(['release', ...q, build.id]),
    run(['release', ...q]),
    run(['release', ...q, '1764476044123456789-3fa2c1d09b8e7f64']),
  ]);
  assert.match(blocked.stdout, /^status +blocked$/m);
  assert.match(blocked.stdout, new RegExp(`^after +${build.id} \\(succeeded: pending\\)$`, 'm'));
  assert.match(heldStatus.stdout, /^status +held$/m);
  assert.equal([neverHeld.status, none.status, missing.status], [1, 2, 4]);
  const released = await run(['release', ...q, '--json', '--label', 'batch=nightly']);
  assert.equal(JSON.parse(released.stdout), { released: [{ id: held.stdout.trim(), published: true, next: 'open', waiting_for: null }], refused: [] });
  assert.ok(existsSync(queue.paths.jobFile(held.stdout.trim(), 'release.json')), 'HOLD-2: opened by the releaser, release.json kept');
  await drain(queue);
  const [waitTests, waitCleanup] = await Promise.all([run(['wait', ...q, tests.stdout.trim()]), run(['wait', ...q, cleanup.stdout.trim()])]);
  assert.equal([waitTests.status, waitCleanup.status], [130, 0], 'AFTER-3: cancelled, exit 130; a finished dependency lets cleanup run');
  assert.match((await receipt(queue, tests.stdout.trim())).message ?? '', new RegExp(build.id));
});

day.run();
