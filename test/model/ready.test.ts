/**
 * countIndexed (src/model/ready.ts): the ready index's count of unfinished
 * jobs that `fsjob status` shows for a big queue. It walks the sorted
 * listing of ready/ against the sorted ids of jobs/ instead of building a
 * set, so these cases pin down what a set would have answered: several
 * priorities interleaved, a job with two entries, entries whose job does not
 * exist, and names that are not ready entries.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readyEntryId, readyEntryName } from '../../src/model/layout.ts';
import { countIndexed } from '../../src/model/ready.ts';
import { newJobId } from '../../src/producer/id.ts';
import { cleanupAll } from '../support/helpers.ts';
import { freshQueue } from '../support/producer.ts';

const count = suite('countIndexed: ready entries that name a job of jobs/');
count.after(cleanupAll);

count('every priority, a job with two entries, entries without a job and foreign names give what a set gives', async () => {
  const queue = await freshQueue();
  const ready = queue.paths.dir('ready');
  const ids = Array.from({ length: 300 }, () => newJobId()).sort();
  const entry = (priority: number, id: string) => writeFileSync(join(ready, readyEntryName(priority, id)), '', { mode: 0o600 });
  const expected = new Set<string>();
  // Priorities interleave over the ids, so each priority's ids skip through the listing of jobs/.
  ids.forEach((id, i) => {
    if (i % 4 === 3) return; // finished: no entry
    entry([0, 7, -3, 1000][i % 4] ?? 0, id);
    expected.add(id);
  });
  entry(999, ids[0] as string); // a second entry for a job that has one
  entry(5, ids[3] as string); // an entry for a finished job counts: the index is a hint (READY-1)
  expected.add(ids[3] as string);
  for (let i = 0; i < 5; i++) entry(2, newJobId()); // ids of no job (gone, or not published yet)
  writeFileSync(join(ready, 'notes.txt'), '');
  writeFileSync(join(ready, `3001-${ids[5]}`), ''); // an encoded priority beyond 2000 is no entry
  assert.is(await countIndexed(queue, ids), expected.size);
  assert.is(await countIndexed(queue, []), 0, 'no jobs, nothing counted');
  assert.is(await countIndexed(queue, ids.slice(0, 1)), 1, 'one job with two entries counts once');
});

count('readyEntryId reads an entry name as parseReadyEntry does', () => {
  const id = newJobId();
  assert.is(readyEntryId(readyEntryName(0, id)), id);
  assert.is(readyEntryId(readyEntryName(-1000, id)), id, 'encoded 2000, the lowest priority');
  assert.is(readyEntryId(`2001-${id}`), undefined);
  assert.is(readyEntryId(`.1000-${id}`), undefined);
  assert.is(readyEntryId(`1000-${id}x`), undefined);
});

count.run();
