import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { enqueue, freshQueue } from '../support/enqueue.ts';
import { deadIdentity, delay, drain, endOf, fileExists, jobFiles, publishClaim, publishExec, readJson, readyEntries, receiptOf, serve, waitFor } from '../support/consumer.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { processStart, selfIdentity, type Identity } from '../../src/model/identity.ts';
import { groupState } from '../../src/model/groups.ts';
import { encodeRecord, type ExecRecord, type HoldRecord, type WorkerRecord } from '../../src/records/codec.ts';
import { ensurePrivateDir, publishRecord } from '../../src/fs/safefs.ts';
import { keyHash } from '../../src/model/layout.ts';
import { PROTOCOL_VERSION } from '../../src/base/constants.ts';
import { recover } from '../../src/consumer/index.ts';

async function liveProcess(detached = false): Promise<{ child: ChildProcess; identity: Identity }> {
  const child = spawn('sleep', ['100'], { detached, stdio: 'ignore' });
  await once(child, 'spawn');
  const pid = child.pid as number;
  const info = await processStart(pid);
  return { child, identity: { ...(await selfIdentity()), pid, start: (info as { start: string }).start } };
}

async function killed(child: ChildProcess): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    child.kill('SIGKILL');
    await once(child, 'exit');
  }
}

const loss = suite('ownership loss (CLAIM-7, OWN-1)');
loss.after(cleanupAll);

loss('a superseded owner kills its command at once and publishes nothing more', async () => {
  const q = await freshQueue();
  const dir = await freshDir('own');
  const marker = join(dir, 'finished');
  const id = await enqueue(q, { argv: ['sh', '-c', `sleep 2; touch ${marker}`] });
  const { worker, done } = serve(q);
  await waitFor('exec.1.json', () => fileExists(q.paths.jobFile(id, 'exec.1.json')));
  const exec = readJson<ExecRecord>(q.paths.jobFile(id, 'exec.1.json'));
  assert.ok(exec.group !== null);
  // Another consumer takes generation 2 (a live owner: this very process).
  await publishClaim(q, id, 2, await selfIdentity());
  await waitFor('the group is stopped', async () => (await groupState(exec.group!)) === 'stopped', 5_000);
  await delay(2_500);
  worker.stop();
  const summary = await done;
  assert.not.ok(fileExists(marker), 'the command was killed before it finished');
  assert.equal(jobFiles(q, id).filter((name) => /^(receipt|end\.1|exec\.2)/.test(name)), [], 'no receipt, no end from the old owner');
  assert.is(summary.superseded, 1);
});

loss.run();

const liveness = suite('whose claim may be broken (CLAIM-3, ID-6, RECOV-1)');
liveness.after(cleanupAll);

liveness("a live owner's claim is never broken", async () => {
  const q = await freshQueue();
  const owner = await liveProcess();
  try {
    const id = await enqueue(q, { argv: ['true'] });
    await publishClaim(q, id, 1, owner.identity, Date.now() - 3_600_000);
    const { summary } = await drain(q);
    const report = await recover(q);
    assert.is(summary.claimed, 0);
    assert.equal(jobFiles(q, id), ['claim.1.json', 'spec.json']);
    assert.equal(report.claimsBroken, []);
  } finally {
    await killed(owner.child);
  }
});

liveness('an owner whose pid was reused is dead: its orphan is claimed and run', async () => {
  const q = await freshQueue();
  const id = await enqueue(q, { argv: ['true'] });
  let newcomer: ChildProcess | undefined;
  let owner: Identity | undefined;
  // Other processes on a busy machine take pids too: try until the pid comes back.
  for (let attempt = 1; attempt <= 100 && newcomer === undefined; attempt++) {
    const victim = await liveProcess();
    await delay(30); // the newcomer must start on a later clock tick
    await killed(victim.child);
    // Synchronously, so nothing of ours runs between choosing the pid and taking it.
    writeFileSync('/proc/sys/kernel/ns_last_pid', String(victim.identity.pid - 1));
    const candidate = spawn('sleep', ['100'], { stdio: 'ignore' });
    await once(candidate, 'spawn');
    if (candidate.pid === victim.identity.pid) {
      newcomer = candidate;
      owner = victim.identity;
    } else await killed(candidate);
  }
  assert.ok(newcomer !== undefined && owner !== undefined, 'could not get the same pid back in 100 attempts');
  try {
    assert.is.not((await processStart(owner.pid))?.start, owner.start);
    await publishClaim(q, id, 1, owner);
    const { events } = await drain(q);
    const r = receiptOf(q, id);
    assert.is(r.outcome, 'succeeded');
    assert.is(r.gen, 2);
    assert.ok(events.some((e) => e.type === 'claimed' && e.recovered));
    assert.is(newcomer.exitCode, null, 'the process that reused the pid was not signalled');
  } finally {
    await killed(newcomer);
  }
});

liveness("a dead owner's running group is stopped (TERM) before its claim is broken", async () => {
  const q = await freshQueue();
  const id = await enqueue(q, { argv: ['true'], max_attempts: 1 });
  const group = await liveProcess(true); // a group leader of its own, as the gate is
  const dead = await deadIdentity();
  await publishClaim(q, id, 1, dead);
  await publishExec(q, id, 1, 1, { pgid: group.identity.pid, start: group.identity.start, boot_id: dead.boot_id, pid_ns: dead.pid_ns });
  const exited = once(group.child, 'exit');
  const report = await recover(q);
  const [, signal] = await exited;
  assert.is(signal, 'SIGTERM');
  assert.equal(report.claimsBroken.map((c) => c.job_id), [id]);
  assert.equal(report.receipts.map((r) => [r.outcome, r.reason, r.exit_code]), [['lost', 'owner_lost', 125]]);
  assert.is(receiptOf(q, id).stdout, null, 'the dead generation left no output files');
});

liveness('a recorded pgid now led by another process is never signalled, and proves the group gone (ID-8, ID-9)', async () => {
  const q = await freshQueue();
  const id = await enqueue(q, { argv: ['true'], max_attempts: 2 });
  const bystander = await liveProcess(true);
  try {
    const dead = await deadIdentity();
    await publishClaim(q, id, 1, dead);
    await publishExec(q, id, 1, 1, { pgid: bystander.identity.pid, start: '1', boot_id: dead.boot_id, pid_ns: dead.pid_ns });
    const report = await recover(q);
    assert.equal(report.requeued, [{ job_id: id, gen: 2 }]);
    assert.is(endOf(q, id, 2).reason, 'released');
    assert.is(endOf(q, id, 2).counted, false);
    assert.is(bystander.child.exitCode, null);
    assert.is(bystander.child.signalCode, null);
    // The next consumer runs attempt 2.
    await drain(q);
    assert.is(receiptOf(q, id).attempts, 2);
    assert.is(receiptOf(q, id).outcome, 'succeeded');
  } finally {
    await killed(bystander.child);
  }
});

liveness('an execution that cannot be proven stopped is left alone and reported UNPROVEN', async () => {
  const q = await freshQueue();
  const id = await enqueue(q, { argv: ['true'] });
  await publishClaim(q, id, 1, await deadIdentity());
  await publishRecord(q.paths.job(id), 'exec.1.json', 'not a record\n', 'link', q.fsOptions);
  const { summary } = await drain(q);
  const report = await recover(q);
  assert.is(summary.claimed, 0);
  assert.is(summary.unproven, 1);
  assert.equal(report.unproven.map((u) => [u.job_id, u.gen]), [[id, 1]]);
  assert.equal(jobFiles(q, id), ['claim.1.json', 'exec.1.json', 'spec.json']);
});

liveness.run();

const sweep = suite('recover: index, temporary files, registrations, holds (READY-4, TEMP-1, WORKER-1, GC-2)');
sweep.after(cleanupAll);

sweep('recover rebuilds missing ready entries and removes only stale temporary files, dead registrations and lower holds', async () => {
  const q = await freshQueue();
  const id = await enqueue(q, { argv: ['true'] });
  for (const entry of readdirSync(q.paths.dir('ready'))) unlinkSync(join(q.paths.dir('ready'), entry));
  const old = Date.now() / 1000 - 7200;
  const stale = [q.paths.jobFile(id, '.claim.1.json.0123456789abcdef'), join(q.root, 'tmp', '.gc-x'), join(q.paths.dir('ready'), '.tmp')];
  for (const path of stale) {
    writeFileSync(path, 'x', { mode: 0o600 });
    utimesSync(path, old, old);
  }
  const fresh = join(q.root, 'tmp', '.fresh');
  writeFileSync(fresh, 'x', { mode: 0o600 });
  const dead = await deadIdentity();
  const registration = (workerId: string, owner: Identity): WorkerRecord => ({
    fsjob: PROTOCOL_VERSION, type: 'worker', worker_id: workerId, owner, started_ms: Date.now(), heartbeat_ms: Date.now(), lease_ms: 30_000, concurrency: 1, mode: 'serving', jobs: [], handlers: [],
  });
  await publishRecord(q.paths.dir('workers'), '00000000000000aa.json', encodeRecord('worker', registration('00000000000000aa', dead)), 'rename', q.fsOptions);
  await publishRecord(q.paths.dir('workers'), '00000000000000bb.json', encodeRecord('worker', registration('00000000000000bb', await selfIdentity())), 'rename', q.fsOptions);
  const holdDir = join(q.paths.dir('lanes'), keyHash('site'));
  await ensurePrivateDir(holdDir, q.fsOptions);
  for (const n of [1, 2, 3]) {
    const hold: HoldRecord = { fsjob: PROTOCOL_VERSION, type: 'hold', kind: 'lane', key: 'site', job_id: id, gen: n, owner: dead, created_ms: Date.now() };
    await publishRecord(holdDir, `${n}.json`, encodeRecord('hold', hold), 'link', q.fsOptions);
  }
  const report = await recover(q);
  assert.equal(report.readyRebuilt, [id]);
  assert.is(readyEntries(q).length, 1);
  assert.equal([...report.tempRemoved].sort(), [...stale].sort());
  for (const path of stale) assert.not.ok(fileExists(path));
  assert.ok(fileExists(fresh), 'a temporary file younger than TEMP_MAX_AGE stays');
  assert.equal(report.workersRemoved, ['00000000000000aa']);
  assert.equal(readdirSync(q.paths.dir('workers')), ['00000000000000bb.json']);
  assert.equal(readdirSync(holdDir), ['3.json'], 'the highest hold is never removed (LANE-3)');
  assert.equal(report.unproven, []);
});

sweep.run();
