/**
 * The injector's pause point forces an interleaving: the process drawing
 * the chosen call stops itself just before it, whatever else runs, and goes
 * on only when resumed. Each test repeats the race it forces and gets the
 * same winner every time.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { callFamily, runWithCrash, startWithCrash } from '../../conformance/crash/run.ts';
import { readStarts } from '../../conformance/runner/case.ts';
import { loadManifest } from '../../conformance/runner/manifest.ts';
import { startRolePaused } from '../../conformance/runner/pause.ts';
import { runRole } from '../../conformance/runner/process.ts';
import { createQueue, stageJob } from '../../conformance/runner/stage.ts';
import { logged } from '../../conformance/cases/jobs.ts';
import { readRecord } from '../../src/records/codec.ts';

const scratch = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fsjob-pause-test-')));
process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));

let dirs = 0;
function freshDir(label: string): string {
  const dir = path.join(scratch, `${label}-${++dirs}`);
  mkdirSync(dir);
  return dir;
}

function state(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  } catch {
    return undefined;
  }
}

const pause = suite('pause point');

pause('a read pause stops a process at its open of a file outside the root, before it reads it', async () => {
  const root = freshDir('read');
  const outside = path.join(freshDir('read-outside'), 'seen');
  writeFileSync(outside, 'before\n');
  const a = await startWithCrash({ argv: ['sh', '-c', `cat ${outside} > out`], cwd: root, root, pause: { read: outside } });
  const call = await a.paused;
  assert.ok(call !== undefined, 'the run paused');
  assert.is(callFamily(call.op), 'open');
  assert.is(call.path, outside);
  assert.is(state(call.pid), 'T', 'the paused process is stopped');
  writeFileSync(outside, 'after\n');
  a.resume();
  const result = await a.result;
  assert.is(result.exitCode, 0);
  assert.is(readFileSync(path.join(root, 'out'), 'utf8'), 'after\n', 'the open happened after the resume');
  const refused = await startWithCrash({ argv: ['true'], cwd: root, root, pause: { read: 'relative/path' } }).then(() => undefined, (error: unknown) => String(error));
  assert.match(refused ?? 'started', /absolute/, 'a relative read glob is refused');
});

pause('a fault fails a matching link before it happens, or (after) once it has happened, as a network client hears EEXIST for its own link', async () => {
  const root = freshDir('fault');
  const refused = await runWithCrash({ argv: ['sh', '-c', 'echo a > a; ln a b; echo "ln $?" > status'], cwd: root, root, fault: { op: 'link', path: 'b', errno: 'EPERM' } });
  assert.is(readFileSync(path.join(root, 'status'), 'utf8'), 'ln 1\n', 'ln saw the failure');
  assert.not.ok(existsSync(path.join(root, 'b')), 'the refused link did not happen');
  assert.is(refused.exitCode, 0);
  const lied = freshDir('fault');
  await runWithCrash({ argv: ['sh', '-c', 'echo a > a; ln a b; echo "ln $?" > status; ln a c; echo "ln $?" >> status'], cwd: lied, root: lied, fault: { op: 'link', errno: 'EEXIST', after: true, nth: 1 } });
  assert.is(readFileSync(path.join(lied, 'status'), 'utf8'), 'ln 1\nln 0\n', 'only the first link is reported failed');
  assert.ok(existsSync(path.join(lied, 'b')), 'the link reported failed did happen');
  assert.ok(existsSync(path.join(lied, 'c')));
  const bad = await startWithCrash({ argv: ['true'], cwd: lied, root: lied, fault: { op: 'link', errno: 'ENOTANERRNO' } }).then(() => 'started', (error: unknown) => String(error));
  assert.match(bad, /errno name/);
});

pause('a link paused by op and path loses, every time, to the link another process makes meanwhile', async () => {
  for (let round = 1; round <= 5; round++) {
    const root = freshDir('race');
    const a = await startWithCrash({ argv: ['sh', '-c', 'printf A > .a && ln .a target'], cwd: root, root, pause: { op: 'link', path: 'target' } });
    const call = await a.paused;
    assert.ok(call !== undefined, `round ${round}: the run paused`);
    assert.is(callFamily(call.op), 'link');
    assert.is(call.path2, path.join(root, 'target'));
    assert.is(state(call.pid), 'T', 'the paused process is stopped');
    assert.not.ok(existsSync(path.join(root, 'target')), 'the paused link has not happened');
    const b = spawnSync('sh', ['-c', 'printf B > .b && ln .b target'], { cwd: root });
    assert.is(b.status, 0);
    a.resume();
    const result = await a.result;
    assert.is.not(result.exitCode, 0, `round ${round}: A's link must fail, the name exists`);
    assert.is(result.paused?.k, call.k);
    assert.is(readFileSync(path.join(root, 'target'), 'utf8'), 'B', `round ${round}: B won`);
  }
});

pause('a pause at k stops before the k-th call: the disk holds exactly calls 1..k-1 until the resume', async () => {
  const root = freshDir('at-k');
  const script = 'mkdir d; printf x > d/f; sync d/f; mv d/f d/g; ln d/g d/h; rm d/g; sync d';
  const countRoot = freshDir('at-k-count');
  const counted = await runWithCrash({ argv: ['sh', '-c', script], cwd: countRoot, root: countRoot });
  const k = counted.calls.findIndex((c) => callFamily(c.op) === 'rename') + 1;
  assert.ok(k > 1);
  const run = await startWithCrash({ argv: ['sh', '-c', script], cwd: root, root, pause: { k } });
  const call = await run.paused;
  assert.is(call?.k, k);
  assert.ok(existsSync(path.join(root, 'd/f')) && !existsSync(path.join(root, 'd/g')), 'the rename waits');
  run.resume();
  const result = await run.result;
  assert.is(result.exitCode, 0, result.stderr);
  assert.is(readFileSync(path.join(root, 'd/h'), 'utf8'), 'x');
});

pause('nth picks the n-th matching call; a run that never reaches its pause point ends normally', async () => {
  const root = freshDir('nth');
  const run = await startWithCrash({ argv: ['sh', '-c', 'printf x > a; ln a b; ln a c; ln a d'], cwd: root, root, pause: { op: 'link', nth: 2 } });
  const call = await run.paused;
  assert.is(call?.path2, path.join(root, 'c'));
  assert.ok(existsSync(path.join(root, 'b')) && !existsSync(path.join(root, 'c')));
  run.resume();
  assert.is((await run.result).exitCode, 0);

  const never = await startWithCrash({ argv: ['sh', '-c', 'printf x > a'], cwd: root, root, pause: { op: 'rename' } });
  assert.is(await never.paused, undefined);
  assert.throws(() => never.resume(), /before the run paused/);
  const result = await never.result;
  assert.is(result.exitCode, 0);
  assert.is(result.paused, undefined);
});

pause('a pause point is k, or op and/or path, never both', async () => {
  const root = freshDir('bad');
  for (const bad of [{}, { k: 1, op: 'link' }, { k: 0 }, { op: 'link', nth: 0 }]) {
    await startWithCrash({ argv: ['true'], root, pause: bad }).then(
      () => assert.unreachable(`accepted ${JSON.stringify(bad)}`),
      (error: Error) => assert.instance(error, Error),
    );
  }
});

pause.run();

// ---------------------------------------------------------------------------
const consumers = suite('two consumers racing one claim (fsjob-sh)');

const SH = loadManifest(fileURLToPath(new URL('../../conformance/impls/sh/manifest.json', import.meta.url)));

consumers('the consumer paused before its claim link loses to the one that runs meanwhile, and the job runs once', async () => {
  for (let round = 1; round <= 2; round++) {
    const dir = freshDir('claim-race');
    const queue = path.join(dir, 'q');
    const log = path.join(dir, 'starts.log');
    const staged = await stageJob(await createQueue(queue), { argv: logged(log, 'job'), cwd: dir });
    const a = await startRolePaused(SH, 'consume', { queue }, { op: 'link', path: `jobs/${staged.id}/claim.1.json` });
    const call = await a.paused;
    assert.ok(call !== undefined, `round ${round}: consumer A paused before its claim`);
    const b = await runRole(SH, 'consume', { queue });
    assert.is(b.code, 0, b.stderr);
    a.resume();
    const result = await a.result;
    assert.is(result.exitCode, 0, result.stderr);
    assert.equal(await readStarts(log), ['job'], `round ${round}: the job started exactly once`);
    const claim = await readRecord(path.join(staged.dir, 'claim.1.json'), 'claim', { expectedJobId: staged.id, expectedGen: 1 });
    assert.ok(claim.ok);
    assert.is.not(claim.value.owner.pid, a.pid, `round ${round}: claim 1 belongs to B, not to the paused A`);
    assert.not.ok(existsSync(path.join(staged.dir, 'claim.2.json')), 'A claimed nothing after losing');
    const receipt = await readRecord(path.join(staged.dir, 'receipt.json'), 'receipt', { expectedJobId: staged.id });
    assert.ok(receipt.ok && receipt.value.outcome === 'succeeded');
  }
});

consumers.run();
