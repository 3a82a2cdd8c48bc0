/**
 * End to end: real `fsjob work` and `fsjob recover` processes (node
 * bin/fsjob.js, the worker is that very pid), killed with real signals.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { enqueue, freshQueue } from '../support/enqueue.ts';
import { deadIdentity, endOf, fileExists, publishClaim, readJson, readyEntries, receiptOf, waitFor } from '../support/consumer.ts';
import { publishRecord } from '../../src/fs/safefs.ts';
import { cleanupAll, freshDir, withWatchdog } from '../support/helpers.ts';
import { groupState } from '../../src/model/groups.ts';
import type { ExecRecord, Group } from '../../src/records/codec.ts';
import type { Queue } from '../../src/model/queue.ts';
import type { RecoverReport } from '../../src/consumer/index.ts';
import { FSJOB_BIN } from '../support/cli.ts';
import { GUARDIAN_LIMIT } from '../../src/base/constants.ts';
import { SCHEDULING_TOLERANCE_MS } from '../../conformance/cases/probes.ts';

const BIN = FSJOB_BIN;

interface Proc {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<[number | null, NodeJS.Signals | null]>;
}

function fsjob(args: string[]): Proc {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  return { child, stdout: () => out, stderr: () => err, exit: once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]> };
}

async function finished(proc: Proc, ms: number): Promise<number | null> {
  const [code] = await withWatchdog(ms, proc.exit, () => proc.child.kill('SIGKILL'));
  return code;
}

function groupOf(queue: Queue, id: string, gen = 1): Group {
  const group = readJson<ExecRecord>(queue.paths.jobFile(id, `exec.${gen}.json`)).group;
  assert.ok(group !== null);
  return group;
}

/** I2/I3 on disk: every job has a receipt, or its highest claim has an end record. */
function openClaims(queue: Queue): string[] {
  const open: string[] = [];
  for (const id of readdirSync(queue.paths.dir('jobs'))) {
    const names = readdirSync(queue.paths.job(id));
    if (names.includes('receipt.json')) continue;
    const gens = names.map((n) => /^claim\.([0-9]+)\.json$/.exec(n)?.[1]).filter((g): g is string => g !== undefined).map(Number);
    const top = Math.max(0, ...gens);
    if (top > 0 && !names.includes(`end.${top}.json`)) open.push(id);
  }
  return open;
}

const e2e = suite('fsjob work and fsjob recover, end to end');
e2e.after(cleanupAll);

e2e('four concurrent `fsjob work --drain` run each of 400 jobs exactly once', async () => {
  const q = await freshQueue();
  const dir = await freshDir('e2e');
  const log = join(dir, 'log');
  const ids = new Set<string>();
  for (let i = 0; i < 400; i++) ids.add(await enqueue(q, { argv: ['sh', '-c', `echo $FSJOB_JOB_ID >> ${log}`] }));
  const workers = Array.from({ length: 4 }, () => fsjob(['work', '--queue', q.root, '--drain', '--concurrency', '2']));
  const codes = await Promise.all(workers.map((w) => finished(w, 300_000)));
  assert.equal(codes, [0, 0, 0, 0], workers.map((w) => w.stderr().slice(-500)).join('\n'));
  const lines = readFileSync(log, 'utf8').split('\n').filter((line) => line !== '');
  assert.is(lines.length, 400, 'every job ran exactly once');
  assert.equal(new Set(lines), ids);
  for (const id of ids) assert.is(receiptOf(q, id).outcome, 'succeeded');
  assert.equal(readyEntries(q), []);
  assert.equal(readdirSync(q.paths.dir('workers')), [], 'each worker removed its registration');
  const claimed = workers.map((w) => (w.stderr().match(/claimed /g) ?? []).length);
  assert.is(claimed.reduce((a, b) => a + b, 0), 400, `claims per worker: ${claimed.join(', ')}`);
});

e2e('kill -9 of a worker: the guardian stops its commands within GUARDIAN_LIMIT (WORKER-2); recover finishes one job as lost and requeues the other', async () => {
  const q = await freshQueue();
  const dir = await freshDir('e2e');
  const marker = join(dir, 'first-run');
  const once1 = await enqueue(q, { argv: ['sleep', '60'], max_attempts: 1 });
  const twice = await enqueue(q, { argv: ['sh', '-c', `if [ -e ${marker} ]; then echo second; exit 0; fi; touch ${marker}; exec sleep 60`], max_attempts: 2 });
  const worker = fsjob(['work', '--queue', q.root, '--concurrency', '2']);
  await waitFor('both commands running', () => fileExists(q.paths.jobFile(once1, 'exec.1.json')) && fileExists(q.paths.jobFile(twice, 'exec.1.json')), 60_000);
  const groups = [groupOf(q, once1), groupOf(q, twice)];
  for (const group of groups) assert.is(await groupState(group), 'running');
  worker.child.kill('SIGKILL');
  await worker.exit;
  // The spec's number plus the suite's stated scheduling tolerance (a loaded machine delays the guardian's wake-up).
  await waitFor('the guardian to stop both groups', async () => (await Promise.all(groups.map((g) => groupState(g)))).every((s) => s === 'stopped'), GUARDIAN_LIMIT + SCHEDULING_TOLERANCE_MS);

  const recovered = fsjob(['recover', '--queue', q.root, '--json']);
  assert.is(await finished(recovered, 60_000), 0, recovered.stderr());
  const report = JSON.parse(recovered.stdout()) as Pick<RecoverReport, 'receipts' | 'requeued'> & { workers_removed: string[] };
  assert.equal(report.receipts.map((r) => [r.job_id, r.outcome, r.exit_code]), [[once1, 'lost', 125]]);
  assert.equal(report.requeued.map((r) => r.job_id), [twice]);
  assert.is(report.workers_removed.length, 1, 'the dead worker registration is stale');
  const lost = receiptOf(q, once1);
  assert.is(lost.reason, 'owner_lost');
  assert.is(lost.stdout?.bytes_total, null);

  const next = fsjob(['work', '--queue', q.root, '--drain']);
  assert.is(await finished(next, 60_000), 0, next.stderr());
  const r = receiptOf(q, twice);
  assert.is(r.outcome, 'succeeded');
  assert.is(r.attempts, 2);
  assert.is(readFileSync(q.paths.jobFile(twice, `stdout.${r.gen}`), 'utf8'), 'second\n');
  assert.is(receiptOf(q, once1).gen, 2, 'still exactly the one receipt');
  assert.equal(openClaims(q), []);
});

e2e('SIGTERM: graceful shutdown leaves no open claim without an end or a receipt (WORKER-3)', async () => {
  const q = await freshQueue();
  const quick = await enqueue(q, { argv: ['sleep', '1'] });
  const again = await enqueue(q, { argv: ['sleep', '60'], max_attempts: 2, kill_grace_ms: 500 });
  const last = await enqueue(q, { argv: ['sh', '-c', "trap '' TERM; sleep 60"], max_attempts: 1, kill_grace_ms: 500 });
  const worker = fsjob(['work', '--queue', q.root, '--concurrency', '3']);
  await waitFor('three commands running', () => [quick, again, last].every((id) => fileExists(q.paths.jobFile(id, 'exec.1.json'))), 60_000);
  const groups = [groupOf(q, again), groupOf(q, last)];
  // One signal: a second one ends the grace at once (test/cli/worker-lifecycle),
  // and two sent back to back arrive as one or as two depending on scheduling.
  worker.child.kill('SIGTERM');
  assert.is(await finished(worker, 60_000), 0, worker.stderr());
  assert.is(receiptOf(q, quick).outcome, 'succeeded', 'a job that ends within the grace finishes normally');
  assert.is(endOf(q, again, 1).reason, 'shutdown');
  assert.is(endOf(q, again, 1).counted, true);
  assert.is(receiptOf(q, last).outcome, 'lost');
  assert.is(receiptOf(q, last).reason, 'shutdown');
  for (const group of groups) assert.is(await groupState(group), 'stopped');
  assert.equal(openClaims(q), []);
  assert.equal(readdirSync(q.paths.dir('workers')), []);
  assert.match(worker.stdout(), /claimed 3/);
});

e2e('`fsjob work --once --json` runs one job; `fsjob recover` exits 1 while an execution is unproven', async () => {
  const q = await freshQueue();
  const first = await enqueue(q, { argv: ['true'] });
  const second = await enqueue(q, { argv: ['true'] });
  const stuck = await enqueue(q, { argv: ['true'] });
  await publishClaim(q, stuck, 1, await deadIdentity());
  await publishRecord(q.paths.job(stuck), 'exec.1.json', 'unreadable\n', 'link', q.fsOptions);
  const once1 = fsjob(['work', '--queue', q.root, '--once', '--json']);
  assert.is(await finished(once1, 60_000), 0, once1.stderr());
  const summary = JSON.parse(once1.stdout()) as { claimed: number; finished: Record<string, number> };
  assert.is(summary.claimed, 1);
  assert.equal(summary.finished, { succeeded: 1 });
  assert.ok(fileExists(q.paths.jobFile(first, 'receipt.json')));
  assert.not.ok(fileExists(q.paths.jobFile(second, 'receipt.json')));
  const events = once1.stderr().split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as { type: string });
  assert.ok(events.some((e) => e.type === 'finished'));
  const recovered = fsjob(['recover', '--queue', q.root]);
  assert.is(await finished(recovered, 60_000), 1);
  assert.match(recovered.stdout(), /left alone, unproven: 1/);
  assert.equal(openClaims(q), [stuck]);
});

e2e.run();
