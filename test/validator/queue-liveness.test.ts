/**
 * fsjob validate QUEUE, liveness (spec/identity.md and spec/recovery-and-gc.md): claims of real dead
 * processes, of a really reused pid, of a foreign host whose lease expired,
 * orphans whose command still runs, orphans whose execution cannot be
 * proven stopped, owners the process table will not describe, and stale
 * worker registrations. Live owners are never reported, and every owner is
 * judged from one read of /proc however many claims it holds.
 */
import * as fsp from 'node:fs/promises';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { GUARDIAN_LIMIT, LEASE_SKEW } from '../../src/base/constants.ts';
import { processStart, selfIdentity, type Identity, type IdentityOptions } from '../../src/model/identity.ts';
import { cleanupAll } from '../support/helpers.ts';
import { audit, claim, codes, deadIdentity, enqueue, exec, expectFinding, killChildren, liveGroup, newQueue, registerWorker } from '../support/validate-queue.ts';

const after: (() => void)[] = [];
const owners = suite('claim owners (ID-6, ID-7, RECOV-1)');
owners.after(async () => {
  for (const undo of after.splice(0)) undo();
  await killChildren();
  await cleanupAll();
});

owners('a claim whose owner is alive (this process, or a foreign host within its lease) is not reported', async () => {
  const queue = await newQueue();
  const mine = (await enqueue(queue)).id;
  await claim(queue, mine, 1);
  await exec(queue, mine, 1, { group: (await liveGroup()).group });
  const foreign = (await enqueue(queue)).id;
  await claim(queue, foreign, 1, { owner: { ...(await selfIdentity()), host: 'far', boot_id: 'another-boot' }, claimed_ms: Date.now(), lease_ms: 30_000 });
  const result = await audit(queue);
  assert.equal(result.findings, []);
});

owners('a claim whose owner process died is ORPHANED_CLAIM (warning: run fsjob recover)', async () => {
  const queue = await newQueue();
  const { id } = await enqueue(queue);
  await claim(queue, id, 1, { owner: await deadIdentity() });
  const result = await audit(queue);
  expectFinding(result, 'ORPHANED_CLAIM', { path: join(queue.paths.job(id), 'claim.1.json'), clause: 'RECOV-1', jobId: id, severity: 'warning' });
  assert.equal(codes(result), ['ORPHANED_CLAIM']);
});

owners('a claim whose owner pid was REALLY reused (ns_last_pid) is ORPHANED_CLAIM although the pid is alive', async () => {
  const queue = await newQueue();
  const { id } = await enqueue(queue);
  let reused: Identity | undefined;
  for (let attempt = 1; attempt <= 20 && reused === undefined; attempt++) {
    const victim = spawn('sleep', ['100']);
    await new Promise<void>((resolve) => victim.once('spawn', resolve));
    const pid = victim.pid as number;
    const owner: Identity = { ...(await selfIdentity()), pid, start: (await processStart(pid))?.start ?? '0' };
    await delay(30); // the newcomer must start on a later clock tick
    victim.kill('SIGKILL');
    await new Promise<void>((resolve) => (victim.exitCode !== null || victim.signalCode !== null ? resolve() : victim.once('exit', () => resolve())));
    // The write and the fork happen in one already running shell, microseconds
    // apart: every other fork on the machine in between takes the pid instead
    // (node's own spawn leaves a window that a loaded machine fills every time).
    const helper = spawn('sh', ['-c', `echo ${pid - 1} > /proc/sys/kernel/ns_last_pid; sleep 100 & echo $!; wait`], { detached: true, stdio: ['ignore', 'pipe', 'ignore'] });
    const line = await new Promise<string>((resolve) => {
      let out = '';
      helper.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('\n')) resolve(out.trim());
      });
      helper.once('exit', () => resolve(out.trim()));
    });
    after.push(() => {
      try {
        process.kill(-(helper.pid as number), 'SIGKILL');
      } catch {
        // already gone
      }
    });
    if (Number(line) === pid) reused = owner;
  }
  if (reused === undefined) return assert.unreachable('could not get a pid back through ns_last_pid in 20 attempts');
  assert.ok((await processStart(reused.pid)) !== null, 'the pid is in use again');
  await claim(queue, id, 1, { owner: reused });
  const result = await audit(queue);
  expectFinding(result, 'ORPHANED_CLAIM', { path: join(queue.paths.job(id), 'claim.1.json'), clause: 'RECOV-1', jobId: id });
});

owners('a foreign claim (another boot_id) is ORPHANED_CLAIM once lease + guardian limit + skew passed since its last renewal, judged by the lease alone (LEASE-3)', async () => {
  const queue = await newQueue();
  const { id } = await enqueue(queue);
  // Its pid is this very process: alive here, which must not matter for a foreign owner.
  const owner = { ...(await selfIdentity()), host: 'far', boot_id: 'another-boot' };
  const edge = Date.now() - 1000;
  await claim(queue, id, 1, { owner, claimed_ms: edge - 3000 - GUARDIAN_LIMIT - LEASE_SKEW, lease_ms: 3000 });
  // Long past lease + skew, but its guardian may still be stopping its commands (WORKER-2).
  assert.equal((await audit(queue, { now: () => edge })).findings, []);
  const result = await audit(queue, { now: () => edge + 1 });
  expectFinding(result, 'ORPHANED_CLAIM', { path: join(queue.paths.job(id), 'claim.1.json'), clause: 'RECOV-1', jobId: id });
});

owners.run();

const executions = suite('orphaned executions (ID-8, RECOV-1)');
executions.after(async () => {
  await killChildren();
  await cleanupAll();
});

executions('a dead owner whose recorded process group still runs is ORPHAN_RUNNING (warning)', async () => {
  const queue = await newQueue();
  const { id } = await enqueue(queue);
  await claim(queue, id, 1, { owner: await deadIdentity() });
  await exec(queue, id, 1, { group: (await liveGroup()).group });
  const result = await audit(queue);
  expectFinding(result, 'ORPHAN_RUNNING', { path: join(queue.paths.job(id), 'exec.1.json'), clause: 'RECOV-1', jobId: id, severity: 'warning' });
  assert.equal(codes(result), ['ORPHAN_RUNNING']);
});

executions('a dead owner whose group is gone, or whose payload execution died with it, is ORPHANED_CLAIM', async () => {
  const queue = await newQueue();
  const command = (await enqueue(queue)).id;
  const { child, group } = await liveGroup();
  child.kill('SIGKILL');
  await new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await claim(queue, command, 1, { owner: await deadIdentity() });
  await exec(queue, command, 1, { group });
  const payload = (await enqueue(queue, { handler: 'h' })).id;
  await claim(queue, payload, 1, { owner: await deadIdentity() });
  await exec(queue, payload, 1, { group: null });
  const result = await audit(queue);
  assert.equal(
    result.findings.map((finding) => [finding.code, finding.job_id, finding.clause]).sort(),
    [
      ['ORPHANED_CLAIM', command, 'RECOV-1'],
      ['ORPHANED_CLAIM', payload, 'RECOV-1'],
    ].sort(),
  );
});

executions('a dead owner whose execution cannot be proven stopped is ORPHAN_UNPROVEN (error: quarantined)', async () => {
  const queue = await newQueue();
  // The group was recorded on another host whose lease has not run out: nothing here can prove it stopped.
  const foreignGroup = (await enqueue(queue)).id;
  await claim(queue, foreignGroup, 1, { owner: await deadIdentity(), claimed_ms: Date.now() });
  const self = await selfIdentity();
  await exec(queue, foreignGroup, 1, { group: { pgid: 4242, start: '1', boot_id: 'another-boot', pid_ns: self.pid_ns } });
  // The exec record exists but cannot be read: its group is unknown.
  const unreadable = (await enqueue(queue)).id;
  await claim(queue, unreadable, 1, { owner: await deadIdentity() });
  await exec(queue, unreadable, 1);
  await fsp.writeFile(join(queue.paths.job(unreadable), 'exec.1.json'), '{"fsjob":"1.0"');
  const result = await audit(queue);
  const unproven = result.findings.filter((finding) => finding.code === 'ORPHAN_UNPROVEN').map((finding) => [finding.job_id, finding.path, finding.clause, finding.severity]);
  assert.equal(unproven.sort(), [
    [foreignGroup, join(queue.paths.job(foreignGroup), 'exec.1.json'), 'RECOV-1', 'error'],
    [unreadable, join(queue.paths.job(unreadable), 'exec.1.json'), 'RECOV-1', 'error'],
  ].sort());
});

executions('a dead owner\'s foreign group is proven stopped only once its lease + guardian limit + skew passed (ID-8, LEASE-3)', async () => {
  const queue = await newQueue();
  const { id } = await enqueue(queue);
  const edge = Date.now() - 1000;
  await claim(queue, id, 1, { owner: await deadIdentity(), claimed_ms: edge - 3000 - GUARDIAN_LIMIT - LEASE_SKEW, lease_ms: 3000 });
  const self = await selfIdentity();
  await exec(queue, id, 1, { group: { pgid: 4242, start: '1', boot_id: 'another-boot', pid_ns: self.pid_ns } });
  assert.equal(codes(await audit(queue, { now: () => edge })), ['ORPHAN_UNPROVEN']);
  assert.equal(codes(await audit(queue, { now: () => edge + 1 })), ['ORPHANED_CLAIM']);
});

executions.run();

const judged = suite('how owners are judged');
judged.after(async () => {
  await killChildren();
  await cleanupAll();
});

function errnoError(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: injected`), { code });
}

judged('an owner the process table will not describe (EACCES) is OWNER_UNKNOWN (info), never orphaned', async () => {
  const queue = await newQueue();
  const { id } = await enqueue(queue);
  const { owner } = await liveGroup();
  await claim(queue, id, 1, { owner });
  const identity: IdentityOptions = {
    fs: {
      ...fsp,
      readFile: (async (path: string, encoding: BufferEncoding) =>
        path === `/proc/${owner.pid}/stat` ? Promise.reject(errnoError('EACCES')) : fsp.readFile(path, encoding)) as typeof fsp.readFile,
    },
  };
  const result = await audit(queue, { identity });
  expectFinding(result, 'OWNER_UNKNOWN', { path: join(queue.paths.job(id), 'claim.1.json'), clause: 'ID-6', jobId: id, severity: 'info' });
  assert.equal(codes(result), ['OWNER_UNKNOWN']);
});

judged("one owner holding many claims has its /proc entry read once", async () => {
  const queue = await newQueue();
  const { owner } = await liveGroup();
  for (let i = 0; i < 5; i++) {
    const { id } = await enqueue(queue);
    await claim(queue, id, 1, { owner, claimed_ms: Date.now() - i });
  }
  let reads = 0;
  const identity: IdentityOptions = {
    fs: {
      ...fsp,
      readFile: (async (path: string, encoding: BufferEncoding) => {
        if (path === `/proc/${owner.pid}/stat`) reads += 1;
        return fsp.readFile(path, encoding);
      }) as typeof fsp.readFile,
    },
  };
  const result = await audit(queue, { identity });
  assert.equal(result.findings, []);
  assert.is(reads, 1);
});

judged('a worker registration whose owner is dead is WORKER_STALE (info); a live one is not reported', async () => {
  const queue = await newQueue();
  await registerWorker(queue, '00000000000000a1', { owner: await deadIdentity() });
  await registerWorker(queue, '00000000000000a2');
  const result = await audit(queue);
  expectFinding(result, 'WORKER_STALE', { path: join(queue.paths.dir('workers'), '00000000000000a1.json'), clause: 'WORKER-1', severity: 'info' });
  assert.equal(codes(result), ['WORKER_STALE']);
});

judged.run();
