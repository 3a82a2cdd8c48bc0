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
 * thread) around each phase, per job (bench/lib/floor-job.mjs, which
 * bench/native-floor/native-floor.mjs shares). JavaScript, run as `node
 * node-floor.mjs`: no tsx loader in the measured process.
 *
 * Usage: node node-floor.mjs <n> <dir>   makes <dir>/q (which must not exist); prints one JSON line
 */
import * as fs from 'node:fs';
import path from 'node:path';
import { claimedBefore, claimOf, execOf, hex, jobId, line, measure, parseSpec, receiptOf, specOf } from './lib/floor-job.mjs';

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
  createWrite(fd, temp, line(record));
  fs.linkSync(at(fd, temp), at(fd, name));
  fs.unlinkSync(at(fd, temp));
  fs.fsyncSync(fd);
}

function enqueue(i, payload) {
  const now = Date.now();
  const id = jobId(now, i);
  fs.mkdirSync(at(tmp, id), { mode: 0o700 });
  const staged = fs.openSync(at(tmp, id), OPEN_DIR);
  if (!fs.fstatSync(staged).isDirectory()) throw new Error(`${id}: not a directory`);
  fs.fchmodSync(staged, 0o700);
  createWrite(staged, 'spec.json', line(specOf(id, now, payload)));
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
  if (got !== size) throw new Error(`${id}: spec`);
  const spec = parseSpec(bytes.toString('utf8', 0, got - 1), id);
  if (claimedBefore(fs.readdirSync(self(job)))) throw new Error(`${id}: claimed`);
  publish(job, 'claim.1.json', claimOf(id));
  if (!missing(job, 'cancel.json') || !missing(job, 'cancel-force.json')) throw new Error(`${id}: cancelled`);
  if (!missing(job, 'claim.2.json')) throw new Error(`${id}: superseded`);
  publish(job, 'exec.1.json', execOf(id));
  const result = handler({ jobId: id, payload: spec.payload });
  if (!missing(job, 'claim.2.json')) throw new Error(`${id}: superseded`);
  publish(job, 'receipt.json', receiptOf(id, result));
  fs.unlinkSync(at(ready, entry));
  fs.closeSync(job);
}

measure(n, {}, { enqueue, consume, readyNames: () => fs.readdirSync(self(ready)) });
