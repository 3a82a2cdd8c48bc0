/**
 * fsjob validate QUEUE, hazards: real symlinks, a real FIFO and a real unix
 * socket, files over their bounds, real chmod and chown, stale temporary
 * files. Each is reported with its path and clause, none is followed or
 * opened, and the audit leaves every entry of the queue exactly as it was.
 */
import { chmod, chown, link, mkdir, symlink, truncate, utimes, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readyEntryName } from '../../src/model/layout.ts';
import type { Queue } from '../../src/model/queue.ts';
import { NOBODY, cleanupAll, freshDir, mkfifo, withWatchdog } from '../support/helpers.ts';
import { audit, claim, codes, enqueue, exec, expectFinding, expectSome, finishedJob, killChildren, newQueue, only, snapshot } from '../support/validate-queue.ts';

const WATCHDOG_MS = 5000;
const servers: Server[] = [];

async function unixSocket(path: string): Promise<void> {
  const server = createServer();
  servers.push(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, resolve);
  });
}

async function closeServers(): Promise<void> {
  for (const server of servers.splice(0)) await new Promise<void>((resolve) => server.close(() => resolve()));
}

const links = suite('symlinks are reported and never followed (SEC-2)');
links.after(cleanupAll);

links('a symlink at a record name is RECORD_SYMLINK; its target is never read', async () => {
  const queue = await newQueue();
  const id = await finishedJob(queue);
  const outside = join(await freshDir('outside'), 'cancel.json');
  await writeFile(outside, 'garbage that would fail every check', { mode: 0o600 });
  const path = join(queue.paths.job(id), 'cancel.json');
  await symlink(outside, path);
  const result = await audit(queue);
  expectFinding(result, 'RECORD_SYMLINK', { path, clause: 'SEC-2', jobId: id, severity: 'error' });
  assert.not.ok(codes(result).includes('RECORD_BAD_JSON'), 'the target was not read');
});

links('a symlink in jobs/, in ready/ or in place of a queue directory is ENTRY_SYMLINK and is not entered', async () => {
  const queue = await newQueue();
  const elsewhere = await newQueue('elsewhere');
  const foreignJob = await finishedJob(elsewhere);
  const { id } = await enqueue(queue);
  const jobLink = join(queue.paths.dir('jobs'), foreignJob);
  await symlink(elsewhere.paths.job(foreignJob), jobLink);
  const readyLink = join(queue.paths.dir('ready'), readyEntryName(0, foreignJob));
  await symlink('/etc/passwd', readyLink);
  const workers = queue.paths.dir('workers');
  await mkdir(join(elsewhere.root, 'workers-elsewhere'), { mode: 0o700 });
  await writeFile(join(elsewhere.root, 'workers-elsewhere', 'bogus'), 'x');
  const { rm } = await import('node:fs/promises');
  await rm(workers, { recursive: true });
  await symlink(join(elsewhere.root, 'workers-elsewhere'), workers);
  const result = await audit(queue);
  const found = only(result, 'ENTRY_SYMLINK').map((finding) => [finding.path, finding.clause]);
  assert.equal(found.sort(), [
    [jobLink, 'SEC-2'],
    [readyLink, 'SEC-2'],
    [workers, 'SEC-2'],
  ].sort());
  assert.not.ok(codes(result).includes('WORKER_BAD_NAME'), 'the linked workers/ was not listed');
  assert.is(result.jobs, 1, `only ${id} is a job`);
});

links.run();

const special = suite('FIFOs and sockets are reported, never opened (SEC-3)');
special.after(async () => {
  await closeServers();
  await cleanupAll();
});

special('a FIFO at a record name, a FIFO output and a unix socket in ready/ are reported promptly (watchdog)', async () => {
  const queue = await newQueue();
  const { id } = await enqueue(queue);
  await claim(queue, id, 1);
  const fifoRecord = join(queue.paths.job(id), 'exec.1.json');
  mkfifo(fifoRecord);
  const fifoOutput = join(queue.paths.job(id), 'stdout.1');
  mkfifo(fifoOutput);
  const socket = join(queue.paths.dir('ready'), readyEntryName(0, '1764476044123456789-00000000000000ff'));
  await unixSocket(socket);
  const result = await withWatchdog(WATCHDOG_MS, audit(queue), () => {
    // Had the audit opened a FIFO blocking, this opens the other end so the test fails instead of hanging.
    void import('node:fs').then((fs) => {
      for (const path of [fifoRecord, fifoOutput]) fs.open(path, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK, () => undefined);
    });
  });
  expectFinding(result, 'RECORD_NOT_REGULAR', { path: fifoRecord, clause: 'SEC-3', jobId: id, severity: 'error' });
  const wrong = only(result, 'ENTRY_WRONG_TYPE').map((finding) => [finding.path, finding.clause]);
  assert.equal(wrong.sort(), [
    [fifoOutput, 'SEC-3'],
    [socket, 'SEC-3'],
  ].sort());
});

special.run();

const bounds = suite('files over their bound are refused unread (SEC-4)');
bounds.after(cleanupAll);

bounds('a record over RECORD_MAX is RECORD_TOO_LARGE; an output over OUTPUT_MAX and a stdin over STDIN_MAX are ENTRY_TOO_LARGE', async () => {
  const queue = await newQueue();
  const { id } = await enqueue(queue, { stdinBytes: Buffer.from('in') });
  await claim(queue, id, 1);
  await exec(queue, id, 1);
  const cancelPath = join(queue.paths.job(id), 'cancel.json');
  await writeFile(cancelPath, '', { mode: 0o600 });
  await truncate(cancelPath, 2 * 1024 * 1024);
  const stdout = join(queue.paths.job(id), 'stdout.1');
  await truncate(stdout, 64 * 1024 * 1024 + 1);
  const stdin = join(queue.paths.job(id), 'stdin');
  await truncate(stdin, 64 * 1024 * 1024 + 1);
  const result = await withWatchdog(WATCHDOG_MS, audit(queue));
  expectFinding(result, 'RECORD_TOO_LARGE', { path: cancelPath, clause: 'SEC-4', jobId: id });
  const large = only(result, 'ENTRY_TOO_LARGE').map((finding) => [finding.path, finding.clause]);
  assert.equal(large.sort(), [
    [stdin, 'SEC-4'],
    [stdout, 'SEC-4'],
  ].sort());
});

bounds.run();

const modes = suite('modes and owners (SEC-5, SEC-6)');
modes.after(cleanupAll);

modes('group/other-writable entries are errors (RECORD_MODE, ENTRY_WRITABLE); group/other-readable ones warnings (ENTRY_READABLE)', async () => {
  const queue = await newQueue();
  const id = await finishedJob(queue);
  const dir = queue.paths.job(id);
  await chmod(join(dir, 'spec.json'), 0o620);
  await chmod(join(dir, 'claim.1.json'), 0o640);
  await chmod(join(dir, 'stdout.1'), 0o666);
  await chmod(dir, 0o750);
  await chmod(queue.paths.dir('tmp'), 0o770);
  const result = await audit(queue);
  expectFinding(result, 'RECORD_MODE', { path: join(dir, 'spec.json'), clause: 'SEC-5', jobId: id, severity: 'error' });
  expectSome(result, 'ENTRY_WRITABLE', { path: join(dir, 'stdout.1'), clause: 'SEC-5', jobId: id });
  const readable = only(result, 'ENTRY_READABLE').map((finding) => [finding.path, finding.clause, finding.severity]);
  assert.equal(readable.sort(), [
    [dir, 'SEC-5', 'warning'],
    [join(dir, 'claim.1.json'), 'SEC-5', 'warning'],
  ].sort());
  // tmp/ writable by the group: an error too, on a queue directory.
  expectSome(result, 'ENTRY_WRITABLE', { path: queue.paths.dir('tmp'), clause: 'SEC-5', jobId: null });
  assert.ok(only(result, 'ENTRY_WRITABLE').every((finding) => finding.severity === 'error'));
});

modes('entries owned by another user (uid 65534) are RECORD_OWNER and ENTRY_OWNER', async () => {
  const queue = await newQueue();
  const id = await finishedJob(queue);
  const dir = queue.paths.job(id);
  await chown(join(dir, 'receipt.json'), NOBODY, NOBODY);
  await chown(join(dir, 'stderr.1'), NOBODY, NOBODY);
  await chown(dir, NOBODY, NOBODY);
  const result = await audit(queue);
  expectFinding(result, 'RECORD_OWNER', { path: join(dir, 'receipt.json'), clause: 'SEC-6', jobId: id, severity: 'error' });
  const owners = only(result, 'ENTRY_OWNER').map((finding) => [finding.path, finding.clause]);
  assert.equal(owners.sort(), [
    [dir, 'SEC-6'],
    [join(dir, 'stderr.1'), 'SEC-6'],
  ].sort());
});

const hardLinks = suite('hard links (SEC-9)');
hardLinks.after(cleanupAll);

hardLinks('a record or data file hard-linked to a file outside is ENTRY_HARDLINK; a record and its temporary name (PUB-3..PUB-6) are not', async () => {
  const queue = await newQueue();
  const id = await finishedJob(queue);
  const dir = queue.paths.job(id);
  const outside = await freshDir('outside');
  await link(join(dir, 'receipt.json'), join(outside, 'receipt-copy'));
  await link(join(dir, 'stdout.1'), join(outside, 'stdout-copy'));
  await link(join(dir, 'spec.json'), join(dir, '.spec.json.tmp')); // a writer between PUB-3 and PUB-6
  const result = await audit(queue);
  const found = only(result, 'ENTRY_HARDLINK').map((finding) => [finding.path, finding.clause, finding.severity, finding.job_id]);
  assert.equal(found.sort(), [
    [join(dir, 'receipt.json'), 'SEC-9', 'warning', id],
    [join(dir, 'stdout.1'), 'SEC-9', 'warning', id],
  ].sort());
});

hardLinks.run();

modes.run();

const temps = suite('temporary files (TEMP-1)');
temps.after(cleanupAll);

temps('temp names and tmp/ entries older than TEMP_MAX_AGE are TEMP_STALE; younger ones are in progress and not reported', async () => {
  const queue = await newQueue();
  const id = await finishedJob(queue);
  const old = new Date(Date.now() - 2 * 3_600_000);
  const staleTemp = join(queue.paths.job(id), '.claim.2.json.0123456789abcdef');
  await writeFile(staleTemp, '{', { mode: 0o600 });
  await utimes(staleTemp, old, old);
  await writeFile(join(queue.paths.job(id), '.exec.2.json.fedcba9876543210'), '{', { mode: 0o600 });
  const staleStaging = join(queue.paths.dir('tmp'), '1764476044123456789-0123456789abcdef');
  await mkdir(staleStaging, { mode: 0o700 });
  await utimes(staleStaging, old, old);
  await mkdir(join(queue.paths.dir('tmp'), '1764476044123456789-fedcba9876543210'), { mode: 0o700 });
  const result = await audit(queue);
  const stale = only(result, 'TEMP_STALE').map((finding) => [finding.path, finding.clause, finding.severity, finding.job_id]);
  assert.equal(stale.sort(), [
    [staleStaging, 'TEMP-1', 'warning', null],
    [staleTemp, 'TEMP-1', 'warning', id],
  ].sort());
});

temps.run();

const readOnly = suite('the audit never writes (CONF-3)');
readOnly.after(async () => {
  await closeServers();
  await killChildren();
  await cleanupAll();
});

/** A queue holding every hazard of this file at once. */
async function hazardQueue(): Promise<Queue> {
  const queue = await newQueue('hazards');
  const id = await finishedJob(queue, { stdinBytes: Buffer.from('stdin bytes') });
  const running = (await enqueue(queue, { lane: 'L', dedupe: 'D' })).id;
  await claim(queue, running, 1);
  await exec(queue, running, 1);
  const dir = queue.paths.job(id);
  await symlink('/etc/passwd', join(dir, 'cancel.json'));
  mkfifo(join(dir, 'end.1.json'));
  await unixSocket(join(queue.paths.dir('ready'), 'socket'));
  await chmod(join(dir, 'spec.json'), 0o666);
  await chown(join(dir, 'claim.1.json'), NOBODY, NOBODY);
  await writeFile(join(dir, 'receipt.json'), '{"fsjob":"1.0"', { mode: 0o600 });
  await writeFile(join(dir, '.stale'), '', { mode: 0o600 });
  const old = new Date(Date.now() - 7_200_000);
  await utimes(join(dir, '.stale'), old, old);
  await mkdir(join(queue.paths.dir('jobs'), 'not-a-job'), { mode: 0o755 });
  await writeFile(join(queue.root, 'stray'), 'x', { mode: 0o644 });
  return queue;
}

readOnly('every entry keeps its type, mode, owner, size, times, inode and content after an audit of a queue full of hazards', async () => {
  const queue = await hazardQueue();
  const before = await snapshot(queue.root);
  const result = await withWatchdog(WATCHDOG_MS, audit(queue));
  assert.ok(result.findings.length >= 8, `the hazards were seen: ${codes(result).join(' ')}`);
  const after = await snapshot(queue.root);
  assert.equal([...after.keys()], [...before.keys()], 'no entry added or removed');
  for (const [path, entry] of before) assert.equal(after.get(path), entry, path);
});

readOnly('scanning in worker threads (as big queues are) finds exactly what the inline scan finds, in the same order, and writes nothing either', async () => {
  const queue = await hazardQueue();
  for (let i = 0; i < 5; i++) await finishedJob(queue);
  const before = await snapshot(queue.root);
  const inline = await audit(queue, { threads: 1 });
  // The workers alone (the main thread scans nothing), then with the main thread scanning beside them.
  const threaded = await withWatchdog(30_000, audit(queue, { threads: 2, mainThreadScans: false }));
  assert.equal(threaded, inline);
  // Batches of one job: each thread holds two at once, and answers come back interleaved across threads.
  assert.equal(await withWatchdog(30_000, audit(queue, { threads: 2, threadBatch: 1, mainThreadScans: false })), inline, 'many batches in flight');
  assert.equal(await withWatchdog(30_000, audit(queue, { threads: 3, threadBatch: 1 })), inline, 'the main thread scanning too');
  const after = await snapshot(queue.root);
  assert.equal([...after.keys()], [...before.keys()]);
  for (const [path, entry] of before) assert.equal(after.get(path), entry, path);
});

readOnly('worker threads started for a queue that turns out to hold no job are ended, and the audit is the inline one', async () => {
  const queue = await newQueue();
  const inline = await audit(queue, { threads: 1 });
  // threads asked for: the pool starts before jobs/ is listed, and the empty listing ends it (a pool left running would hang the test).
  assert.equal(await withWatchdog(30_000, audit(queue, { threads: 2 })), inline);
  assert.equal(await withWatchdog(30_000, audit(queue, { threads: 2, mainThreadScans: false })), inline);
});

readOnly.run();
