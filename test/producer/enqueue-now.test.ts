/**
 * src/producer/enqueue-now.ts: an `enqueue` alone in its process, in a queue
 * whose directories are held open, takes a synchronous road; with another
 * operation in flight (src/fs/flush.ts) it takes enqueue.ts's. Each case
 * runs on both roads and asserts the same files on disk, nothing left
 * staged after a refusal (ENQ-6), and the same code, errno and clause. The
 * failures are real: a directory of the queue removed after its handle was
 * opened, so the call inside it fails with ENOENT.
 */
import { readFileSync, rmdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { beginOperation, inlineNow } from '../../src/fs/flush.ts';
import { heldHandles } from '../../src/fs/safefs.ts';
import { queueDir } from '../../src/model/queue-dirs.ts';
import type { Queue } from '../../src/model/queue.ts';
import { enqueue, type Enqueued, type JobRequest } from '../../src/producer/index.ts';
import { publicationSync } from '../../src/producer/enqueue.ts';
import { cleanupAll, rejectsWith } from '../support/helpers.ts';
import { entries, freshQueue, tree } from '../support/producer.ts';

const roads = suite('enqueue: the synchronous road and enqueue.ts\'s agree (spec/producer.md steps 2 to 8)');
roads.after(cleanupAll);

type Road = 'now' | 'pool';
const ROADS: readonly Road[] = ['now', 'pool'];

/** `use` run alone in the process (the synchronous road) or beside another operation (enqueue.ts's road, fsyncs on the pool). */
async function onRoad<T>(road: Road, use: () => Promise<T>): Promise<T> {
  const end = road === 'pool' ? beginOperation(2) : () => undefined;
  try {
    assert.is(inlineNow(), road === 'now', `the ${road} road is the one open`);
    return await use();
  } finally {
    end();
  }
}

/** The job's files as a reader sees them: names, modes, and spec.json's members less the id and the clock's. */
function published(queue: Queue, job: Enqueued): unknown {
  const dir = queue.paths.job(job.id);
  const spec = JSON.parse(readFileSync(join(dir, 'spec.json'), 'utf8')) as Record<string, unknown>;
  const files = Object.fromEntries(['spec.json', 'stdin'].flatMap((name) => {
    try {
      return [[name, statSync(join(dir, name)).mode & 0o777]];
    } catch {
      return [];
    }
  }));
  return { files, dirMode: statSync(dir).mode & 0o777, spec: { ...spec, id: 'ID', created_ms: 0 }, bytesEnd: readFileSync(join(dir, 'spec.json'), 'utf8').endsWith('}\n') };
}

const skip = (name: string, reason: string): void => roads(`${name} (skipped: ${reason})`, () => undefined);

if (!heldHandles()) {
  skip('every case', 'no /proc/self/fd that resolves names here: every enqueue takes enqueue.ts\'s road');
} else {
  const requests: readonly [string, JobRequest][] = [
    ['a payload job', { handler: 'h', payload: { a: [1, 2.5, '1e400'], b: null }, labels: { team: 'x' } }],
    ['a command job with stdin', { argv: ['cat'], stdin_text: 'input', env: { A: '1' }, priority: 7 }],
  ];
  for (const [what, request] of requests) {
    roads(`${what}: the same job directory, ready entry and empty tmp/ on both roads; only enqueue.ts's road runs the shared step 8`, async () => {
      const seen: unknown[] = [];
      for (const road of ROADS) {
        const queue = await freshQueue(`enqueue-now-${road}`);
        const job = await onRoad(road, () => enqueue(queue, request, { cwd: '/' }));
        assert.equal(await entries(queue.paths.dir('jobs')), [job.id]);
        assert.equal(await entries(queue.paths.dir('ready')), [`${String(1000 - (request.priority ?? 0)).padStart(4, '0')}-${job.id}`]);
        assert.equal(await entries(queue.paths.dir('tmp')), [], 'nothing left staged');
        assert.is(publicationSync(queue).runs, road === 'now' ? 0 : 1, 'the synchronous road fsyncs jobs/ itself; the other shares it (SharedSync)');
        seen.push(published(queue, job));
      }
      assert.equal(seen[0], seen[1], 'both roads publish the same files');
    });
  }

  roads('a job with a dedupe key or a hold takes enqueue.ts\'s road also when alone', async () => {
    for (const request of [{ argv: ['x'], dedupe: 'k' }, { argv: ['x'], hold: true }] as JobRequest[]) {
      const queue = await freshQueue('enqueue-now-dedupe');
      await onRoad('now', () => enqueue(queue, request));
      assert.is(publicationSync(queue).runs, 1, JSON.stringify(request));
    }
  });

  /** Each queue directory removed after its handle was opened, and what the refusal must be (both roads). */
  const removals: readonly { dir: 'tmp' | 'ready' | 'jobs'; code: 'IO' | 'NOT_FOUND'; clause?: string; errno?: string; step: string }[] = [
    { dir: 'tmp', code: 'IO', clause: 'PUB-8', errno: 'ENOENT', step: 'step 2 (the mkdir)' },
    { dir: 'ready', code: 'IO', clause: 'PUB-7', errno: 'ENOENT', step: 'step 6 (the ready entry)' },
    { dir: 'jobs', code: 'NOT_FOUND', step: 'step 7 (the rename)' },
  ];
  for (const removal of removals) {
    for (const road of ROADS) {
      roads(`${road}: ${removal.dir}/ gone under its held handle fails ${removal.step} and leaves nothing staged (ENQ-6)`, async () => {
        const queue = await freshQueue(`enqueue-now-${removal.dir}`);
        // The handles opened now (the queue's held directories, queue-dirs.ts), then the directory removed under one of them.
        for (const name of ['jobs', 'ready', 'tmp'] as const) queueDir(queue, name);
        rmdirSync(queue.paths.dir(removal.dir));
        await onRoad(road, () =>
          rejectsWith(enqueue(queue, { handler: 'h', payload: 1 }), removal.code, { ...(removal.clause === undefined ? {} : { clause: removal.clause }), ...(removal.errno === undefined ? {} : { errno: removal.errno }) }),
        );
        for (const dir of ['tmp', 'ready', 'jobs'] as const) {
          if (dir !== removal.dir) assert.equal(await tree(queue.paths.dir(dir)), [], `${dir}/ is as it was`);
        }
      });
    }
  }
}

roads.run();
