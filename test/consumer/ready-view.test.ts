import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync, existsSync, openSync, readFileSync, readdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { readyEntryName } from '../../src/model/layout.ts';
import { ReadyView } from '../../src/consumer/ready-view.ts';
import { enqueue, freshQueue, newJobId } from '../support/enqueue.ts';
import { drain, readyEntries, serve, waitFor } from '../support/consumer.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { startFsjob } from '../support/cli.ts';
import type { Queue } from '../../src/model/queue.ts';

const view = suite('the in-memory view of ready/ (READY-1: a hint, in CLAIM-1 order)');
view.after(cleanupAll);

const names = (v: ReadyView): string[] => [...v.entries()].map((entry) => entry.name);

view('a full listing gives the claim order; added names take their place in it', async () => {
  const q = await freshQueue();
  const ids = [newJobId(), newJobId(), newJobId(), newJobId()];
  for (const [i, id] of ids.slice(0, 3).entries()) closeSync(openSync(join(q.paths.dir('ready'), readyEntryName(i * 10, id)), 'wx', 0o600));
  const v = new ReadyView(q);
  assert.ok(v.due(), 'a new view is listed before it is used');
  await v.refresh();
  assert.equal(names(v), readyEntries(q));
  // A later id of the highest priority goes first; one of priority 0 after the others of 0.
  v.add(readyEntryName(1000, ids[3] as string));
  v.add(readyEntryName(0, newJobId()));
  v.add('not-a-ready-entry');
  const got = names(v);
  assert.equal(got.length, 5);
  assert.equal(got, [...got].sort());
  assert.equal(got[0], readyEntryName(1000, ids[3] as string));
});

view('removed names are skipped, also during a walk; a name that comes back is offered again', async () => {
  const q = await freshQueue();
  const v = new ReadyView(q);
  await v.refresh();
  const all = Array.from({ length: 10 }, () => readyEntryName(0, newJobId()));
  for (const name of all) v.add(name);
  const walked: string[] = [];
  for (const entry of v.entries()) {
    walked.push(entry.name);
    if (walked.length === 2) {
      v.remove(all[5] as string); // ahead of the walk
      v.add(readyEntryName(1000, newJobId())); // before the walk's place: not revisited
    }
  }
  assert.equal(walked.length, 9);
  assert.not.ok(walked.includes(all[5] as string));
  v.changed(all[5] as string, true);
  assert.ok(names(v).includes(all[5] as string));
  v.finished(all[5]!.slice(5));
  assert.not.ok(names(v).includes(all[5] as string));
  assert.equal(v.size, 10);
});

view('many removals are compacted; the order stays', async () => {
  const q = await freshQueue();
  const v = new ReadyView(q);
  await v.refresh();
  const all = Array.from({ length: 5000 }, () => readyEntryName(0, newJobId()));
  for (const name of all) v.add(name);
  for (const [i, name] of all.entries()) if (i % 5 !== 0) v.remove(name);
  assert.equal(names(v), all.filter((_, i) => i % 5 === 0));
  assert.equal(v.size, 1000);
});

view('a watched view is listed again only when due or invalidated', async () => {
  const q = await freshQueue();
  const v = new ReadyView(q);
  v.watched = true;
  await v.current();
  assert.not.ok(v.due());
  const name = readyEntryName(0, newJobId());
  closeSync(openSync(join(q.paths.dir('ready'), name), 'wx', 0o600));
  await v.current();
  assert.equal(names(v), [], 'not listed again yet: the watcher would have said');
  v.invalidate();
  await v.current();
  assert.equal(names(v), [name]);
  unlinkSync(join(q.paths.dir('ready'), name));
  assert.not.ok(v.due(v.listedAtMs + 1_000), 'watched: not due a second after a listing');
  v.watched = false;
  // Unwatched: listed again once fifty times the last listing's duration passed (at nearly every use of a shallow index).
  assert.ok(v.due(v.listedAtMs + 1_000), 'unwatched: due a second after a listing of a few entries');
  await v.refresh();
  assert.equal(names(v), [], 'the listing shows the entry gone');
});

view('a watch result that arrives while a listing is under way is not lost when the listing replaces the view', async () => {
  const q = await freshQueue();
  const first = readyEntryName(0, newJobId());
  closeSync(openSync(join(q.paths.dir('ready'), first), 'wx', 0o600));
  const v = new ReadyView(q);
  v.watched = true;
  // The lstat of a watch event saw an entry that the listing did not (it read ready/ before the entry came):
  // modelled by an entry this listing can never see. Replacing the view with the listing must not drop it.
  const listing = v.refresh();
  const later = readyEntryName(0, newJobId());
  v.changed(later, true);
  await listing;
  assert.equal(names(v), [first, later]);
});

view('a draining worker finds jobs whose ready events it never saw (the listing is the truth)', async () => {
  const q = await freshQueue();
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push(await enqueue(q, { argv: ['true'] }));
  const result = await drain(q, { concurrency: 2 });
  assert.equal(result.summary.finished['succeeded'], 5);
  assert.equal(readyEntries(q), []);
});

const claimFiles = (q: Queue, id: string): string[] => readdirSync(q.paths.job(id)).filter((name) => /^(claim|exec)\.[0-9]+\.json$/.test(name)).sort();

view('three fsjob work processes and a worker in this process serve one queue while jobs arrive: every job is started once and has one receipt (CLAIM-5, READY-1)', async () => {
  const q = await freshQueue();
  const dir = await freshDir('ready-view');
  const log = join(dir, 'started');
  const job = { argv: ['sh', '-c', 'echo "$FSJOB_JOB_ID" >> "$1"', 'sh', log] as [string, ...string[]] };
  const ids: string[] = [];
  // Some jobs are there before the workers list ready/, the rest reach them only through their watchers and rescans.
  for (let i = 0; i < 20; i++) ids.push(await enqueue(q, job));
  const workers = [0, 1, 2].map(() => startFsjob(['work', '-q', q.root, '--concurrency', '3'], { cwd: dir }));
  const local = serve(q, { concurrency: 2, pollMs: 30_000 });
  try {
    for (let i = 0; i < 60; i++) ids.push(await enqueue(q, job));
    await waitFor('every receipt', () => ids.every((id) => existsSync(q.paths.jobFile(id, 'receipt.json'))), 120_000);
  } finally {
    local.worker.stop();
    for (const w of workers) w.child.kill('SIGTERM');
  }
  await local.done;
  for (const w of workers) {
    const result = await w.result;
    assert.equal([result.status, result.signal], [0, null], result.stderr);
  }
  const started = readFileSync(log, 'utf8').split('\n').filter((line) => line !== '');
  assert.equal([...started].sort(), [...ids].sort(), 'each job ran exactly once');
  for (const id of ids) assert.equal(claimFiles(q, id), ['claim.1.json', 'exec.1.json'], `job ${id}: one claim, one start`);
  assert.equal(readyEntries(q), [], 'READY-2: every entry removed with its receipt');
});

view.run();
