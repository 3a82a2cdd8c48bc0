import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enqueue, enqueueBatch, enqueueMany, type BatchResult, type ManyResult } from '../../src/producer/index.ts';
import { publicationSync } from '../../src/producer/enqueue.ts';
import { directFs, type SafeFsSeam, type SafeHandle } from '../../src/fs/seam.ts';
import { DIR_SYNC_FLAGS } from '../../src/fs/checks.ts';
import type { Queue } from '../../src/model/queue.ts';
import type { JobRequest, SpecRecord } from '../../src/records/codec.ts';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cleanupAll } from '../support/helpers.ts';
import { entries, freshQueue, withSeam } from '../support/producer.ts';

const batch = suite('enqueueBatch: one request per line (REQ-1)');
batch.after(cleanupAll);

batch('a bad line in the middle is named by its number and every other line is enqueued', async () => {
  const queue = await freshQueue();
  const lines = [
    '{"argv":["echo","one"]}',
    '  { "argv": ["echo", "two"], "priority": 5 }  ',
    '{"argv":[]}',
    'this is not JSON',
    '',
    '{"argv":["echo","five"],"stdin_text":"5"}',
  ];
  const seen: BatchResult[] = [];
  const results = await enqueueBatch(queue, lines, { onResult: (result) => seen.push(result) });
  assert.equal(seen, results, 'onResult reports each result as it happens, in line order');
  assert.equal(results.map((result) => result.line), [1, 2, 3, 4, 6], 'the blank line 5 is skipped, numbering is kept');
  const failed = results.filter((result): result is Extract<BatchResult, { error: unknown }> => 'error' in result);
  assert.equal(failed.map((result) => [result.line, result.error.code]), [
    [3, 'USAGE'],
    [4, 'USAGE'],
  ]);
  assert.ok(failed[0]?.error.message.includes('batch line 3'), 'the message names the line');
  const ids = results.flatMap((result) => ('id' in result ? [result.id] : []));
  assert.equal(await entries(queue.paths.dir('jobs')), ids, 'the good lines are published, in line order');
  const specs = await Promise.all(ids.map(async (id) => JSON.parse(await readFile(join(queue.paths.job(id), 'spec.json'), 'utf8')) as SpecRecord));
  assert.equal(specs.map((spec) => spec.argv), [['echo', 'one'], ['echo', 'two'], ['echo', 'five']]);
  assert.is(specs[1]?.priority, 5);
  assert.equal(await entries(queue.paths.job(ids[2] ?? '')), ['spec.json', 'stdin']);
  assert.equal(await entries(queue.paths.dir('tmp')), []);
});

batch('a held dedupe key fails only its own line', async () => {
  const queue = await freshQueue();
  async function* lines(): AsyncGenerator<string> {
    yield '{"argv":["a"],"dedupe":"k"}';
    yield '{"argv":["b"],"dedupe":"k"}';
    yield '{"argv":["c"],"dedupe":"other"}';
  }
  const results = await enqueueBatch(queue, lines());
  assert.ok('id' in (results[0] ?? {}));
  const second = results[1];
  assert.ok(second !== undefined && 'error' in second && second.error.code === 'DEDUPE_HELD');
  assert.is(second !== undefined && 'error' in second ? second.error.jobId : undefined, results[0] !== undefined && 'id' in results[0] ? results[0].id : 'x');
  assert.ok('id' in (results[2] ?? {}));
  assert.is((await entries(queue.paths.dir('jobs'))).length, 2);
});

batch('enqueueMany takes request objects: one result per request, in order, with the spec as published', async () => {
  const queue = await freshQueue();
  async function* requests(): AsyncGenerator<JobRequest> {
    yield { argv: ['echo', 'zero'] };
    yield { argv: [] } as unknown as JobRequest; // invalid on purpose: refused by ENQ-1
    yield { handler: 'resize', payload: { w: 64 }, dedupe: 'k' };
    yield { handler: 'resize', payload: { w: 128 }, dedupe: 'k' };
    yield { argv: ['echo', 'four'], stdin_text: '4' };
  }
  const seen: ManyResult[] = [];
  const results = await enqueueMany(queue, requests(), { onResult: (result) => seen.push(result) });
  assert.equal(seen, results, 'onResult reports each result in input order');
  assert.equal(results.map((result) => [result.index, 'id' in result ? 'id' : result.error.code]), [
    [0, 'id'],
    [1, 'USAGE'],
    [2, 'id'],
    [3, 'DEDUPE_HELD'],
    [4, 'id'],
  ]);
  const published = results.flatMap((result) => ('id' in result ? [result] : []));
  assert.equal(await entries(queue.paths.dir('jobs')), published.map((result) => result.id), 'published in input order');
  for (const result of published) {
    const onDisk = JSON.parse(await readFile(join(queue.paths.job(result.id), 'spec.json'), 'utf8')) as SpecRecord;
    assert.equal(onDisk, result.spec, 'the spec returned is the one published');
  }
  assert.equal(await entries(queue.paths.job(published[2]?.id ?? '')), ['spec.json', 'stdin']);
  assert.equal(await entries(queue.paths.dir('tmp')), [], 'the refused requests left nothing staged');
});

batch('input that fails mid-way: every job already taken is reported before the failure is thrown', async () => {
  const queue = await freshQueue();
  const unreadable = Object.assign(new Error('EIO: i/o error, read'), { code: 'EIO' });
  async function* requests(): AsyncGenerator<JobRequest> {
    for (let i = 0; i < 5; i++) yield { handler: 'noop', payload: { i } };
    throw unreadable;
  }
  const seen: ManyResult[] = [];
  let thrown: unknown;
  try {
    await enqueueMany(queue, requests(), { onResult: (result) => seen.push(result) });
  } catch (error) {
    thrown = error;
  }
  assert.is(thrown, unreadable, 'the input failure is what the caller gets');
  const ids = seen.flatMap((result) => ('id' in result ? [result.id] : []));
  assert.is(ids.length, 5, 'the five jobs taken before it were all reported');
  assert.equal(await entries(queue.paths.dir('jobs')), ids, 'and they are exactly the published jobs');
});

batch('an onResult that throws stops the batch and its error reaches the caller, not the process', async () => {
  const queue = await freshQueue();
  const mine = new Error('the caller could not record line 2');
  const lines = Array.from({ length: 10 }, (_, i) => JSON.stringify({ handler: 'noop', payload: { i } }));
  let reports = 0;
  let thrown: unknown;
  try {
    await enqueueBatch(queue, lines, {
      onResult: () => {
        reports += 1;
        if (reports === 2) throw mine;
      },
    });
  } catch (error) {
    thrown = error;
  }
  assert.is(thrown, mine);
  assert.ok(reports >= 2);
  assert.equal(await entries(queue.paths.dir('tmp')), [], 'every job taken was finished, none left staged');
});

batch.run();

/**
 * The group commit of step 8 (ENQ-4), forced: the first fsync of jobs/ does
 * not return until every other line of the batch has been renamed, so those
 * lines can only be reported after a later fsync, which must then be the one
 * they share. The seam logs renames into jobs/, the fsyncs of jobs/ (begin
 * and end) and each report, in the order they happen.
 */
interface Logged {
  queue: Queue;
  log: string[];
}

async function gatedQueue(jobs: number, failFirstSync = false): Promise<Logged> {
  const base = await freshQueue();
  const jobsDir = base.paths.dir('jobs');
  const log: string[] = [];
  let renamed = 0;
  let allRenamed!: () => void;
  const everyRename = new Promise<void>((resolve) => (allRenamed = resolve));
  let syncs = 0;
  const seam: SafeFsSeam = {
    ...directFs,
    rename: async (from, to) => {
      await directFs.rename(from, to);
      if (to.startsWith(`${jobsDir}/`)) {
        log.push(`rename ${to.slice(jobsDir.length + 1)}`);
        renamed += 1;
        if (renamed === jobs) allRenamed();
      }
    },
    open: async (path, flags, mode) => {
      const handle = await directFs.open(path, flags, mode);
      if (path !== jobsDir || flags !== DIR_SYNC_FLAGS) return handle;
      const gated: SafeHandle = Object.create(handle) as SafeHandle;
      gated.sync = async () => {
        const n = ++syncs;
        log.push(`sync-begin ${n}`);
        if (n === 1) await everyRename;
        try {
          if (n === 1 && failFirstSync) throw Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO', errno: -5 });
          await handle.sync();
        } finally {
          log.push(`sync-end ${n}`);
        }
      };
      gated.close = () => handle.close();
      return gated;
    },
  };
  return { queue: await withSeam(base.root, seam), log };
}

/** For each reported id: the index of the first fsync of jobs/ that began after its rename and ended before its report, or -1. */
function coveringSync(log: readonly string[], id: string): number {
  const renamedAt = log.indexOf(`rename ${id}`);
  const reportedAt = log.indexOf(`report ${id}`);
  for (let begin = renamedAt + 1; begin < reportedAt; begin += 1) {
    const entry = log[begin] ?? '';
    if (!entry.startsWith('sync-begin ')) continue;
    const end = log.indexOf(`sync-end ${entry.slice('sync-begin '.length)}`, begin);
    if (end !== -1 && end < reportedAt) return Number(entry.slice('sync-begin '.length));
  }
  return -1;
}

const group = suite('group commit: one fsync of jobs/ shared by the jobs renamed before it (spec/producer.md step 8, ENQ-4)');
group.after(cleanupAll);

group('a batch shares the fsync of jobs/, and no line is reported before an fsync that began after its rename', async () => {
  const jobs = 20;
  const { queue, log } = await gatedQueue(jobs);
  const lines = Array.from({ length: jobs }, (_, i) => JSON.stringify({ handler: 'noop', payload: { i } }));
  const results = await enqueueBatch(queue, lines, { onResult: (result) => log.push('id' in result ? `report ${result.id}` : `error ${result.line}`) });
  const ids = results.flatMap((result) => ('id' in result ? [result.id] : []));
  assert.is(ids.length, jobs, 'every line is accepted');
  assert.equal(await entries(queue.paths.dir('jobs')), ids, 'published in line order');
  for (const id of ids) assert.ok(coveringSync(log, id) > 0, `${id} was reported only after an fsync of jobs/ begun after its rename:\n${log.join('\n')}`);
  const syncs = log.filter((entry) => entry.startsWith('sync-begin')).length;
  assert.ok(syncs <= 2, `${jobs} jobs shared ${syncs} fsyncs of jobs/ (the first was held until all were renamed, so at most 2):\n${log.join('\n')}`);
  assert.is(publicationSync(queue).runs, syncs, 'each run of step 8 fsynced jobs/ once');
  assert.ok(log.indexOf(`rename ${ids[jobs - 1]}`) < log.indexOf(`report ${ids[0]}`), 'the last line was renamed before the first was reported: the lines ran pipelined');
});

group('a failed fsync of jobs/ fails exactly the jobs it had to cover; they stay published, unreported (ENQ-4)', async () => {
  const jobs = 12;
  const { queue, log } = await gatedQueue(jobs, true);
  const lines = Array.from({ length: jobs }, (_, i) => JSON.stringify({ handler: 'noop', payload: { i } }));
  const results = await enqueueBatch(queue, lines, { onResult: (result) => log.push('id' in result ? `report ${result.id}` : `error ${result.line}`) });
  const failed = results.filter((result): result is Extract<BatchResult, { error: unknown }> => 'error' in result);
  assert.ok(failed.length >= 1, 'the line whose fsync failed is not accepted');
  for (const result of failed) {
    assert.is(result.error.code, 'IO');
    assert.is(result.error.clause, 'ENQ-4');
  }
  // Those whose rename came before the failed fsync began are exactly the failed lines.
  const firstBegin = log.indexOf('sync-begin 1');
  const renamedBefore = log.slice(0, firstBegin).filter((entry) => entry.startsWith('rename ')).length;
  assert.equal(failed.map((result) => result.line), Array.from({ length: renamedBefore }, (_, i) => i + 1), `the lines renamed before the failed fsync:\n${log.join('\n')}`);
  const published = await entries(queue.paths.dir('jobs'));
  assert.is(published.length, jobs, 'a job whose fsync failed is published all the same (ENQ-4 forbids reporting it, not publishing it)');
  for (const result of results) if ('id' in result) assert.ok(coveringSync(log, result.id) === 2, `${result.id} is covered by the second fsync`);
});

group('concurrent enqueue() calls on one queue object share the fsync of jobs/ too', async () => {
  const jobs = 16;
  const { queue, log } = await gatedQueue(jobs);
  const accepted = await Promise.all(
    Array.from({ length: jobs }, async (_, i) => {
      const { id } = await enqueue(queue, { handler: 'noop', payload: { i } });
      log.push(`report ${id}`);
      return id;
    }),
  );
  for (const id of accepted) assert.ok(coveringSync(log, id) > 0, `${id} was reported only after an fsync of jobs/ begun after its rename`);
  assert.ok(log.filter((entry) => entry.startsWith('sync-begin')).length <= 2, `${jobs} jobs, at most 2 fsyncs of jobs/:\n${log.join('\n')}`);
});

group('a line that fails while staging is removed and does not hold up the lines after it (ENQ-6)', async () => {
  const base = await freshQueue();
  const tmp = base.paths.dir('tmp');
  let mkdirs = 0;
  const seam: SafeFsSeam = {
    ...directFs,
    mkdir: async (path, options) => {
      if (path.startsWith(`${tmp}/`) && ++mkdirs === 3) throw Object.assign(new Error('ENOSPC: no space left on device, mkdir'), { code: 'ENOSPC', errno: -28 });
      return directFs.mkdir(path, options);
    },
  };
  const queue = await withSeam(base.root, seam);
  const lines = Array.from({ length: 6 }, (_, i) => JSON.stringify({ argv: ['echo', String(i)], dedupe: i === 3 ? 'k' : null }));
  const results = await enqueueBatch(queue, lines);
  assert.equal(results.map((result) => ('id' in result ? 'id' : result.error.code)), ['id', 'id', 'IO', 'id', 'id', 'id']);
  assert.is((await entries(queue.paths.dir('jobs'))).length, 5);
  assert.equal(await entries(tmp), [], 'nothing is left staged');
  assert.is((await entries(queue.paths.dir('ready'))).length, 5, 'one ready entry per published job');
});

group.run();
