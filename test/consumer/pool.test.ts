/**
 * A pool of consumers (spec 7.2, "Several consumers"; src/consumer/pool.ts):
 * the order a pool keeps, and how its workers rank themselves so that only
 * a few wake for each new job.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LISTENERS, PoolRank } from '../../src/consumer/pool.ts';
import { systemClock } from '../../src/base/clock.ts';
import { ReadyView } from '../../src/consumer/ready-view.ts';
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
  const workers = [0, 1, 2, 3].map(() => startFsjob(['work', '-q', q.root], { cwd: dir }));
  try {
    await waitFor('every job finished', () => ids.every((id) => hasReceipt(q, id)), 60_000);
  } finally {
    for (const worker of workers) worker.child.kill('SIGTERM');
    await Promise.all(workers.map((worker) => worker.result));
  }
  assert.is(fileExists(violations) ? readFileSync(violations, 'utf8') : '', '');
});

order.run();

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
