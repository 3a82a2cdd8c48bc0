/**
 * A pool of consumers (spec 7.2, "Several consumers"; src/consumer/pool.ts):
 * the order a pool keeps, and how its workers rank themselves so that only
 * a few wake for each new job.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LISTENERS, PoolRank } from '../../src/consumer/pool.ts';
import { systemClock } from '../../src/base/clock.ts';
import { CLAIM_IN_FLIGHT_MAX_MS, ReadyView } from '../../src/consumer/ready-view.ts';
import { CLAIM_RECHECK_MS, claimNextIn } from '../../src/consumer/select.ts';
import { makeContext } from '../../src/consumer/context.ts';
import { enqueue, freshQueue } from '../support/enqueue.ts';
import { fileExists, hasReceipt, waitFor } from '../support/consumer.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { startFsjob } from '../support/cli.ts';
import { registerWorker } from '../support/validate-queue.ts';

const order = suite('the order a pool of consumers keeps (CLAIM-1, CLAIM-2, CLAIM-5)');
order.after(cleanupAll);

order('four serving workers racing over one queue: when a job starts, every job before it in CLAIM-1 order has been claimed', async () => {
  const q = await freshQueue();
  const dir = await freshDir('pool');
  const violations = join(dir, 'violations');
  const ids: string[] = [];
  // Each job checks, as it starts, that every earlier job of the order has its first claim.
  for (let i = 0; i < 24; i++) {
    const earlier = ids.map((id) => `${q.root}/jobs/${id}/claim.1.json`).join(' ');
    ids.push(await enqueue(q, { argv: ['sh', '-c', `for c in ${earlier}; do [ -e "$c" ] || echo "$FSJOB_JOB_ID started before $c was claimed" >> ${violations}; done`] }));
  }
  await serveUntilDone(q, dir, 4, ids);
  assert.is(fileExists(violations) ? readFileSync(violations, 'utf8') : '', '');
});

/** Runs `count` serving `fsjob work` processes on the queue until every job of `ids` has its receipt, then stops them (SIGTERM). */
async function serveUntilDone(q: Awaited<ReturnType<typeof freshQueue>>, dir: string, count: number, ids: readonly string[]): Promise<void> {
  const workers = Array.from({ length: count }, () => startFsjob(['work', '-q', q.root], { cwd: dir }));
  try {
    await waitFor('every job finished', () => ids.every((id) => hasReceipt(q, id)), 60_000);
  } finally {
    for (const worker of workers) worker.child.kill('SIGTERM');
    await Promise.all(workers.map((worker) => worker.result));
  }
}

/** A claim another consumer is writing: PUB-1's temp of claim.1.json in the job directory, never linked (its writer died, or has not linked yet). */
function plantClaimInFlight(q: Awaited<ReturnType<typeof freshQueue>>, id: string): void {
  writeFileSync(join(q.paths.dir('jobs'), id, '.claim.1.json.00000000deadbeef'), '{}');
}

order('a claim in flight on the first job: three serving workers wait for it, and start the second job only once the first is claimed', async () => {
  const q = await freshQueue();
  const dir = await freshDir('pool-in-flight');
  const violations = join(dir, 'violations');
  const first = await enqueue(q, { argv: ['true'] });
  const firstClaim = `${q.root}/jobs/${first}/claim.1.json`;
  const ids = [first];
  for (let i = 0; i < 4; i++) ids.push(await enqueue(q, { argv: ['sh', '-c', `[ -e ${firstClaim} ] || echo "$FSJOB_JOB_ID started before ${first} was claimed" >> ${violations}`] }));
  // Forced: the first job's claim is in flight from the start and is never linked, so a worker that
  // treated it as held (skipped ahead) would start the next job while the first is still unclaimed.
  plantClaimInFlight(q, first);
  // Two more live registrations: every worker sees a pool from its first scan (PoolMember.look's glance).
  for (const id of ['f000000000000001', 'f000000000000002']) await registerWorker(q, id);
  await serveUntilDone(q, dir, 3, ids);
  assert.is(fileExists(violations) ? readFileSync(violations, 'utf8') : '', '');
  assert.ok(fileExists(firstClaim), 'the first job was claimed after the wait (a temp whose writer died holds it for a while, never for good)');
});

order('a pool consumer that finds a claim in flight ends its walk there and writes no claim of its own (a wait, never a skip)', async () => {
  const q = await freshQueue();
  const first = await enqueue(q, { handler: 'h' });
  const second = await enqueue(q, { handler: 'h' });
  plantClaimInFlight(q, first);
  const ctx = await makeContext({}, null);
  const view = new ReadyView(q);
  const avoided: string[] = [];
  const selected = await claimNextIn(ctx, q, { skip: () => false, canRun: () => true }, { purpose: 'run', hasHandler: () => true }, (id) => void avoided.push(id), view, { glance: true });
  assert.is(selected.result, null);
  assert.is(selected.claimingMs, CLAIM_RECHECK_MS);
  assert.is(selected.raced, 0);
  for (const id of [first, second]) assert.not.ok(fileExists(`${q.root}/jobs/${id}/claim.1.json`), `no claim of ${id} was linked`);
  assert.equal(avoided, [], 'nothing is passed over');
});

order.run();

const waits = suite('how long a consumer waits for a claim in flight (ReadyView.waitForClaim)');
waits.after(cleanupAll);

waits('the wait starts at the first recheck, doubles with the time waited, and ends CLAIM_IN_FLIGHT_MAX_MS after the claim was first seen', async () => {
  const q = await freshQueue();
  await enqueue(q, { handler: 'h' });
  const view = new ReadyView(q);
  await view.refresh();
  const name = [...view.entries()][0]?.name as string;
  assert.is(view.waitedForClaim(name), false);
  assert.is(view.waitForClaim(name, 2, 1_000), 2, 'first seen: the first recheck');
  assert.ok(view.waitedForClaim(name));
  // A view no watcher feeds is listed at nearly every scan: the first sighting outlives a listing, so the bound holds.
  await view.refresh();
  assert.ok(view.waitedForClaim(name), 'kept across a full listing while the entry is listed');
  assert.is(view.waitForClaim(name, 2, 1_001), 2, 'never shorter than the first recheck');
  assert.is(view.waitForClaim(name, 2, 1_010), 10, 'then as long as already waited');
  assert.is(view.waitForClaim(name, 2, 1_000 + CLAIM_IN_FLIGHT_MAX_MS - 10), 10, 'never past the bound');
  assert.is(view.waitForClaim(name, 2, 1_000 + CLAIM_IN_FLIGHT_MAX_MS), null, 'then the consumer claims the job itself');
});

waits.run();

const ranks = suite('ranks of a pool (pool.ts)');
ranks.after(cleanupAll);

ranks('a worker ranks itself among the live registrations by worker id: a stale heartbeat or a stopping worker ranks nobody', async () => {
  const q = await freshQueue();
  await registerWorker(q, '1000000000000000');
  await registerWorker(q, '2000000000000000', { heartbeat_ms: Date.now() - 120_000 }); // lease long gone
  await registerWorker(q, '3000000000000000', { mode: 'stopping' });
  await registerWorker(q, '4000000000000000');
  await registerWorker(q, '5000000000000000');
  const me = new PoolRank(q, '5000000000000000', systemClock);
  assert.is(await me.update(true), 2, 'after 1000… and 4000…; 2000… and 3000… are not live');
  assert.is(me.size, 3);
  assert.ok(me.rank >= LISTENERS, 'the third worker does not listen');
  // A registration that comes later counts (as live) at the next ranking from the names.
  await registerWorker(q, '0000000000000001');
  assert.is(await me.update(true), 3);
  const first = new PoolRank(q, '0000000000000001', systemClock);
  assert.is(await first.update(true), 0, 'the lowest live id listens first');
});

ranks.run();

const fresh = suite('a newly listed entry (ReadyView.newlyListed)');
fresh.after(cleanupAll);

fresh('an entry is new in the listing it first appears in, and no longer in the next one', async () => {
  const q = await freshQueue();
  const v = new ReadyView(q);
  await v.refresh();
  const id = await enqueue(q, { handler: 'h' });
  await v.refresh();
  const name = [...v.entries()].find((entry) => entry.id === id)?.name as string;
  assert.ok(v.newlyListed(name), 'first listed now');
  await v.refresh();
  assert.not.ok(v.newlyListed(name), 'listed before');
});

fresh.run();
