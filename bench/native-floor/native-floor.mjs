/**
 * The floor in Node with native *at calls (spec/design-native-floor.md):
 * bench/node-floor.mjs's payload job, the same calls, the same checks and
 * the same JSON, made through a small N-API addon (fsat.c beside this file)
 * on the held directory descriptors themselves instead of names through
 * /proc/self/fd/N, which Node needs for want of openat, linkat, unlinkat,
 * fstatat, mkdirat, renameat and getdents64 on a descriptor.
 *
 *   calls   one addon call per system call, as node-floor.mjs makes one fs
 *           call per system call; the listing is lseek + getdents64 on the
 *           held descriptor (node-floor.mjs opens the directory again: open,
 *           fstat, getdents64 x2, close)
 *   steps   one addon call per step between two of the job's decisions: the
 *           whole enqueue; pause check, open, spec read and listing; each
 *           record's publication (with the checks after the claim); the
 *           receipt with its check before and the ready entry's removal.
 *           JavaScript keeps the records' JSON, the spec's parse and checks
 *           and the handler: the least a Node process could pay with batched
 *           native steps.
 *
 * Counted as node-floor.mjs counts (bench/lib/floor-job.mjs, with the same
 * records and checks): 5 warm-up jobs, then N enqueued and N consumed,
 * process.cpuUsage around each phase, per job. The addon is
 * compiled with `cc -O2 -shared -fPIC -I<node's headers>` and cached by the
 * hash of its source under the OS temp directory (as bench/lib/floor.ts
 * caches floor.c); where cc or node's headers are missing it prints
 * {"skipped": reason} and exits 0.
 *
 * Usage: node native-floor.mjs <n> <dir> [calls|steps]   makes <dir>/q (which must not exist); prints one JSON line
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { claimedBefore, claimOf, execOf, hex, jobId, line, measure, parseSpec, receiptOf, specOf } from '../lib/floor-job.mjs';

const n = Number(process.argv[2] ?? 300);
const dir = process.argv[3];
const variant = process.argv[4] ?? 'calls';
if (dir === undefined || !(n > 0) || !['calls', 'steps'].includes(variant)) {
  process.stderr.write('usage: node native-floor.mjs <n> <dir> [calls|steps]\n');
  process.exit(2);
}

/** The compiled addon's path, or the reason it cannot be built here. */
function build() {
  const source = fileURLToPath(new URL('fsat.c', import.meta.url));
  const headers = [path.join(path.dirname(process.execPath), '..', 'include', 'node'), '/usr/include/node'].find((d) => fs.existsSync(path.join(d, 'node_api.h')));
  if (headers === undefined) return { skipped: `node's headers (node_api.h) are not under ${path.dirname(process.execPath)}/../include/node or /usr/include/node` };
  const hash = createHash('sha256').update(fs.readFileSync(source)).update(headers).update(process.version).digest('hex').slice(0, 16);
  const cache = path.join(os.tmpdir(), 'fsjob-bench-cache');
  fs.mkdirSync(cache, { recursive: true, mode: 0o700 });
  const out = path.join(cache, `native-floor-${hash}.node`);
  if (!fs.existsSync(out)) {
    const temp = `${out}.${process.pid}`;
    const cc = spawnSync('cc', ['-O2', '-Wall', '-shared', '-fPIC', `-I${headers}`, '-o', temp, source], { encoding: 'utf8' });
    if (cc.error?.code === 'ENOENT') return { skipped: 'no C compiler (cc) on PATH' };
    if (cc.status !== 0) return { skipped: `cc failed on ${source}: ${cc.stderr.trim()}` };
    fs.renameSync(temp, out);
  }
  return { out };
}

const built = build();
if (built.skipped !== undefined) {
  process.stderr.write(`native-floor: skipped: ${built.skipped}\n`);
  process.stdout.write(`${JSON.stringify({ jobs: n, variant, skipped: built.skipped })}\n`);
  process.exit(0);
}
const fsat = createRequire(import.meta.url)(built.out);

const root = path.join(dir, 'q');
for (const name of ['', 'tmp', 'jobs', 'ready']) fs.mkdirSync(path.join(root, name), { mode: 0o700 });

const C = fs.constants;
const AT_FDCWD = -100;
const AT_SYMLINK_NOFOLLOW = 0x100;
const OPEN_DIR = C.O_RDONLY | C.O_DIRECTORY | C.O_NOFOLLOW | C.O_CLOEXEC;
const CREATE = C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW | C.O_CLOEXEC;
const READ = C.O_RDONLY | C.O_NONBLOCK | C.O_NOFOLLOW | C.O_CLOEXEC;
/** The addon's stat fields (fsat.c fill_stat): one array reused, as Node's binding reuses its own. */
const stat = new Float64Array(8);
const MODE = 2;
const SIZE = 6;
const missing = (fd, name) => !fsat.fstatat(fd, name, AT_SYMLINK_NOFOLLOW, stat);
const rootFd = fsat.openat(AT_FDCWD, root, OPEN_DIR);
const [tmp, jobs, ready] = ['tmp', 'jobs', 'ready'].map((name) => fsat.openat(rootFd, name, OPEN_DIR));

/** One addon call per system call. */
const calls = {
  createWrite(fd, name, text) {
    const file = fsat.openat(fd, name, CREATE, 0o600);
    fsat.write(file, text, 0);
    fsat.fsync(file);
    fsat.close(file);
  },
  publish(fd, name, record) {
    const temp = `.${name}.${hex()}`;
    calls.createWrite(fd, temp, line(record));
    fsat.linkat(fd, temp, fd, name);
    fsat.unlinkat(fd, temp, 0);
    fsat.fsync(fd);
  },
  enqueue(i, payload) {
    const now = Date.now();
    const id = jobId(now, i);
    fsat.mkdirat(tmp, id, 0o700);
    const staged = fsat.openat(tmp, id, OPEN_DIR);
    fsat.fstat(staged, stat);
    if ((stat[MODE] & C.S_IFMT) !== C.S_IFDIR) throw new Error(`${id}: not a directory`);
    fsat.fchmod(staged, 0o700);
    calls.createWrite(staged, 'spec.json', line(specOf(id, now, payload)));
    fsat.fsync(staged);
    fsat.close(fsat.openat(ready, `1000-${id}`, CREATE, 0o600));
    if (!missing(jobs, id)) throw new Error(`${id}: taken`);
    fsat.renameat(tmp, id, jobs, id);
    fsat.close(staged);
    fsat.fsync(tmp);
    fsat.fsync(jobs);
  },
  consume(entry, handler) {
    if (!missing(rootFd, 'pause.json')) return;
    const id = entry.slice(entry.indexOf('-') + 1);
    const job = fsat.openat(jobs, id, OPEN_DIR);
    fsat.fstat(job, stat);
    if ((stat[MODE] & C.S_IFMT) !== C.S_IFDIR || (stat[MODE] & 0o022) !== 0) throw new Error(`${id}: not a private directory`);
    const file = fsat.openat(job, 'spec.json', READ);
    fsat.fstat(file, stat);
    const size = stat[SIZE];
    const bytes = Buffer.allocUnsafe(size + 1);
    const got = fsat.read(file, bytes, 0);
    fsat.close(file);
    if (got !== size) throw new Error(`${id}: spec`);
    const spec = parseSpec(bytes.toString('utf8', 0, got - 1), id);
    if (claimedBefore(fsat.readdir(job))) throw new Error(`${id}: claimed`);
    calls.publish(job, 'claim.1.json', claimOf(id));
    if (!missing(job, 'cancel.json') || !missing(job, 'cancel-force.json')) throw new Error(`${id}: cancelled`);
    if (!missing(job, 'claim.2.json')) throw new Error(`${id}: superseded`);
    calls.publish(job, 'exec.1.json', execOf(id));
    const result = handler({ jobId: id, payload: spec.payload });
    if (!missing(job, 'claim.2.json')) throw new Error(`${id}: superseded`);
    calls.publish(job, 'receipt.json', receiptOf(id, result));
    fsat.unlinkat(ready, entry, 0);
    fsat.close(job);
  },
};

const AFTER_CLAIM = ['cancel.json', 'cancel-force.json', 'claim.2.json'];
/** One addon call per step: 1 a job enqueued, 4 a job consumed. */
const steps = {
  enqueue(i, payload) {
    const now = Date.now();
    const id = jobId(now, i);
    fsat.enqueueAt(tmp, jobs, ready, id, line(specOf(id, now, payload)), `1000-${id}`);
  },
  consume(entry, handler) {
    const id = entry.slice(entry.indexOf('-') + 1);
    const opened = fsat.openJobAt(rootFd, jobs, id);
    if (opened === null) return;
    const [job, text, names] = opened;
    let spec;
    try {
      spec = parseSpec(text, id);
      if (claimedBefore(names)) throw new Error(`${id}: claimed`);
      const present = fsat.publishAt(job, `.claim.1.json.${hex()}`, 'claim.1.json', line(claimOf(id)), AFTER_CLAIM);
      if (present !== -1) throw new Error(`${id}: ${AFTER_CLAIM[present]} after the claim`);
      fsat.publishAt(job, `.exec.1.json.${hex()}`, 'exec.1.json', line(execOf(id)));
    } catch (error) {
      fsat.close(job);
      throw error;
    }
    const result = handler({ jobId: id, payload: spec.payload });
    if (!fsat.finishAt(job, `.receipt.json.${hex()}`, line(receiptOf(id, result)), ready, entry)) throw new Error(`${id}: superseded`);
  },
};

measure(n, { variant }, { ...(variant === 'steps' ? steps : calls), readyNames: () => fsat.readdir(ready) });
