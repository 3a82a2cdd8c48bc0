/**
 * listJobs sorted by priority or duration examines the jobs it shows, not
 * every job: priority walks ready/ in claim order (CLAIM-1) and stops at
 * the limit; duration reads every receipt loosely and examines in full only
 * what it shows (and unfinished jobs that were ever claimed). A seam counts
 * the spec.json reads, the mark of a job examined in full. Entries that are
 * stale (a receipt exists) or lost (READY-4) are placed as the plain listing
 * places their jobs.
 */
import * as nodeFs from 'node:fs/promises';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enqueue, listJobs } from '../../src/producer/index.ts';
import { realReads, type SafeFsSeam } from '../../src/fs/seam.ts';
import { createReadyEntry, removeReadyEntry } from '../../src/model/ready.ts';
import type { Queue } from '../../src/model/queue.ts';
import { cleanupAll } from '../support/helpers.ts';
import { freshQueue, withSeam, writeClaim, writeExec, writeReceipt } from '../support/producer.ts';

const order = suite('listJobs --sort priority and duration: the order, and only the jobs shown examined');
order.after(cleanupAll);

/** The queue reopened with a seam that records which job's spec.json is opened. */
async function counted(queue: Queue): Promise<{ queue: Queue; specs: string[] }> {
  const specs: string[] = [];
  const seam: SafeFsSeam = {
    ...nodeFs,
    reads: {
      ...realReads,
      open: (path: string, flags: number) => {
        const match = /\/jobs\/([^/]+)\/spec\.json$/.exec(path);
        if (match !== null) specs.push(match[1] as string);
        return realReads.open(path, flags);
      },
    },
  } as SafeFsSeam;
  return { queue: await withSeam(queue.root, seam), specs };
}

const ids = (list: { jobs: { id: string }[] }): string[] => list.jobs.map((job) => job.id);

order('priority: ready/ in claim order, then jobs without a live entry newest first; a limit examines only the jobs shown', async () => {
  const queue = await freshQueue('fsjob-list-order');
  const add = async (priority: number): Promise<string> => (await enqueue(queue, { argv: ['true'], priority })).id;
  const low = await add(0);
  const high = await add(5);
  const high2 = await add(5);
  const below = await add(-1);
  const low2 = await add(0);
  const stale = await add(9); // finished; its entry left behind (a crash before READY-2)
  const gone = await add(9); // finished; its entry removed (READY-2)
  const lost = await add(3); // unfinished; its entry lost (READY-4 rebuilds it when a consumer starts)
  const twice = await add(1); // a second entry at priority 7
  await writeReceipt(queue, stale, { started_ms: 1_000, finished_ms: 2_000 });
  await writeReceipt(queue, gone, { started_ms: 1_000, finished_ms: 2_000 });
  await removeReadyEntry(queue, gone, 9);
  await removeReadyEntry(queue, lost, 3);
  await createReadyEntry(queue, 7, twice);

  const all = await listJobs(queue, { sort: 'priority' });
  assert.equal(ids(all), [twice, high, high2, low, low2, below, lost, gone, stale]);
  assert.is(all.more, false);
  const queued = await listJobs(queue, { sort: 'priority', statuses: ['queued'] });
  assert.equal(ids(queued), [twice, high, high2, low, low2, below, lost], 'a stale entry does not make a finished job queued');

  const seen = await counted(queue);
  const next = await listJobs(seen.queue, { sort: 'priority', statuses: ['queued'], limit: 2 });
  assert.equal([ids(next), next.more, next.total], [[twice, high], true, 9]);
  assert.equal(seen.specs, [twice, high], 'only the two jobs shown were examined');
  const plain = await counted(queue);
  const waiting = await listJobs(plain.queue, { statuses: ['queued'], outcomes: [] }); // as fsjob status --status queued asks
  assert.equal(ids(waiting), [twice, lost, low2, below, high2, high, low], 'the plain order');
  assert.equal([plain.specs.includes(stale), plain.specs.includes(gone)], [false, false], 'a finished job is passed over after one lstat of its receipt');
  const exact = await listJobs(queue, { sort: 'priority', limit: 3, counts: true });
  assert.equal([ids(exact), exact.counts?.statuses], [[twice, high, high2], { queued: 7, finished: 2 }], 'with counts: the same order');
});

order('duration: longest first, a running job by its time so far, never started last; filters; a limit examines only the jobs shown', async () => {
  const queue = await freshQueue('fsjob-list-order');
  const add = async (): Promise<string> => (await enqueue(queue, { argv: ['true'] })).id;
  const long = await add();
  const mid = await add();
  const short = await add();
  const tie = await add();
  const queued = await add();
  const running = await add();
  const hour = Date.now() - 3_600_000;
  await writeReceipt(queue, long, { started_ms: hour, finished_ms: hour + 300_000 });
  await writeReceipt(queue, mid, { started_ms: hour, finished_ms: hour + 200_000, outcome: 'failed', exit_code: 2, status: { exit: 2, signal: null } });
  await writeReceipt(queue, short, { started_ms: hour, finished_ms: hour + 100_000 });
  await writeReceipt(queue, tie, { started_ms: hour, finished_ms: hour + 100_000 });
  await writeClaim(queue, running, 1); // this live process owns it: running, for a few ms so far by its exec record
  await writeExec(queue, running, 1, 1);

  const all = await listJobs(queue, { sort: 'duration' });
  assert.equal(ids(all), [long, mid, tie, short, running, queued], 'ties newest first');
  assert.equal(all.jobs.map((job) => job.durationMs === null), [false, false, false, false, false, true]);
  assert.equal(ids(await listJobs(queue, { sort: 'duration', outcomes: ['failed'] })), [mid]);
  assert.equal(ids(await listJobs(queue, { sort: 'duration', statuses: ['queued', 'running'] })), [running, queued]);
  assert.equal(ids(await listJobs(queue, { sort: 'duration', statuses: ['finished'], limit: 1 })), [long]);

  const seen = await counted(queue);
  const two = await listJobs(seen.queue, { sort: 'duration', limit: 2 });
  assert.equal([ids(two), two.more], [[long, mid], true]);
  assert.equal(seen.specs, [running, long, mid], 'the claimed job (to know its run) and the jobs shown, nothing else');
});

order.run();
