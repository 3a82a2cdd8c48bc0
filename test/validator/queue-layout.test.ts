/**
 * fsjob validate QUEUE, layout and names: the queue record, the root's
 * entries, job ids, unknown names in job directories, ready entry names and
 * priorities, hold and worker names, and records checked in place (REC-4)
 * with the member at fault.
 */
import { mkdir, rm, writeFile, readFile, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { keyHash, readyEntryName } from '../../src/model/layout.ts';
import { cleanupAll } from '../support/helpers.ts';
import { audit, codes, enqueue, expectFinding, expectSome, finishedJob, newQueue, publishHold, registerWorker } from '../support/validate-queue.ts';

const queueRecord = suite('the queue record and root (LAYOUT-1, LAYOUT-2, VER-1)');
queueRecord.after(cleanupAll);

queueRecord('a queue freshly made by init, with jobs, audits with no finding at all', async () => {
  const queue = await newQueue();
  await finishedJob(queue);
  await enqueue(queue);
  const result = await audit(queue);
  assert.equal(result.findings, []);
  assert.is(result.jobs, 2);
});

queueRecord('an invalid fsjob.json is QUEUE_RECORD_INVALID (plus the record finding) and the rest is still audited', async () => {
  const queue = await newQueue();
  const id = (await enqueue(queue)).id;
  await rm(join(queue.paths.dir('ready'), readyEntryName(0, id)));
  const path = queue.paths.queueRecord();
  await writeFile(path, (await readFile(path, 'utf8')).replace(/"queue_id":"[0-9a-f]+"/, '"queue_id":"XYZ"'));
  const result = await audit(queue);
  expectFinding(result, 'QUEUE_RECORD_INVALID', { path, clause: 'LAYOUT-2', jobId: null, severity: 'error' });
  expectSome(result, 'RECORD_SCHEMA', { path, clause: 'REC-5', field: '/queue_id' });
  expectFinding(result, 'READY_MISSING', { path: join(queue.paths.dir('ready'), readyEntryName(0, id)), clause: 'READY-1', jobId: id });
});

queueRecord('a queue record of another major is QUEUE_VERSION and nothing inside is judged', async () => {
  const queue = await newQueue();
  await mkdir(join(queue.root, 'stray'));
  const path = queue.paths.queueRecord();
  await writeFile(path, (await readFile(path, 'utf8')).replace(/"fsjob":"1\.[012]"/, '"fsjob":"2.0"'));
  const result = await audit(queue);
  expectFinding(result, 'QUEUE_VERSION', { path, clause: 'VER-1', severity: 'error' });
  expectFinding(result, 'RECORD_VERSION', { path, clause: 'VER-1', field: '/fsjob' });
  assert.equal(codes(result).sort(), ['QUEUE_VERSION', 'RECORD_VERSION']);
});

queueRecord('a missing queue directory is QUEUE_DIR_MISSING; an unknown root entry is ROOT_UNKNOWN_ENTRY', async () => {
  const queue = await newQueue();
  await rm(queue.paths.dir('workers'), { recursive: true });
  await writeFile(join(queue.root, 'notes.txt'), 'x', { mode: 0o600 });
  const result = await audit(queue);
  expectFinding(result, 'QUEUE_DIR_MISSING', { path: queue.paths.dir('workers'), clause: 'LAYOUT-1', severity: 'error' });
  expectFinding(result, 'ROOT_UNKNOWN_ENTRY', { path: join(queue.root, 'notes.txt'), clause: 'LAYOUT-1', severity: 'warning' });
});

queueRecord.run();

const names = suite('names inside the queue (LAYOUT-4..LAYOUT-9)');
names.after(cleanupAll);

names('a name in jobs/ that is not a job id is JOB_BAD_ID and is never entered', async () => {
  const queue = await newQueue();
  const foreign = join(queue.paths.dir('jobs'), '1764476044123456789-3FA2C1D09B8E7F64');
  await mkdir(foreign, { mode: 0o700 });
  await writeFile(join(foreign, 'spec.json'), 'not json', { mode: 0o600 });
  const result = await audit(queue);
  expectFinding(result, 'JOB_BAD_ID', { path: foreign, clause: 'LAYOUT-4', jobId: null, severity: 'warning' });
  assert.equal(codes(result), ['JOB_BAD_ID']);
});

names('an unknown name in a job directory is JOB_UNKNOWN_ENTRY, including a generation beyond GEN_MAX', async () => {
  const queue = await newQueue();
  const id = await finishedJob(queue);
  for (const name of ['notes.txt', 'claim.10001.json']) await writeFile(join(queue.paths.job(id), name), '{}\n', { mode: 0o600 });
  const result = await audit(queue);
  const found = result.findings.filter((finding) => finding.code === 'JOB_UNKNOWN_ENTRY');
  assert.equal(found.map((finding) => [finding.path, finding.clause, finding.job_id]), [
    [join(queue.paths.job(id), 'claim.10001.json'), 'LAYOUT-6', id],
    [join(queue.paths.job(id), 'notes.txt'), 'LAYOUT-6', id],
  ]);
});

names('a ready entry not named <P>-<id> is READY_BAD_NAME; a non-empty one is READY_NOT_EMPTY', async () => {
  const queue = await newQueue();
  const { id } = await enqueue(queue);
  const bad = join(queue.paths.dir('ready'), `3000-${id}`);
  await writeFile(bad, '', { mode: 0o600 });
  const entry = join(queue.paths.dir('ready'), readyEntryName(0, id));
  await writeFile(entry, 'why');
  const result = await audit(queue);
  expectFinding(result, 'READY_BAD_NAME', { path: bad, clause: 'LAYOUT-7', severity: 'warning' });
  expectFinding(result, 'READY_NOT_EMPTY', { path: entry, clause: 'LAYOUT-7', jobId: id, severity: 'warning' });
});

names('a ready entry whose priority disagrees with spec.json is READY_PRIORITY', async () => {
  const queue = await newQueue();
  const { id } = await enqueue(queue, { priority: 7 });
  const wrong = join(queue.paths.dir('ready'), readyEntryName(8, id));
  await writeFile(wrong, '', { mode: 0o600 });
  const result = await audit(queue);
  expectFinding(result, 'READY_PRIORITY', { path: wrong, clause: 'LAYOUT-7', jobId: id, severity: 'error' });
});

names('hold directories and files with bad names are HOLD_BAD_NAME; a worker file with a bad name is WORKER_BAD_NAME', async () => {
  const queue = await newQueue();
  const { id } = await enqueue(queue, { dedupe: 'k' });
  const badKey = join(queue.paths.dir('lanes'), 'not-a-digest');
  await mkdir(badKey, { mode: 0o700 });
  const badHold = join(queue.paths.dir('dedupe'), keyHash('k'), '01.json');
  await writeFile(badHold, '{}\n', { mode: 0o600 });
  const badWorker = join(queue.paths.dir('workers'), 'worker-1.json');
  await writeFile(badWorker, '{}\n', { mode: 0o600 });
  const result = await audit(queue);
  const holds = result.findings.filter((finding) => finding.code === 'HOLD_BAD_NAME');
  assert.equal(holds.map((finding) => [finding.path, finding.clause]).sort(), [
    [badHold, 'LAYOUT-8'],
    [badKey, 'LAYOUT-8'],
  ]);
  expectFinding(result, 'WORKER_BAD_NAME', { path: badWorker, clause: 'LAYOUT-9', severity: 'warning' });
  assert.not.ok(codes(result).includes('DEDUPE_UNHELD'), `job ${id} still holds its key`);
});

names.run();

const records = suite('records checked in place (REC-4)');
records.after(cleanupAll);

records('a record that breaks its schema is reported with the member at fault and the job', async () => {
  const queue = await newQueue();
  const id = await finishedJob(queue);
  const path = join(queue.paths.job(id), 'claim.1.json');
  await writeFile(path, (await readFile(path, 'utf8')).replace('"lease_ms":30000', '"lease_ms":1'));
  const result = await audit(queue);
  expectFinding(result, 'RECORD_SCHEMA', { path, clause: 'REC-5', jobId: id, field: '/lease_ms' });
});

records('a record naming another job is RECORD_ID_MISMATCH; a generation record naming another generation is RECORD_GEN_MISMATCH', async () => {
  const queue = await newQueue();
  const id = await finishedJob(queue);
  const other = await finishedJob(queue);
  const spec = join(queue.paths.job(id), 'spec.json');
  await writeFile(spec, await readFile(join(queue.paths.job(other), 'spec.json')));
  const exec = join(queue.paths.job(id), 'exec.1.json');
  await writeFile(exec, (await readFile(exec, 'utf8')).replace('"gen":1', '"gen":2'));
  const result = await audit(queue);
  expectFinding(result, 'RECORD_ID_MISMATCH', { path: spec, clause: 'REC-7', jobId: id, field: '/id' });
  expectFinding(result, 'RECORD_GEN_MISMATCH', { path: exec, clause: 'REC-7', jobId: id, field: '/gen' });
});

records('records of a newer minor are read (RECORD_NEWER_MINOR, info); another major is RECORD_VERSION', async () => {
  const queue = await newQueue();
  const id = await finishedJob(queue);
  const claimPath = join(queue.paths.job(id), 'claim.1.json');
  await writeFile(claimPath, (await readFile(claimPath, 'utf8')).replace(/"fsjob":"1\.[012]"/, '"fsjob":"1.7"').replace('"lease_ms":30000', '"lease_ms":30000,"future":true'));
  const execPath = join(queue.paths.job(id), 'exec.1.json');
  await writeFile(execPath, (await readFile(execPath, 'utf8')).replace(/"fsjob":"1\.[012]"/, '"fsjob":"3.0"'));
  const result = await audit(queue);
  expectFinding(result, 'RECORD_NEWER_MINOR', { path: claimPath, clause: 'VER-3', severity: 'info' });
  expectFinding(result, 'RECORD_VERSION', { path: execPath, clause: 'VER-1', field: '/fsjob' });
});

records('hold and worker records are checked against their names (REC-7)', async () => {
  const queue = await newQueue();
  const { id } = await finishedJobWithLane(queue);
  const holdPath = join(queue.paths.dir('lanes'), keyHash('L'), '1.json');
  const moved = join(queue.paths.dir('lanes'), keyHash('M'));
  await mkdir(moved, { mode: 0o700 });
  await writeFile(join(moved, '1.json'), await readFile(holdPath));
  await registerWorker(queue, '00000000000000aa');
  const workerPath = join(queue.paths.dir('workers'), '00000000000000aa.json');
  await writeFile(join(queue.paths.dir('workers'), '00000000000000bb.json'), await readFile(workerPath), { mode: 0o600 });
  const result = await audit(queue);
  const mismatches = result.findings.filter((finding) => finding.code === 'RECORD_NAME_MISMATCH');
  assert.equal(mismatches.map((finding) => [finding.path, finding.field]).sort(), [
    [join(moved, '1.json'), '/key'],
    [join(queue.paths.dir('workers'), '00000000000000bb.json'), '/worker_id'],
  ]);
  void id;
});

async function finishedJobWithLane(queue: Awaited<ReturnType<typeof newQueue>>): Promise<{ id: string }> {
  const id = await finishedJob(queue, { lane: 'L' });
  await publishHold(queue, 'lanes', 'L', 1, id, 1);
  return { id };
}

records('a ready entry for a missing job is reported only once it is older than TEMP_MAX_AGE (READY_NO_JOB)', async () => {
  const queue = await newQueue();
  const young = join(queue.paths.dir('ready'), readyEntryName(0, '1764476044123456789-0000000000000001'));
  const old = join(queue.paths.dir('ready'), readyEntryName(0, '1764476044123456789-0000000000000002'));
  await writeFile(young, '', { mode: 0o600 });
  await writeFile(old, '', { mode: 0o600 });
  const past = new Date(Date.now() - 2 * 3_600_000);
  await utimes(old, past, past);
  const result = await audit(queue);
  expectFinding(result, 'READY_NO_JOB', { path: old, clause: 'READY-3', severity: 'warning' });
});

records.run();
