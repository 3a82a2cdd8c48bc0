/**
 * Ids and paths from records are never trusted (issue 6, SEC-7, SEC-8): a job
 * id or file name with `..`, `/`, NUL or a leading dot is refused everywhere.
 *
 * - as a command-line argument of status, wait, cancel and logs (USAGE, exit
 *   2, LAYOUT-4) and as an argument of the library functions behind them
 *   (INVALID_ID, LAYOUT-4);
 * - as a name on disk: in jobs/, ready/, workers/, lanes/, dedupe/ (a finding,
 *   never opened, never run, never deleted; a leading dot is a temporary name
 *   that no reader takes for a record);
 * - as an id inside a record: spec.json, claim, receipt, worker and hold
 *   records (a finding; the consumer rejects the job in its own directory).
 *
 * Each case also checks that nothing outside the queue was touched: the
 * queue's parent holds the queue and an outside directory whose snapshot
 * (names, bytes, modes, mtimes) must not change.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { keyHash } from '../../src/model/layout.ts';
import { initQueue, type Queue } from '../../src/model/queue.ts';
import type { Finding } from '../../src/records/findings.ts';
import { cancel, enqueue, jobStatus, readLogs, waitFor } from '../../src/producer/index.ts';
import { Worker } from '../../src/consumer/index.ts';
import { auditQueue } from '../../src/validator/queue.ts';
import { cleanupAll, freshDir, rejectsWith } from '../support/helpers.ts';
import { hasReceipt, receiptOf } from '../support/consumer.ts';
import { makeOutside, runFsjob, snapshot, type Outside } from '../support/walker.ts';

const VALID = '1796000000000000000-0123456789abcdef';
/** Ids that must never name a path: dot-dot, slashes, NUL, a leading dot, and near misses around a valid id. */
const HOSTILE_IDS = [
  '..',
  '.',
  '',
  '../outside',
  '../../outside/sentinel',
  'a/b',
  '/etc/passwd',
  `${VALID}/..`,
  `../${VALID}`,
  `jobs/${VALID}`,
  `${VALID}\u0000`,
  `x\u0000y`,
  `.${VALID.slice(1)}`,
  `.hidden`,
  `${VALID} `,
  VALID.toUpperCase(),
];

interface World {
  queue: Queue;
  root: string;
  outside: Outside;
  before: string;
  finished: string;
  queued: string;
}

/** A queue (a finished job, a queued job in a lane with a dedupe key) next to an outside directory. */
async function world(): Promise<World> {
  const parent = await freshDir('fsjob-ids');
  const root = join(parent, 'q');
  const queue = await initQueue(root);
  const outside = makeOutside(join(parent, 'outside'));
  const cwd = tmpdir();
  const finished = (await enqueue(queue, { argv: ['true'], lane: 'ids' }, { cwd })).id;
  const worker = new Worker({ queues: [queue], mode: 'drain', pollMs: 50 });
  await worker.run();
  const queued = (await enqueue(queue, { argv: ['touch', join(outside.dir, 'the-queued-job-ran')], lane: 'ids', dedupe: 'ids-key' }, { cwd })).id;
  return { queue, root, outside, before: snapshot(outside.dir), finished, queued };
}

/** Nothing outside changed, and the queue's parent holds nothing new. */
function untouched(w: World): void {
  assert.is(snapshot(w.outside.dir), w.before, 'the outside directory is unchanged');
  assert.equal(readdirSync(join(w.root, '..')).sort(), ['outside', 'q']);
  assert.equal(
    readdirSync(w.root).filter((name) => !name.startsWith('.')).sort(),
    ['dedupe', 'fsjob.json', 'jobs', 'lanes', 'ready', 'tmp', 'workers'],
  );
}

async function findingsAt(root: string, path: string): Promise<Finding[]> {
  return (await auditQueue(root)).findings.filter((finding) => finding.path === path);
}

async function drain(queue: Queue): Promise<void> {
  await new Worker({ queues: [queue], mode: 'drain', pollMs: 50 }).run();
}

// ---------------------------------------------------------------- arguments

const args = suite('ids given as arguments');
args.after(cleanupAll);

args('status, wait, cancel and logs refuse every hostile id with USAGE (exit 2, LAYOUT-4) and touch nothing', async () => {
  const w = await world();
  const tried: string[] = [];
  for (const id of HOSTILE_IDS) {
    for (const command of [['status'], ['wait', '--timeout', '1'], ['cancel'], ['logs']]) {
      const run = await runFsjob([...command, '--verbose', '--queue', w.root, id], w.root);
      assert.is(run.status, 2, `fsjob ${command[0]} ${JSON.stringify(id)}: ${run.stderr}`);
      assert.match(run.stderr, /LAYOUT-4/);
      tried.push(`${command[0]} ${JSON.stringify(id)}`);
    }
  }
  assert.is(tried.length, HOSTILE_IDS.length * 4);
  untouched(w);
  assert.not.ok(hasReceipt(w.queue, w.queued));
});

args('the library behind them refuses every hostile id with INVALID_ID (LAYOUT-4) before touching a path', async () => {
  const w = await world();
  for (const id of HOSTILE_IDS) {
    await rejectsWith(jobStatus(w.queue, id), 'INVALID_ID', { clause: 'LAYOUT-4' });
    await rejectsWith(cancel(w.queue, id), 'INVALID_ID', { clause: 'LAYOUT-4' });
    await rejectsWith(waitFor(w.queue, id, { timeoutMs: 1 }), 'INVALID_ID', { clause: 'LAYOUT-4' });
    await rejectsWith((async () => {
      for await (const chunk of readLogs(w.queue, id)) void chunk;
    })(), 'INVALID_ID', { clause: 'LAYOUT-4' });
    assert.throws(() => w.queue.paths.job(id), (error: { code?: string }) => error.code === 'INVALID_ID');
    assert.throws(() => w.queue.paths.ready(0, id), (error: { code?: string }) => error.code === 'INVALID_ID');
    assert.throws(() => w.queue.paths.worker(id), (error: { code?: string }) => error.code === 'INVALID_ID');
  }
  untouched(w);
});

args.run();

// ---------------------------------------------------------------- names on disk

const names = suite('names on disk');
names.after(cleanupAll);

names('foreign names in jobs/, ready/, workers/, lanes/ and dedupe/ are reported, never run, never deleted; dot names are never taken for records', async () => {
  const w = await world();
  const q = w.root;
  const specOf = (id: string): string => readFileSync(join(q, 'jobs', id, 'spec.json'), 'utf8');
  // A foreign job directory holding a perfectly valid spec of a job that would touch a file outside.
  const planted: { path: string; code: string }[] = [];
  const foreignJob = (name: string, code: string | null): void => {
    mkdirSync(join(q, 'jobs', name), { mode: 0o700 });
    writeFileSync(join(q, 'jobs', name, 'spec.json'), specOf(w.queued), { mode: 0o600 });
    if (code !== null) planted.push({ path: join(q, 'jobs', name), code });
  };
  foreignJob('not-a-job', 'JOB_BAD_ID');
  foreignJob(`${w.queued}x`, 'JOB_BAD_ID');
  foreignJob(`${w.queued.slice(0, -1)}G`, 'JOB_BAD_ID');
  foreignJob(`.${w.queued.slice(1)}`, null); // a temporary name (TEMP-1): staged, never a job
  const file = (rel: string, code: string | null, content = ''): void => {
    writeFileSync(join(q, rel), content, { mode: 0o600 });
    if (code !== null) planted.push({ path: join(q, rel), code });
  };
  file('ready/1000-not-a-job', 'READY_BAD_NAME');
  file('ready/1000-..', 'READY_BAD_NAME');
  file(`ready/1000-${w.queued}x`, 'READY_BAD_NAME');
  file(`ready/3000-${w.queued}`, 'READY_BAD_NAME');
  file(`ready/.1000-${w.queued}`, null);
  const worker = readFileSync(join(q, 'jobs', w.finished, 'claim.1.json'), 'utf8');
  file('workers/NOT-HEX-AT-ALL.json', 'WORKER_BAD_NAME', worker);
  file('workers/0123456789abcdef.json.bak', 'WORKER_BAD_NAME', worker);
  file('workers/..json', null, worker);
  const laneDir = join('lanes', keyHash('ids'));
  const hold = readFileSync(join(q, laneDir, '1.json'), 'utf8');
  file(join(laneDir, '01.json'), 'HOLD_BAD_NAME', hold);
  file(join(laneDir, '1.json.x'), 'HOLD_BAD_NAME', hold);
  file(join(laneDir, '.2.json'), null, hold);
  mkdirSync(join(q, 'dedupe', 'not-a-hash'), { mode: 0o700 });
  planted.push({ path: join(q, 'dedupe', 'not-a-hash'), code: 'HOLD_BAD_NAME' });
  file(join('dedupe', 'not-a-hash', '1.json'), null, hold);

  const findings = (await auditQueue(q)).findings;
  for (const { path, code } of planted) {
    assert.ok(findings.some((finding) => finding.path === path && finding.code === code), `${code} at ${path}: ${findings.map((f) => `${f.code} ${f.path}`).join(', ')}`);
  }
  for (const args of [['status', '--queue', q], ['recover', '--queue', q], ['gc', '--all', '--queue', q], ['work', '--drain', '--queue', q], ['status', '--queue', q]]) {
    const run = await runFsjob(args, q);
    assert.is(run.status, 0, `${args.join(' ')}: ${run.stderr}`);
  }
  // The queued job ran (its lane was free): touch wrote its file, the one job run. Nothing else ran.
  assert.is(receiptOf(w.queue, w.queued).outcome, 'succeeded');
  assert.equal(readdirSync(w.outside.dir).filter((name) => name.startsWith('the-')), ['the-queued-job-ran']);
  for (const { path } of planted) assert.ok(readdirSync(join(path, '..')).includes(path.split('/').at(-1) as string), `${path} was left alone`);
  assert.equal(readdirSync(join(q, 'jobs', 'not-a-job')), ['spec.json']);
});

names.run();

// ---------------------------------------------------------------- ids inside records

const inside = suite('ids inside records');
inside.after(cleanupAll);

/** Rewrites one member of a record in place (compact, one line feed), keeping mode 0600. */
function rewrite(path: string, member: string, value: unknown): void {
  const record = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  record[member] = value;
  writeFileSync(path, `${JSON.stringify(record)}\n`, { mode: 0o600 });
}

for (const hostile of ['../outside', '../../outside/sentinel', 'x\u0000y', '.hidden', `${VALID}/..`, VALID]) {
  inside(`a spec whose id is ${JSON.stringify(hostile)} is reported and rejected in its own directory`, async () => {
    const w = await world();
    const spec = join(w.root, 'jobs', w.queued, 'spec.json');
    rewrite(spec, 'id', hostile);
    const codes = (await findingsAt(w.root, spec)).map((finding) => finding.code);
    assert.ok(codes.includes('RECORD_ID_MISMATCH') || codes.includes('RECORD_SCHEMA'), codes.join(','));
    await drain(w.queue);
    assert.is(receiptOf(w.queue, w.queued).outcome, 'rejected');
    assert.is(receiptOf(w.queue, w.queued).job_id, w.queued);
    assert.not.ok(readdirSync(join(w.root, 'jobs')).includes(VALID));
    untouched(w);
  });
}

inside('claim, receipt, worker and hold records naming another place are reported; nothing follows the id they hold', async () => {
  const w = await world();
  const q = w.root;
  const receipt = join(q, 'jobs', w.finished, 'receipt.json');
  const claim = join(q, 'jobs', w.finished, 'claim.1.json');
  rewrite(receipt, 'job_id', '../../outside/sentinel');
  rewrite(claim, 'job_id', w.queued);
  const hold = join(q, 'lanes', keyHash('ids'), '1.json');
  rewrite(hold, 'job_id', '../outside');
  const dedupeDir = join(q, 'dedupe', keyHash('ids-key'));
  const dedupe = join(dedupeDir, readdirSync(dedupeDir)[0] as string);
  rewrite(dedupe, 'job_id', `../${w.queued}`);
  const workerPath = join(q, 'workers', 'fedcba9876543210.json');
  const workerRecord = { fsjob: '1.0', type: 'worker', worker_id: '../../outside', owner: JSON.parse(readFileSync(claim, 'utf8')).owner, started_ms: 1, heartbeat_ms: 1, lease_ms: 30000, concurrency: 1, mode: 'serving', jobs: [w.queued, '../x'], handlers: [] };
  writeFileSync(workerPath, `${JSON.stringify(workerRecord)}\n`, { mode: 0o600 });

  for (const path of [receipt, claim, hold, dedupe, workerPath]) {
    const found = await findingsAt(q, path);
    assert.ok(found.some((finding) => finding.severity === 'error'), `${path}: ${found.map((f) => f.code).join(',')}`);
  }
  for (const args of [['status', '--queue', q], ['status', '--queue', q, w.finished], ['recover', '--queue', q], ['cancel', '--queue', q, w.finished], ['gc', '--all', '--queue', q], ['work', '--drain', '--queue', q], ['enqueue', '--queue', q, '--dedupe', 'ids-key', '--', 'true']]) {
    const run = await runFsjob(args, q);
    assert.ok([0, 1, 3].includes(run.status) && !/\n\s+at /.test(run.stderr), `${args.join(' ')}: ${run.status} ${run.stderr}`);
  }
  untouched(w);
});

inside.run();
