/**
 * Battery, multi-host (issue 6): consumers with different host identities
 * (FSJOB_HOST_OVERRIDE, src/model/identity.ts) over one queue. Between hosts
 * only leases decide (ID-7, LEASE-3):
 *
 * - a live foreign owner that keeps renewing is never judged dead, by
 *   `fsjob validate`, `fsjob recover` or another host's worker, even long
 *   after claimed_ms + lease + GUARDIAN_LIMIT + LEASE_SKEW;
 * - a crashed host's claim is not broken before its lease has expired: every
 *   claim g+1 over a foreign g is claimed after g's last renewal + lease_ms +
 *   GUARDIAN_LIMIT + LEASE_SKEW (checked from the records, so the machine's
 *   speed cannot make this pass or fail), though other hosts judge it while it
 *   is already past lease_ms + LEASE_SKEW (the guardian may still be stopping
 *   the commands of an owner that died just before its lease ran out);
 * - an expired claim is recovered exactly once (one broken generation, one
 *   receipt with the right outcome) while two workers and a `recover` of
 *   three other hosts race for it.
 *
 * "Crashing a host" kills its worker, its guardian and the recorded command
 * groups with SIGKILL: on a real crash nothing of the host survives.
 *
 * The claims of the 3 s leases are backdated by GUARDIAN_LIMIT after the
 * crash (the hosts claimed 10 s earlier than they did), so the guardian's
 * window is crossed without waiting for it.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, renameSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { initQueue, type Queue } from '../../src/model/queue.ts';
import { enqueue } from '../../src/producer/index.ts';
import { GUARDIAN_LIMIT, LEASE_SKEW } from '../../src/base/constants.ts';
import { encodeRecord, type ClaimRecord, type ExecRecord, type StateRecord } from '../../src/records/codec.ts';
import { batteryDir, childrenOf, isDead, notable, readJobs, readStartLog, removeBatteryDirs, runFsjob, startFsjob, validateQueue, type FsjobProcess, type JobOnDisk } from '../support/battery.ts';
import { readJson, waitFor, delay } from '../support/consumer.ts';
import { GUARDIAN_NAME } from '../../src/consumer/guardian.ts';

const WAIT = 60_000;
const host = (name: string): NodeJS.ProcessEnv => ({ FSJOB_HOST_OVERRIDE: `${name}/boot-${name}` });

interface World {
  queue: Queue;
  log: string;
  stop: string;
  /** Claimed by host-a1 (lease 3600 s), which crashes: its lease outlives the test. */
  unexpired: string;
  /** Claimed by host-a3 (lease 3 s), which crashes: max_attempts 1 and 2. */
  expiring: [string, string];
  /** Claimed by host-a2 (lease 3 s), which lives and renews; runs until `stop` exists. */
  live: string;
  liveWorker: FsjobProcess;
}

const job = (w: Pick<World, 'log' | 'stop'>, script: string, maxAttempts = 1) => ({
  argv: ['sh', '-c', `printf "%s %s\\n" "$FSJOB_JOB_ID" "$FSJOB_ATTEMPT" >>"${w.log}"; ${script}`] as [string, ...string[]],
  cwd: '/',
  max_attempts: maxAttempts,
  kill_grace_ms: 200,
});

function files(queue: Queue, id: string): JobOnDisk {
  const found = readJobs(queue.root).find((j) => j.id === id);
  if (found === undefined) throw new Error(`job ${id} is missing`);
  return found;
}

const execOf = (queue: Queue, id: string, gen: number): Promise<ExecRecord> =>
  waitFor(`exec.${gen}.json of ${id}`, () => existsSync(queue.paths.jobFile(id, `exec.${gen}.json`)) && readJson<ExecRecord>(queue.paths.jobFile(id, `exec.${gen}.json`)), WAIT);

/** Starts a worker as `name` and waits until it has recorded the executions of `ids`. */
async function hostRuns(queue: Queue, name: string, lease: number, ids: string[]): Promise<{ worker: FsjobProcess; groups: number[] }> {
  const worker = startFsjob(['work', '--queue', queue.root, '--lease', String(lease), '--concurrency', String(ids.length)], host(name));
  const groups: number[] = [];
  for (const id of ids) groups.push((await execOf(queue, id, 1)).group?.pgid as number);
  return { worker, groups };
}

/** A host crash: its guardian, its worker and its command groups, all SIGKILLed. */
async function crash(worker: FsjobProcess, groups: number[]): Promise<void> {
  const guardians = childrenOf(worker.pid, GUARDIAN_NAME);
  assert.is(guardians.length, 1, 'the worker has its guardian');
  for (const pid of guardians) process.kill(pid, 'SIGKILL');
  worker.child.kill('SIGKILL');
  for (const pgid of groups) process.kill(-pgid, 'SIGKILL');
  await worker.exited;
  await waitFor('the crashed host to be gone', async () => (await Promise.all([...guardians, ...groups].map(isDead))).every(Boolean), WAIT);
}

/** LEASE-3: the last renewal of claim `gen` and its lease. */
function renewalOf(queue: Queue, id: string, gen: number): { lastRenewalMs: number; leaseMs: number } {
  const claim = readJson<ClaimRecord>(queue.paths.jobFile(id, `claim.${gen}.json`));
  const statePath = queue.paths.jobFile(id, `state.${gen}.json`);
  const heartbeat = existsSync(statePath) ? readJson<StateRecord>(statePath).heartbeat_ms : 0;
  return { lastRenewalMs: Math.max(claim.claimed_ms, heartbeat), leaseMs: claim.lease_ms };
}

/** LEASE-3: the instant after which a judge may break claim `gen` (its last renewal + lease + guardian limit + skew). */
function expiryOf(queue: Queue, id: string, gen: number): number {
  const { lastRenewalMs, leaseMs } = renewalOf(queue, id, gen);
  return lastRenewalMs + leaseMs + GUARDIAN_LIMIT + LEASE_SKEW;
}

/** Moves claim 1 of `id` (and its state record, when `withState`) `ms` into the past, replacing it by rename as a host publishes. */
function backdate(queue: Queue, id: string, ms: number, withState: boolean): void {
  const republish = (name: string, bytes: Buffer): void => {
    const temp = queue.paths.jobFile(id, `.backdate-${name}`);
    writeFileSync(temp, bytes, { mode: 0o600 });
    renameSync(temp, queue.paths.jobFile(id, name));
  };
  const claim = readJson<ClaimRecord>(queue.paths.jobFile(id, 'claim.1.json'));
  republish('claim.1.json', encodeRecord('claim', { ...claim, claimed_ms: claim.claimed_ms - ms }));
  const statePath = queue.paths.jobFile(id, 'state.1.json');
  if (withState && existsSync(statePath)) {
    const state = readJson<StateRecord>(statePath);
    republish('state.1.json', encodeRecord('state', { ...state, heartbeat_ms: state.heartbeat_ms - ms }));
  }
}

/** Claims that broke a predecessor (no end record, not the receipt's): each must come after the predecessor's lease expired. */
function brokenClaims(queue: Queue, job: JobOnDisk): { gen: number; claimedMs: number; expiryMs: number }[] {
  const broken = [];
  for (const gen of job.claims.slice(0, -1)) {
    if (job.ends.has(gen) || job.receipt?.gen === gen) continue;
    const next = readJson<ClaimRecord>(queue.paths.jobFile(job.id, `claim.${gen + 1}.json`));
    broken.push({ gen, claimedMs: next.claimed_ms, expiryMs: expiryOf(queue, job.id, gen) });
  }
  return broken;
}

const hosts = suite<{ world?: World; crashedAtMs?: number }>('battery: multi-host leases');
hosts.after(async (context) => {
  const w = context.world;
  if (w !== undefined) {
    writeFileSync(w.stop, '');
    w.liveWorker.child.kill('SIGKILL');
  }
  await removeBatteryDirs();
});

hosts('three hosts hold four jobs; two of the hosts crash', async (context) => {
  const dir = await batteryDir('multihost');
  mkdirSync(join(dir, 'cwd'));
  const queue = await initQueue(join(dir, 'q'));
  const w = { log: join(dir, 'starts.log'), stop: join(dir, 'stop') };
  const unexpired = (await enqueue(queue, job(w, 'exec sleep 120'))).id;
  const a1 = await hostRuns(queue, 'host-a1', 3600, [unexpired]);
  const expiring: [string, string] = [
    (await enqueue(queue, job(w, 'exec sleep 120'))).id,
    (await enqueue(queue, job(w, '[ "$FSJOB_ATTEMPT" -ge 2 ] || exec sleep 120', 2))).id,
  ];
  const a3 = await hostRuns(queue, 'host-a3', 3, expiring);
  const live = (await enqueue(queue, job(w, `while [ ! -e "${w.stop}" ]; do sleep 0.1; done`))).id;
  const a2 = await hostRuns(queue, 'host-a2', 3, [live]);
  context.world = { queue, ...w, unexpired, expiring, live, liveWorker: a2.worker };
  await crash(a1.worker, a1.groups);
  await crash(a3.worker, a3.groups);
  context.crashedAtMs = Date.now();
  // The crashed host's renewals will never move again; the live host's claim
  // goes back too (it never rereads it), so only its renewals keep it alive.
  for (const id of expiring) backdate(queue, id, GUARDIAN_LIMIT, true);
  backdate(queue, live, GUARDIAN_LIMIT, false);
  for (const id of [unexpired, ...expiring, live]) assert.equal(files(queue, id).claims, [1], 'each job was claimed once, by its own host');
});

hosts('before their leases expire, validate, recover and another host\'s worker judge no foreign owner dead', async ({ world }) => {
  const { queue, unexpired, live, expiring } = world as World;
  for (const id of expiring) {
    const { lastRenewalMs, leaseMs } = renewalOf(queue, id, 1);
    assert.ok(Date.now() > lastRenewalMs + leaseMs + LEASE_SKEW, 'the crashed claims are past lease + skew: only the guardian limit keeps them');
  }
  const [validated, recovered, worker] = await Promise.all([
    validateQueue(queue.root, host('host-b')),
    runFsjob(['recover', '--json', '--queue', queue.root], host('host-b')),
    runFsjob(['work', '--queue', queue.root, '--drain', '--json', '--lease', '3'], host('host-b')),
  ]);
  // The lease of host-a1 is an hour: however slow this machine, nothing may touch its job.
  const report = JSON.parse(recovered.stdout) as { claims_broken: { job_id: string }[]; unproven: unknown[] };
  assert.is(recovered.code, 0, recovered.stderr);
  assert.equal(report.claims_broken.filter((c) => c.job_id === unexpired || c.job_id === live), []);
  assert.equal(report.unproven, []);
  assert.is(worker.code, 0, worker.stderr);
  assert.is(validated.code, 0, notable(validated.report));
  const judged = validated.report.findings.filter((f) => f.job_id === unexpired || f.job_id === live);
  assert.equal(judged.map((f) => f.code), [], 'no orphan finding for a foreign owner within its lease');
  assert.equal(files(queue, unexpired).claims, [1]);
  assert.equal(files(queue, live).claims, [1]);
  // Normally left alone; on a machine slow enough to pass their expiry, broken only after it (LEASE-3).
  for (const id of expiring) {
    for (const b of brokenClaims(queue, files(queue, id))) assert.ok(b.claimedMs > b.expiryMs, `claim ${b.gen + 1} of ${id} at ${b.claimedMs} came before the lease + guardian limit + skew ran out at ${b.expiryMs}`);
  }
});

hosts('an expired claim is recovered exactly once while two workers and a recover of three other hosts race for it', async ({ world }) => {
  const { queue, expiring, unexpired, live, log } = world as World;
  const expiry = Math.max(...expiring.map((id) => expiryOf(queue, id, 1)));
  await delay(Math.max(0, expiry - Date.now() + 50));
  const racers = await Promise.all([
    runFsjob(['work', '--queue', queue.root, '--drain', '--json', '--lease', '3'], host('host-b')),
    runFsjob(['work', '--queue', queue.root, '--drain', '--json', '--lease', '3'], host('host-c')),
    runFsjob(['recover', '--json', '--queue', queue.root], host('host-d')),
  ]);
  racers.forEach((r, i) => assert.is(r.code, 0, `racer ${i}: ${r.stderr}`));
  const starts = readStartLog(log);
  const [once, twice] = expiring.map((id) => files(queue, id)) as [JobOnDisk, JobOnDisk];
  for (const job of [once, twice]) {
    const broken = brokenClaims(queue, job);
    assert.is(broken.length, 1, `${job.id}: exactly one generation was broken (claims ${job.claims.join(',')})`);
    for (const b of broken) assert.ok(b.claimedMs > b.expiryMs, `claim ${b.gen + 1} of ${job.id} at ${b.claimedMs} came after the lease expired at ${b.expiryMs}`);
  }
  // max_attempts 1: the attempt died with its host, so `lost`, never a second start (I2).
  assert.equal(once.claims, [1, 2]);
  assert.equal([once.receipt?.gen, once.receipt?.outcome, once.receipt?.reason, once.receipt?.exit_code, once.receipt?.attempts], [2, 'lost', 'owner_lost', 125, 1]);
  assert.equal(starts.get(once.id), [1]);
  // max_attempts 2: recovered once, then run once more, and it passes.
  assert.equal([twice.receipt?.outcome, twice.receipt?.exit_code, twice.receipt?.attempts], ['succeeded', 0, 2]);
  assert.equal(starts.get(twice.id), [1, 2]);
  // The crashed host with an hour of lease and the live host that renews are left alone, though both claims are past claimed_ms + 3 s + guardian limit + skew now.
  assert.equal(files(queue, unexpired).claims, [1]);
  assert.is(files(queue, unexpired).receipt, undefined);
  const liveClaim = readJson<ClaimRecord>(queue.paths.jobFile(live, 'claim.1.json'));
  assert.ok(Date.now() > liveClaim.claimed_ms + liveClaim.lease_ms + GUARDIAN_LIMIT + LEASE_SKEW, 'the live claim is older than its lease: only its heartbeats keep it');
  assert.equal(files(queue, live).claims, [1]);
  const validated = await validateQueue(queue.root, host('host-c'));
  assert.is(validated.code, 0, notable(validated.report));
  assert.equal(validated.report.findings.filter((f) => f.job_id === unexpired || f.job_id === live).map((f) => f.code), []);
});

hosts('the live foreign owner finishes its job itself: one claim, one receipt', async ({ world }) => {
  const { queue, live, stop, log, liveWorker } = world as World;
  writeFileSync(stop, '');
  await waitFor('the live job to finish', () => existsSync(queue.paths.jobFile(live, 'receipt.json')), WAIT);
  const done = files(queue, live);
  assert.equal(done.claims, [1]);
  assert.equal([done.receipt?.gen, done.receipt?.outcome, done.receipt?.attempts], [1, 'succeeded', 1]);
  assert.equal(readStartLog(log).get(live), [1]);
  liveWorker.child.kill('SIGTERM');
  assert.equal(await liveWorker.exited, { code: 0, signal: null });
});

hosts.run();
