/**
 * The floor in Node: bench/floor.c's payload job made as the reference
 * makes its system calls (spec/design-floor-gap.md), with the least
 * JavaScript around them. The queue's directories are held open and their
 * entries named through /proc/self/fd/N; the producer opens, fstats and
 * chmods its staged directory, looks before the rename and fsyncs tmp/;
 * the consumer lstats pause.json, opens and fstats the job directory,
 * reads spec.json (open, fstat, pread), lists the directory, publishes the
 * claim, exec record and receipt by link, lstats the cancel names and
 * claim.2.json as CLAIM-6 and CLAIM-7 ask, and removes the ready entry:
 * some 56 calls a job, as the reference's. Its JavaScript is one flat
 * function per side, records by JSON.stringify, the spec by JSON.parse
 * and its compact form compared: no schema, no identity, no events, no
 * recovery. It is no implementation of the protocol, only what any Node
 * implementation of these calls must at least spend.
 *
 * The phases are counted as bench/cpu-per-job.bench.ts counts them: 5
 * warm-up jobs, then N enqueued and N consumed, process.cpuUsage (every
 * thread) around each phase, per job. JavaScript, run as `node
 * node-floor.mjs`: no tsx loader in the measured process.
 *
 * Usage: node node-floor.mjs <n> <dir>   makes <dir>/q (which must not exist); prints one JSON line
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import path from 'node:path';

const n = Number(process.argv[2] ?? 300);
const dir = process.argv[3];
if (dir === undefined || !(n > 0)) {
  process.stderr.write('usage: node node-floor.mjs <n> <dir>\n');
  process.exit(2);
}
const root = path.join(dir, 'q');
for (const name of ['', 'tmp', 'jobs', 'ready']) fs.mkdirSync(path.join(root, name), { mode: 0o700 });

const C = fs.constants;
const OPEN_DIR = C.O_RDONLY | C.O_DIRECTORY | C.O_NOFOLLOW | C.O_CLOEXEC;
const CREATE = C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW | C.O_CLOEXEC;
const READ = C.O_RDONLY | C.O_NONBLOCK | C.O_NOFOLLOW | C.O_CLOEXEC;
/** An entry of the directory held by `fd`, named inside it (the reference's held handles, src/fs/open-dir.ts). */
const at = (fd, name) => `/proc/self/fd/${fd}/${name}`;
const self = (fd) => `/proc/self/fd/${fd}`;
const missing = (fd, name) => fs.lstatSync(at(fd, name), { throwIfNoEntry: false }) === undefined;
const rootFd = fs.openSync(root, OPEN_DIR);
const [tmp, jobs, ready] = ['tmp', 'jobs', 'ready'].map((name) => fs.openSync(at(rootFd, name), OPEN_DIR));
// Random names from a pool filled 4 KiB at a time, as the reference's (randomBytes checks getpid per call).
let pool = randomBytes(4096);
let used = 0;
const hex = () => {
  if (used + 8 > pool.length) [pool, used] = [randomBytes(4096), 0];
  used += 8;
  return pool.toString('hex', used - 8, used);
};

function createWrite(fd, name, text) {
  const file = fs.openSync(at(fd, name), CREATE, 0o600);
  const bytes = Buffer.from(text);
  fs.writeSync(file, bytes, 0, bytes.length, 0);
  fs.fsyncSync(file);
  fs.closeSync(file);
}

/** PUB-1..PUB-6: a temp file, its link, its removal, the directory's fsync. */
function publish(fd, name, record) {
  const temp = `.${name}.${hex()}`;
  createWrite(fd, temp, `${JSON.stringify(record)}\n`);
  fs.linkSync(at(fd, temp), at(fd, name));
  fs.unlinkSync(at(fd, temp));
  fs.fsyncSync(fd);
}

function enqueue(i, payload) {
  const now = Date.now();
  const id = `${String(now * 1e6 + i).padStart(19, '0')}-${hex()}`;
  fs.mkdirSync(at(tmp, id), { mode: 0o700 });
  const staged = fs.openSync(at(tmp, id), OPEN_DIR);
  if (!fs.fstatSync(staged).isDirectory()) throw new Error(`${id}: not a directory`);
  fs.fchmodSync(staged, 0o700);
  const spec = { fsjob: '1.2', type: 'spec', id, created_ms: now, handler: 'bench', payload, priority: 1000, max_attempts: 1, timeout_ms: 60_000, kill_grace_ms: 5_000, queue_deadline_ms: null, stdin: null, lane: null, labels: {} };
  createWrite(staged, 'spec.json', `${JSON.stringify(spec)}\n`);
  fs.fsyncSync(staged);
  fs.closeSync(fs.openSync(at(ready, `1000-${id}`), CREATE, 0o600));
  if (!missing(jobs, id)) throw new Error(`${id}: taken`);
  fs.renameSync(at(tmp, id), at(jobs, id));
  fs.closeSync(staged);
  fs.fsyncSync(tmp);
  fs.fsyncSync(jobs);
}

function consume(entry, handler) {
  if (fs.lstatSync(path.join(root, 'pause.json'), { throwIfNoEntry: false }) !== undefined) return;
  const id = entry.slice(entry.indexOf('-') + 1);
  const job = fs.openSync(at(jobs, id), OPEN_DIR);
  const stats = fs.fstatSync(job);
  if (!stats.isDirectory() || (stats.mode & 0o022) !== 0) throw new Error(`${id}: not a private directory`);
  const file = fs.openSync(at(job, 'spec.json'), READ);
  const size = fs.fstatSync(file).size;
  const bytes = Buffer.allocUnsafe(size + 1);
  const got = fs.readSync(file, bytes, 0, size + 1, 0);
  fs.closeSync(file);
  const text = bytes.toString('utf8', 0, got - 1);
  const spec = JSON.parse(text);
  if (got !== size || JSON.stringify(spec) !== text || spec.id !== id) throw new Error(`${id}: spec`);
  if (fs.readdirSync(self(job), { withFileTypes: true }).some((e) => e.name === 'receipt.json' || e.name.startsWith('claim.'))) throw new Error(`${id}: claimed`);
  const owner = { host: 'h', boot_id: 'b', pid: process.pid, start_time: 1, worker_id: 'w' };
  publish(job, 'claim.1.json', { fsjob: '1.2', type: 'claim', job_id: id, gen: 1, claimed_ms: Date.now(), lease_ms: 30_000, owner });
  if (!missing(job, 'cancel.json') || !missing(job, 'cancel-force.json')) throw new Error(`${id}: cancelled`);
  if (!missing(job, 'claim.2.json')) throw new Error(`${id}: superseded`);
  publish(job, 'exec.1.json', { fsjob: '1.2', type: 'exec', job_id: id, gen: 1, attempt: 1, started_ms: Date.now() });
  const result = handler({ jobId: id, payload: spec.payload });
  if (!missing(job, 'claim.2.json')) throw new Error(`${id}: superseded`);
  publish(job, 'receipt.json', { fsjob: '1.2', type: 'receipt', job_id: id, gen: 1, outcome: 'succeeded', finished_ms: Date.now(), attempts: 1, result, message: null });
  fs.unlinkSync(at(ready, entry));
  fs.closeSync(job);
}

const drain = () => {
  for (const entry of fs.readdirSync(self(ready)).sort()) consume(entry, () => ({}));
};
const perJob = (since) => {
  const used = process.cpuUsage(since);
  return { cpu_ms: (used.user + used.system) / 1000 / n, user_ms: used.user / 1000 / n, sys_ms: used.system / 1000 / n };
};
for (let i = 0; i < 5; i++) enqueue(i, { i });
drain();
let since = process.cpuUsage();
for (let i = 0; i < n; i++) enqueue(5 + i, { i, pad: 'x'.repeat(400) });
const enqueued = perJob(since);
since = process.cpuUsage();
drain();
process.stdout.write(`${JSON.stringify({ jobs: n, enqueue: enqueued, consume: perJob(since) })}\n`);
