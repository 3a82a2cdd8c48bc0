/**
 * Interoperability of the Python implementation with the TypeScript
 * reference on one queue (run by python.test.ts): Python produces and the
 * reference's worker consumes; the reference produces and a Python worker
 * consumes; a pool of one reference worker and one Python worker drains one
 * queue with exactly one start and one receipt per job. Every queue is then
 * audited by the reference validator. Each scenario gets a fresh private
 * directory `base` and throws (uvu/assert) on the first difference.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as assert from 'uvu/assert';
import { FSJOB_BIN } from '../support/cli.ts';
import { FSJOB_PY, python, run } from './support.ts';

const WATCHDOG_MS = 600_000;

function fsjob(args: readonly string[], input?: string): ReturnType<typeof run> {
  return run(process.execPath, [FSJOB_BIN, ...args], { watchdogMs: WATCHDOG_MS, ...(input === undefined ? {} : { input }) });
}

async function validateClean(queue: string): Promise<void> {
  const audit = await fsjob(['validate', '--queue', queue]);
  assert.is(audit.status, 0, `fsjob validate: ${audit.stdout.slice(-3000)}${audit.stderr}`);
}

/** Python enqueues seven kinds of job; `fsjob work --drain` runs them; Python reads the receipts and logs. */
export async function pythonProducesReferenceConsumes(base: string): Promise<void> {
  const queue = path.join(base, 'q');
  const produce = `
import json, sys
from fsjob import Queue
q = Queue.init(sys.argv[1])
out = sys.argv[2]
ids = {
  "echo": q.enqueue(["sh", "-c", "printf hello"], cwd=out),
  "stdin": q.enqueue(["cat"], stdin=bytes(range(256)), cwd=out),
  "exit3": q.enqueue(["sh", "-c", "exit 3"], cwd=out),
  "retry": q.enqueue(["sh", "-c", "exit 1"], cwd=out, max_attempts=2),
  "bound": q.enqueue(["sh", "-c", "head -c 100 /dev/zero"], cwd=out, max_output_bytes=10),
  "env": q.enqueue(["sh", "-c", "printf %s \\"$GREETING\\""], env={"GREETING": "hé"}, cwd=out),
  "lane": q.enqueue(["true"], lane="one", cwd=out),
}
print(json.dumps(ids))`;
  const made = await python(produce, [queue, base], WATCHDOG_MS);
  assert.is(made.status, 0, made.stderr);
  const ids = JSON.parse(made.stdout) as Record<string, string>;
  const work = await fsjob(['work', '--queue', queue, '--drain']);
  assert.is(work.status, 0, work.stderr);
  const read = `
import json, sys
from fsjob import Queue
q = Queue.open(sys.argv[1])
out = {}
for name, job in json.loads(sys.argv[2]).items():
    r = q.wait(job, timeout=30)
    out[name] = [r.outcome, r.exit_code, r.attempts, q.logs(job).stdout.hex(), r.stdout.truncated if r.stdout else None]
print(json.dumps(out))`;
  const receipts = await python(read, [queue, JSON.stringify(ids)], WATCHDOG_MS);
  assert.is(receipts.status, 0, receipts.stderr);
  const r = JSON.parse(receipts.stdout) as Record<string, [string, number, number, string, boolean | null]>;
  assert.equal(r['echo'], ['succeeded', 0, 1, Buffer.from('hello').toString('hex'), false]);
  assert.equal(r['stdin'], ['succeeded', 0, 1, Buffer.from(Array.from({ length: 256 }, (_, i) => i)).toString('hex'), false]);
  assert.equal(r['exit3']?.slice(0, 3), ['failed', 3, 1]);
  assert.equal(r['retry']?.slice(0, 3), ['failed', 1, 2]);
  assert.equal(r['bound'], ['succeeded', 0, 1, '00'.repeat(10), true]);
  assert.equal(r['env']?.[3], Buffer.from('hé').toString('hex'));
  assert.equal(r['lane']?.[0], 'succeeded');
  await validateClean(queue);
}

/** `fsjob enqueue` publishes six requests; the Python worker drains them; `fsjob wait` and `logs` read the results. */
export async function referenceProducesPythonConsumes(base: string): Promise<void> {
  const queue = path.join(base, 'q');
  assert.is((await fsjob(['init', '--queue', queue])).status, 0);
  const requests = [
    { argv: ['sh', '-c', 'printf out; printf err >&2'], cwd: base },
    { argv: ['cat'], stdin_base64: Buffer.from('\u0000binary\u00ff').toString('base64'), cwd: base },
    { argv: ['sh', '-c', 'sleep 30'], cwd: base, timeout_ms: 300, kill_grace_ms: 100 },
    // A path under the test's own directory: /nonexistent is nobody's HOME, which a tool run as nobody may make.
    { argv: [path.join(base, 'no-such-program')], cwd: base },
    { argv: ['true'], cwd: path.join(queue, 'jobs') },
    { argv: ['sh', '-c', 'exit 2'], cwd: base, max_attempts: 3 },
  ];
  const ids: string[] = [];
  for (const [index, request] of requests.entries()) {
    const file = path.join(base, `request-${index}.json`);
    writeFileSync(file, JSON.stringify(request));
    const made = await fsjob(['enqueue', '--queue', queue, '--request', file]);
    assert.is(made.status, 0, made.stderr);
    ids.push(made.stdout.trim());
  }
  const work = await run(FSJOB_PY, ['work', '--queue', queue, '--drain'], { watchdogMs: WATCHDOG_MS });
  assert.is(work.status, 0, work.stderr);
  const outcomes: [string, number, number][] = [];
  for (const id of ids) {
    const waited = await fsjob(['wait', '--queue', queue, '--json', '--timeout', '60', id]);
    const receipt = JSON.parse(waited.stdout) as { outcome: string; exit_code: number; attempts: number };
    outcomes.push([receipt.outcome, receipt.exit_code, receipt.attempts]);
  }
  assert.equal(outcomes, [['succeeded', 0, 1], ['succeeded', 0, 1], ['timed_out', 124, 1], ['failed', 127, 1], ['rejected', 126, 0], ['failed', 2, 3]]);
  const logs = await fsjob(['logs', '--queue', queue, ids[0] as string]);
  assert.is(logs.stdout, 'out');
  await validateClean(queue);
}

/**
 * One reference and one Python worker, both registered before the first job
 * exists, drain `jobs` jobs enqueued in one batch; each job appends its id to
 * a log, so a job started twice shows twice. Resolves to how many receipts
 * each worker wrote.
 */
export async function mixedPool(base: string, jobs: number): Promise<{ reference: number; python: number }> {
  const queue = path.join(base, 'q');
  const log = path.join(base, 'starts.log');
  assert.is((await fsjob(['init', '--queue', queue])).status, 0);
  const workers = [spawn(process.execPath, [FSJOB_BIN, 'work', '--queue', queue], { stdio: 'ignore' }), spawn(FSJOB_PY, ['work', '--queue', queue], { stdio: 'ignore' })];
  const exits = workers.map((child) => new Promise<number | null>((resolve) => child.on('close', (status) => resolve(status))));
  const watchdog = setTimeout(() => workers.forEach((child) => child.kill('SIGKILL')), WATCHDOG_MS);
  try {
    // Both workers are registered (WORKER-1) before the first job exists: the pool is real.
    await until(() => readdirSync(path.join(queue, 'workers')).filter((n) => n.endsWith('.json')).length === 2, 'both workers to register');
    const argv = ['sh', '-c', 'printf "%s\\n" "$FSJOB_JOB_ID" >> "$1"', 'job', log];
    const batch = Array.from({ length: jobs }, () => JSON.stringify({ argv, cwd: base })).join('\n');
    const made = await fsjob(['enqueue', '--queue', queue, '--batch', '-'], batch);
    assert.is(made.status, 0, made.stderr);
    const ids = made.stdout.trim().split('\n');
    assert.is(ids.length, jobs);
    await until(() => ids.every((id) => existsSync(path.join(queue, 'jobs', id, 'receipt.json'))), 'every job to have a receipt');
    workers.forEach((child) => child.kill('SIGTERM'));
    assert.equal(await Promise.all(exits), [0, 0], 'both workers drain and exit 0 on SIGTERM');
    const starts = readFileSync(log, 'utf8').trim().split('\n');
    assert.is(starts.length, jobs, `exactly ${jobs} starts`);
    assert.equal([...new Set(starts)].sort(), [...ids].sort(), 'each job started exactly once');
    const readAll = `
import collections, json, sys
from fsjob import Queue
q = Queue.open(sys.argv[1])
by = collections.Counter()
bad = []
for job in json.loads(sys.argv[2]):
    r = q.wait(job, timeout=10)
    by[r.by["pid"]] += 1
    if (r.outcome, r.attempts) != ("succeeded", 1):
        bad.append([job, r.outcome, r.attempts])
names = {int(pid): name for name, pid in json.loads(sys.argv[3]).items()}
print(json.dumps({"by": {names.get(pid, str(pid)): count for pid, count in by.items()}, "bad": bad}))`;
    const pids = { reference: workers[0]?.pid, python: workers[1]?.pid };
    const read = await python(readAll, [queue, JSON.stringify(ids), JSON.stringify(pids)], WATCHDOG_MS);
    assert.is(read.status, 0, read.stderr);
    const summary = JSON.parse(read.stdout) as { by: Record<string, number>; bad: unknown[] };
    assert.equal(summary.bad, []);
    assert.is((summary.by['reference'] ?? 0) + (summary.by['python'] ?? 0), jobs, `exactly ${jobs} receipts, all by the two workers: ${JSON.stringify(summary.by)}`);
    assert.ok((summary.by['reference'] ?? 0) > 0 && (summary.by['python'] ?? 0) > 0, `both workers of the pool finished jobs: ${JSON.stringify(summary.by)}`);
    for (const id of ids) {
      const names = readdirSync(path.join(queue, 'jobs', id)).filter((n) => n.startsWith('receipt') || n.startsWith('exec.'));
      assert.equal(names.sort(), ['exec.1.json', 'receipt.json'], `${id}: one execution, one receipt`);
    }
    await validateClean(queue);
    return { reference: summary.by['reference'] ?? 0, python: summary.by['python'] ?? 0 };
  } finally {
    clearTimeout(watchdog);
    workers.forEach((child) => child.kill('SIGKILL'));
  }
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const end = Date.now() + WATCHDOG_MS;
  while (!condition()) {
    if (Date.now() > end) throw new Error(`watchdog: still waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
