/**
 * The one shape of an opened queue: `initQueue` returns what `openQueue`
 * returns (plus `created`), so either serves every call that takes a queue;
 * a value that is not a queue is refused with USAGE before anything is read.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { join, resolve } from 'node:path';
import { keyHash, QueuePaths } from '../../src/model/layout.ts';
import { initQueue, openQueue } from '../../src/model/queue.ts';
import { enqueue } from '../../src/producer/enqueue.ts';
import { enqueueMany } from '../../src/producer/many.ts';
import { jobStatus } from '../../src/producer/inspect.ts';
import { listJobs } from '../../src/producer/job-list.ts';
import { waitFor, readLogs } from '../../src/producer/watch.ts';
import { cancel } from '../../src/producer/cancel.ts';
import { gc } from '../../src/producer/gc.ts';
import { cleanupAll, freshDir, rejectsWith } from '../support/helpers.ts';
import { tree } from '../support/producer.ts';

const shape = suite('initQueue and openQueue');
shape.after(cleanupAll);

shape('initQueue returns an opened Queue, the same as openQueue plus created; a second init says created: false', async () => {
  const root = join(await freshDir('fsjob-shape'), 'q');
  const queue = await initQueue(root);
  assert.is(queue.created, true);
  const opened = await openQueue(root);
  const { created: _created, ...rest } = queue;
  assert.equal(Object.keys(rest).sort(), Object.keys(opened).sort());
  assert.is(queue.root, opened.root);
  assert.equal(queue.record, opened.record);
  assert.is((await initQueue(root)).created, false);
});

shape('const queue = await initQueue(dir); enqueue(queue, ...) publishes the job', async () => {
  const root = join(await freshDir('fsjob-shape'), 'q');
  const queue = await initQueue(root);
  const { id } = await enqueue(queue, { argv: ['true'] });
  assert.ok((await tree(root)).includes(`jobs/${id}/spec.json`));
  assert.is((await jobStatus(queue, id)).status, 'queued');
});

shape('a value that is not a Queue is refused with USAGE by every call that takes one, and nothing is written', async () => {
  const root = join(await freshDir('fsjob-shape'), 'q');
  const queue = await initQueue(root);
  const id = (await enqueue(queue, { argv: ['true'] })).id;
  const before = await tree(root);
  // The shape initQueue had before it returned the queue itself, a path, and nothing.
  for (const wrong of [{ queue, created: true }, root, undefined] as unknown as Parameters<typeof enqueue>[0][]) {
    const error = await rejectsWith(enqueue(wrong, { argv: ['true'] }), 'USAGE');
    assert.match(error.message, /^enqueue takes a Queue as its first argument \(const queue = await openQueue\(dir\) or await initQueue\(dir\)\), not /);
    await rejectsWith(enqueueMany(wrong, [{ argv: ['true'] }]), 'USAGE');
    await rejectsWith(waitFor(wrong, id), 'USAGE');
    await rejectsWith(jobStatus(wrong, id), 'USAGE');
    await rejectsWith(listJobs(wrong), 'USAGE');
    await rejectsWith(cancel(wrong, id), 'USAGE');
    await rejectsWith(gc(wrong), 'USAGE');
    await rejectsWith(readLogs(wrong, id).next(), 'USAGE');
  }
  const old = await rejectsWith(enqueue({ queue, created: true } as never, { argv: ['true'] }), 'USAGE');
  assert.match(old.message, /not an object with queue, created$/);
  assert.equal(await tree(root), before);
});

shape.run();

const paths = suite('QueuePaths: names joined by hand are what path.join writes');

paths('for every builder, under roots with and without a trailing slash, relative, with dot segments and the filesystem root', () => {
  const id = '1796438421045000000-d1d59aa3fa26aeb7';
  for (const root of ['/srv/q', '/srv/q/', 'q', './a/../q', '/', '/srv/./q/..//q']) {
    const p = new QueuePaths(root);
    const r = resolve(root);
    assert.is(p.dir('jobs'), join(r, 'jobs'), root);
    assert.is(p.queueRecord(), join(r, 'fsjob.json'), root);
    assert.is(p.pauseRecord(), join(r, 'pause.json'), root);
    assert.is(p.job(id), join(r, 'jobs', id), root);
    assert.is(p.gatedJob(id), join(r, 'jobs', `${id}.gated`), root);
    for (const name of ['spec.json', 'claim.12.json', '.', '..', '', 'a/../b', 'x/']) assert.is(p.jobFile(id, name), join(r, 'jobs', id, name), `${root} ${name}`);
    assert.is(p.staging(id), join(r, 'tmp', id), root);
    assert.is(p.ready(5, id), join(r, 'ready', `0995-${id}`), root);
    assert.is(p.holdDir('lanes', 'k'), join(r, 'lanes', keyHash('k')), root);
    assert.is(p.worker('0123456789abcdef'), join(r, 'workers', '0123456789abcdef.json'), root);
  }
  assert.throws(() => new QueuePaths('/q').job('../x'));
});

paths.run();
