import { appendFile, mkdir, readFile, symlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enqueue, gc, jobStatus, listJobs, liveWorkers, readLogs, waitFor, type LogChunk } from '../../src/producer/index.ts';
import { keyHash } from '../../src/model/layout.ts';
import { publishRecord } from '../../src/fs/safefs.ts';
import { encodeRecord, type HoldRecord, type WorkerRecord } from '../../src/records/codec.ts';
import { selfIdentity, type Identity } from '../../src/model/identity.ts';
import type { Queue } from '../../src/model/queue.ts';
import { cleanupAll, rejectsWith, withWatchdog } from '../support/helpers.ts';
import { deadIdentity, entries, freshQueue, tree, writeClaim, writeEnd, writeExec, writeOutput, writeReceipt } from '../support/producer.ts';

const summary = (bytes: string, gen: number) => ({ gen, bytes_total: bytes.length, bytes_kept: bytes.length, truncated: false, sha256: '0'.repeat(64) });

async function collect(chunks: AsyncIterable<LogChunk>): Promise<{ gen: number; text: string }[]> {
  const out: { gen: number; text: string }[] = [];
  for await (const chunk of chunks) out.push({ gen: chunk.gen, text: chunk.bytes.toString('utf8') });
  return out;
}

async function registerWorker(queue: Queue, workerId: string, owner: Identity): Promise<void> {
  const record: WorkerRecord = {
    fsjob: '1.0',
    type: 'worker',
    worker_id: workerId,
    owner,
    started_ms: Date.now(),
    heartbeat_ms: Date.now(),
    lease_ms: 30_000,
    concurrency: 2,
    mode: 'serving',
    jobs: [],
    handlers: [],
  };
  await publishRecord(queue.paths.dir('workers'), `${workerId}.json`, encodeRecord('worker', record), 'rename', queue.fsOptions);
}

const status = suite('operator reads: jobStatus, listJobs, liveWorkers');
status.after(cleanupAll);

status('jobStatus reports the spec, derived status, every generation, receipt, attempts and outputs', async () => {
  const queue = await freshQueue();
  const { id, spec } = await enqueue(queue, { argv: ['make'], max_attempts: 2, lane: 'web' });
  await writeClaim(queue, id, 1);
  await writeExec(queue, id, 1, 1);
  await (await writeOutput(queue, id, 'stdout', 1, 'first try\n')).close();
  await (await writeOutput(queue, id, 'stderr', 1, 'boom\n')).close();
  await writeEnd(queue, id, 1, 2);
  let report = await jobStatus(queue, id);
  assert.is(report.status, 'queued', 'the generation ended: waiting again (STATUS-1)');
  assert.is(report.attempts, 1);
  await writeClaim(queue, id, 2);
  await writeExec(queue, id, 2, 2);
  report = await jobStatus(queue, id);
  assert.is(report.status, 'running', 'an open claim with an exec record and a live owner');
  assert.is(report.owner?.verdict, 'alive');
  await (await writeOutput(queue, id, 'stdout', 2, 'second try\n')).close();
  await writeReceipt(queue, id, { gen: 2, attempts: 2, stdout: summary('second try\n', 2) });
  report = await jobStatus(queue, id);
  assert.equal(report.spec, spec);
  assert.is(report.status, 'finished');
  assert.is(report.receipt?.outcome, 'succeeded');
  assert.is(report.attempts, 2);
  assert.is(report.gen, 2);
  assert.equal(report.generations.map((gen) => [gen.gen, gen.claim?.gen, gen.exec?.attempt, gen.end?.reason ?? null]), [
    [1, 1, 1, 'failed'],
    [2, 2, 2, null],
  ]);
  assert.equal(report.outputs, [
    { stream: 'stdout', gen: 1, bytes: 10 },
    { stream: 'stderr', gen: 1, bytes: 5 },
    { stream: 'stdout', gen: 2, bytes: 11 },
  ]);
  assert.equal(report.findings, []);
  await rejectsWith(jobStatus(queue, '1764476044123456789-3fa2c1d09b8e7f64'), 'NOT_FOUND');
});

status('jobStatus reports an invalid record as a finding and unknown names without opening them', async () => {
  const queue = await freshQueue();
  const { id } = await enqueue(queue, { argv: ['x'] });
  await writeFile(join(queue.paths.job(id), 'claim.1.json'), '{"broken":\n', { mode: 0o600 });
  await writeFile(join(queue.paths.job(id), 'notes.txt'), 'hi', { mode: 0o600 });
  const report = await jobStatus(queue, id);
  assert.is(report.status, 'damaged');
  assert.ok(report.findings.length > 0);
  assert.equal(report.unknown, ['notes.txt']);
});

status('listJobs lists newest first, honours limit and the status filter, and leaves foreign names alone', async () => {
  const queue = await freshQueue();
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push((await enqueue(queue, { argv: ['job', String(i)], lane: i === 4 ? 'web' : null })).id);
  await writeReceipt(queue, ids[0] ?? '');
  await writeReceipt(queue, ids[3] ?? '', { outcome: 'failed', exit_code: 9, status: { exit: 9, signal: null } });
  await mkdir(join(queue.paths.dir('jobs'), 'not-a-job'), { mode: 0o700 });
  const all = await listJobs(queue);
  assert.equal(all.jobs.map((job) => job.id), [...ids].reverse());
  assert.equal([all.total, all.more, all.foreign], [5, false, ['not-a-job']]);
  assert.equal(all.jobs[0], {
    id: ids[4],
    status: 'queued',
    attempts: 0,
    maxAttempts: 1,
    lane: 'web',
    createdMs: all.jobs[0]?.createdMs,
    what: 'job 4',
    argv: ['job', '4'],
    handler: null,
    outcome: null,
    exitCode: null,
    workerId: null,
    priority: 0,
    labels: {},
    startedMs: null,
    finishedMs: null,
    durationMs: null,
  });
  assert.equal([all.jobs[1]?.outcome, all.jobs[1]?.exitCode], ['failed', 9]);
  const two = await listJobs(queue, { limit: 2 });
  assert.equal([two.jobs.map((job) => job.id), two.more], [[ids[4], ids[3]], true]);
  const queued = await listJobs(queue, { statuses: ['queued'] });
  assert.equal(queued.jobs.map((job) => job.id), [ids[4], ids[2], ids[1]]);
  const finished = await listJobs(queue, { statuses: ['finished'], limit: 1 });
  assert.equal(finished.jobs.map((job) => job.id), [ids[3]]);
  const failedOrQueued = await listJobs(queue, { statuses: ['queued'], outcomes: ['failed'], limit: 2, counts: true });
  assert.equal(failedOrQueued.jobs.map((job) => job.id), [ids[4], ids[3]], 'a status or an outcome matches');
  assert.equal(failedOrQueued.counts, { statuses: { queued: 3, finished: 2 }, outcomes: { succeeded: 1, failed: 1 }, workers: {} }, 'counts cover every job, whatever the limit');
});

status('liveWorkers judges each registration by its owner: a dead owner is stale (WORKER-1)', async () => {
  const queue = await freshQueue();
  await registerWorker(queue, 'aaaaaaaaaaaaaaaa', await selfIdentity());
  await registerWorker(queue, 'bbbbbbbbbbbbbbbb', await deadIdentity());
  await writeFile(join(queue.paths.dir('workers'), 'cccccccccccccccc.json'), 'garbage\n', { mode: 0o600 });
  const workers = await liveWorkers(queue);
  assert.equal(workers.map((view) => [view.workerId, view.verdict, view.stale]), [
    ['aaaaaaaaaaaaaaaa', 'alive', false],
    ['bbbbbbbbbbbbbbbb', 'dead', true],
    ['cccccccccccccccc', 'unknown', false],
  ]);
  assert.ok((workers[2]?.findings.length ?? 0) > 0, 'an invalid registration is reported, not trusted');
});

status.run();

const waiting = suite('waitFor and readLogs');
waiting.after(cleanupAll);

waiting('waitFor resolves with the receipt published later, woken by the directory watch before any poll', async () => {
  const queue = await freshQueue();
  const { id } = await enqueue(queue, { argv: ['x'] });
  const waited = waitFor(queue, id, { pollMs: 60_000, timeoutMs: 20_000 });
  await new Promise((resolve) => setTimeout(resolve, 100));
  const receipt = await writeReceipt(queue, id, { outcome: 'failed', exit_code: 4, status: { exit: 4, signal: null } });
  assert.equal(await withWatchdog(5000, waited), receipt);
});

waiting('waitFor returns at once for a finished job, and gives up with TIMEOUT on an unfinished one', async () => {
  const queue = await freshQueue();
  const done = await enqueue(queue, { argv: ['x'] });
  const receipt = await writeReceipt(queue, done.id);
  assert.equal(await waitFor(queue, done.id, { timeoutMs: 0 }), receipt);
  const open = await enqueue(queue, { argv: ['x'] });
  const error = await rejectsWith(waitFor(queue, open.id, { timeoutMs: 150, pollMs: 50 }), 'TIMEOUT');
  assert.is(error.jobId, open.id);
  await rejectsWith(waitFor(queue, '1764476044123456789-3fa2c1d09b8e7f64'), 'NOT_FOUND');
});

waiting('waitFor stops when its signal aborts, with the abort reason', async () => {
  const queue = await freshQueue();
  const { id } = await enqueue(queue, { argv: ['x'] });
  const controller = new AbortController();
  const waited = waitFor(queue, id, { signal: controller.signal });
  setTimeout(() => controller.abort(new Error('operator gave up')), 50);
  try {
    await withWatchdog(5000, waited);
    assert.unreachable('should abort');
  } catch (error) {
    assert.is((error as Error).message, 'operator gave up');
  }
});

waiting('readLogs gives the output of the generation the receipt names, else of the latest generation', async () => {
  const queue = await freshQueue();
  const { id } = await enqueue(queue, { argv: ['x'] });
  assert.equal(await collect(readLogs(queue, id)), [], 'no output yet');
  await writeClaim(queue, id, 1);
  await (await writeOutput(queue, id, 'stdout', 1, 'one\n')).close();
  await writeClaim(queue, id, 2);
  await (await writeOutput(queue, id, 'stdout', 2, 'two\n')).close();
  await (await writeOutput(queue, id, 'stderr', 2, 'err two\n')).close();
  assert.equal(await collect(readLogs(queue, id)), [{ gen: 2, text: 'two\n' }]);
  assert.equal(await collect(readLogs(queue, id, { stream: 'stderr' })), [{ gen: 2, text: 'err two\n' }]);
  // A lost receipt published by generation 3 describes the dead generation 1 (RECOV-1).
  await writeReceipt(queue, id, { gen: 3, outcome: 'lost', exit_code: 125, reason: 'owner_lost', status: null, stdout: { ...summary('one\n', 1), bytes_total: null } });
  assert.equal(await collect(readLogs(queue, id)), [{ gen: 1, text: 'one\n' }]);
});

waiting('follow yields appended bytes, moves to a retry generation, and ends at the receipt', async () => {
  const queue = await freshQueue();
  const { id } = await enqueue(queue, { argv: ['x'] });
  await writeClaim(queue, id, 1);
  const out1 = await writeOutput(queue, id, 'stdout', 1, 'a');
  const chunks: { gen: number; text: string }[] = [];
  const following = (async () => {
    for await (const chunk of readLogs(queue, id, { follow: true, pollMs: 50 })) chunks.push({ gen: chunk.gen, text: chunk.bytes.toString('utf8') });
  })();
  const until = async (text: string): Promise<void> => {
    for (let i = 0; i < 200 && !chunks.map((chunk) => chunk.text).join('').endsWith(text); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  };
  await until('a');
  await out1.write(Buffer.from('b'));
  await out1.close();
  await until('ab');
  await writeEnd(queue, id, 1);
  await writeClaim(queue, id, 2);
  const out2 = await writeOutput(queue, id, 'stdout', 2, 'c');
  await until('c');
  await appendFile(join(queue.paths.job(id), 'stdout.2'), 'd');
  await out2.close();
  await writeReceipt(queue, id, { gen: 2, stdout: summary('cd', 2) });
  await withWatchdog(5000, following);
  assert.is(chunks.map((chunk) => chunk.text).join(''), 'abcd');
  assert.equal([...new Set(chunks.map((chunk) => chunk.gen))], [1, 2]);
});

waiting('a symlink where an output file belongs is refused, never followed (SEC-2)', async () => {
  const queue = await freshQueue();
  const { id } = await enqueue(queue, { argv: ['x'] });
  await writeClaim(queue, id, 1);
  await symlink('/etc/passwd', join(queue.paths.job(id), 'stdout.1'));
  await rejectsWith(collect(readLogs(queue, id)), 'SYMLINK_REFUSED');
});

waiting.run();

const collecting = suite('gc (GC-1, GC-2, READY-3, TEMP-1)');
collecting.after(cleanupAll);

collecting('gc removes finished jobs only: unfinished jobs survive keep 0 with every file', async () => {
  const queue = await freshQueue();
  const finished = await enqueue(queue, { argv: ['done'] });
  const queued = await enqueue(queue, { argv: ['waiting'], stdin_text: 'x' });
  const running = await enqueue(queue, { argv: ['running'] });
  const orphan = await enqueue(queue, { argv: ['orphaned'] });
  await writeReceipt(queue, finished.id);
  await writeClaim(queue, running.id, 1);
  await writeExec(queue, running.id, 1, 1);
  await writeClaim(queue, orphan.id, 1, await deadIdentity());
  const survivors = await Promise.all([queued, running, orphan].map((job) => tree(queue.paths.job(job.id))));
  const result = await gc(queue, { keep: 0 });
  assert.equal(result.jobs, [finished.id]);
  assert.equal(await entries(queue.paths.dir('jobs')), [queued.id, running.id, orphan.id]);
  assert.equal(await Promise.all([queued, running, orphan].map((job) => tree(queue.paths.job(job.id)))), survivors, 'unfinished jobs untouched');
  assert.equal(await entries(queue.paths.dir('tmp')), [], 'the renamed tree is gone');
  assert.equal(result.readyEntries, [`1000-${finished.id}`], "the finished job's ready entry went with it");
  assert.equal(await entries(queue.paths.dir('ready')), [queued, running, orphan].map((job) => `1000-${job.id}`));
});

collecting('gc keeps the N most recently finished jobs, and spares jobs finished less than olderThanMs ago', async () => {
  const queue = await freshQueue();
  const now = Date.now();
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    const { id } = await enqueue(queue, { argv: ['x'] });
    // Finished in reverse enqueue order: the last enqueued finished first.
    await writeReceipt(queue, id, { finished_ms: now - (i + 1) * 60_000 });
    ids.push(id);
  }
  const dry = await gc(queue, { keep: 2, dryRun: true });
  assert.equal(dry.jobs, [ids[4], ids[3], ids[2]], 'oldest finished first');
  assert.is((await entries(queue.paths.dir('jobs'))).length, 5, 'a dry run removes nothing');
  const spared = await gc(queue, { olderThanMs: 4 * 60_000 + 30_000 });
  assert.equal(spared.jobs, [ids[4]], 'only the job finished 5 minutes ago is older than 4.5 minutes');
  const kept = await gc(queue, { keep: 2 });
  assert.equal(kept.jobs, [ids[3], ids[2]]);
  assert.is(kept.kept, 2);
  assert.equal(await entries(queue.paths.dir('jobs')), [ids[0], ids[1]]);
});

collecting('gc removes holds below the highest of each key, never the highest (GC-2, LANE-3)', async () => {
  const queue = await freshQueue();
  const me = await selfIdentity();
  const dir = join(queue.paths.dir('lanes'), keyHash('web'));
  await mkdir(dir, { mode: 0o700 });
  for (const n of [1, 2, 5]) {
    const hold: HoldRecord = { fsjob: '1.0', type: 'hold', kind: 'lane', key: 'web', job_id: '1764476044123456789-3fa2c1d09b8e7f64', gen: n, owner: me, created_ms: Date.now() };
    await publishRecord(dir, `${n}.json`, encodeRecord('hold', hold), 'link', queue.fsOptions);
  }
  const result = await gc(queue);
  assert.equal(result.holds, [`lanes/${keyHash('web')}/1.json`, `lanes/${keyHash('web')}/2.json`]);
  assert.equal(await entries(dir), ['5.json']);
});

collecting('gc removes ready entries of finished jobs, and entries without a job only after TEMP_MAX_AGE (READY-3)', async () => {
  const queue = await freshQueue();
  const ready = queue.paths.dir('ready');
  const young = '1000-1764476044123456789-0000000000000001';
  const old = '1000-1764476044123456789-0000000000000002';
  await writeFile(join(ready, young), '', { mode: 0o600 });
  await writeFile(join(ready, old), '', { mode: 0o600 });
  const hourAgo = new Date(Date.now() - 3_700_000);
  await utimes(join(ready, old), hourAgo, hourAgo);
  const result = await gc(queue);
  assert.equal(result.readyEntries, [old]);
  assert.equal(await entries(ready), [young], 'a producer may be between ENQ-2 and ENQ-3');
});

collecting('gc removes stale tmp/ entries after TEMP_MAX_AGE and leaves fresh staging alone (TEMP-1)', async () => {
  const queue = await freshQueue();
  const tmp = queue.paths.dir('tmp');
  await mkdir(join(tmp, '.gc-1764476044123456789-3fa2c1d09b8e7f64-00'), { mode: 0o700 });
  await mkdir(join(tmp, '1764476044123456789-0000000000000003'), { mode: 0o700 });
  const hourAgo = new Date(Date.now() - 3_700_000);
  await utimes(join(tmp, '.gc-1764476044123456789-3fa2c1d09b8e7f64-00'), hourAgo, hourAgo);
  const result = await gc(queue);
  assert.equal(result.temps, ['.gc-1764476044123456789-3fa2c1d09b8e7f64-00']);
  assert.equal(await entries(tmp), ['1764476044123456789-0000000000000003']);
});

collecting('a job whose receipt.json is not a valid receipt is left alone and reported', async () => {
  const queue = await freshQueue();
  const { id } = await enqueue(queue, { argv: ['x'] });
  await writeFile(join(queue.paths.job(id), 'receipt.json'), '{"fsjob":"1.0","type":"receipt"}\n', { mode: 0o600 });
  const result = await gc(queue);
  assert.equal(result.jobs, []);
  assert.equal(result.skipped.map((skip) => skip.id), [id]);
  assert.ok((await readFile(join(queue.paths.job(id), 'spec.json'))).length > 0);
});

collecting.run();
