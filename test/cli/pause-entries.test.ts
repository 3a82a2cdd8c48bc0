/**
 * `fsjob pause` on a queue whose pause.json is not a pause record (a FIFO,
 * a directory, a symlink): any entry of that name pauses the queue
 * (PAUSE-1), so pause reports "paused already" (exit 0, published false,
 * no record) and leaves the entry as it is, as it does for an invalid
 * regular file; it never opens the FIFO nor follows the link. Resume
 * removes the name, never what a link points to.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { lstatSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { initQueue } from '../../src/model/queue.ts';
import { isPaused, pauseQueue, resumeQueue } from '../../src/model/pause.ts';
import { cleanupAll, freshDir, mkfifo } from '../support/helpers.ts';
import { fsjobCli } from '../support/faults.ts';

const entries = suite('pause over a pause.json that is not a record');
entries.after(cleanupAll);

entries('a FIFO, a directory or a symlink at pause.json: pause succeeds as paused already and leaves it; resume removes the name only', async () => {
  const dir = await freshDir('fsjob-pause-entries');
  const queue = await initQueue(join(dir, 'q'));
  const file = queue.paths.pauseRecord();
  const outside = join(dir, 'outside.txt');
  writeFileSync(outside, 'kept\n');

  mkfifo(file);
  const run = fsjobCli(['pause', '--queue', queue.root, '--json']);
  assert.is(run.status, 0, `pause over a FIFO: ${run.stdout}${run.stderr}`);
  assert.equal(JSON.parse(run.stdout), { queue: queue.root, published: false, pause: null });
  assert.ok(lstatSync(file).isFIFO(), 'the FIFO is left as it was');
  assert.ok(isPaused(queue));
  assert.is(await resumeQueue(queue), true);

  for (const make of [() => mkdirSync(file, { mode: 0o700 }), () => symlinkSync(outside, file)]) {
    make();
    assert.equal(await pauseQueue(queue), { published: false, record: null });
    assert.ok(isPaused(queue));
    assert.is(await resumeQueue(queue), true);
    assert.not.ok(isPaused(queue));
  }
  assert.is(readFileSync(outside, 'utf8'), 'kept\n', 'the link target was neither followed nor removed');
  assert.is((await pauseQueue(queue)).published, true, 'once the name is free, pause publishes its record');
});

entries.run();
