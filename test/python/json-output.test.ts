/**
 * `python3 -m fsjob ... --json` prints what the reference's schemas in
 * schemas/output/ say, for the commands both have a --json of (the options
 * table, python/fsjob/cli_options.json, says which): status of a queue (its
 * pause, counts, index, foreign names and judged workers), status of one
 * job while a Python worker runs it (its owner, generations and outputs),
 * cancel, wait, logs (the same lines as the reference's), enqueue, pause,
 * resume, init and a refusal. A user's jq filter written against
 * `fsjob --json` reads the Python output too.
 */
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { runFsjob } from '../support/cli.ts';
import { assertOutputSchema } from '../support/output-schemas.ts';
import { PYTHON, PYTHON_DIR, run, type Run } from './support.ts';

const WATCHDOG_MS = 120_000;
const ENV = { ...process.env, FSJOB_QUEUE: '', PYTHONPATH: PYTHON_DIR };

function py(args: readonly string[], cwd: string): Promise<Run> {
  return run(PYTHON, ['-S', '-m', 'fsjob', ...args], { cwd, env: ENV, watchdogMs: WATCHDOG_MS });
}

function checked(schema: string, ran: Run, where: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(ran.stdout);
  } catch {
    throw new Error(`${where} printed no JSON document (exit ${ran.status}): ${ran.stdout.slice(0, 300)} ${ran.stderr.slice(0, 300)}`);
  }
  assertOutputSchema(schema, value);
  return value as Record<string, unknown>;
}

const output = suite('python3 -m fsjob --json: the reference schemas of schemas/output/');
output.after(cleanupAll);

output('status, status ID, cancel, wait, logs, pause and a refusal print what their schemas say, with a worker running a job', async () => {
  const dir = await freshDir('fsjob-py-json');
  const q = ['-q', join(dir, 'q')];
  checked('init', await py(['init', ...q, '--json'], dir), 'init');
  const running = checked('enqueue', await py(['enqueue', ...q, '--json', '--label', 'k=v', '--', 'sh', '-c', 'echo started; exec sleep 30'], dir), 'enqueue');
  const held = checked('enqueue', await py(['enqueue', ...q, '--json', '--hold', '--priority', '7', '--', 'true'], dir), 'enqueue --hold');
  mkdirSync(join(dir, 'q', 'jobs', 'notes'), { mode: 0o700 });
  const worker = spawn(PYTHON, ['-S', '-m', 'fsjob', 'work', ...q], { cwd: dir, env: ENV, stdio: 'ignore' });
  try {
    // Until the worker's claim of the job shows (a hang guard, not a timing: the test's watchdog ends it).
    let list: Record<string, unknown>;
    for (;;) {
      list = checked('status', await py(['status', ...q, '--json'], dir), 'status');
      if ((list['jobs'] as { status: string }[]).some((job) => job.status === 'running')) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const jobs = list['jobs'] as { id: string; status: string; priority: number; worker_id: string | null; labels: unknown }[];
    const workers = list['workers'] as { worker_id: string; verdict: string; running: number }[];
    assert.equal([workers.length, workers[0]?.verdict, workers[0]?.running], [1, 'alive', 1], 'the worker, judged alive, runs one job');
    assert.equal(jobs.map((job) => [job.id, job.status, job.priority, job.worker_id]), [
      [held['id'], 'held', 7, null],
      [running['id'], 'running', 0, workers[0]?.worker_id],
    ]);
    assert.equal([list['total'], list['foreign'], list['counts']], [2, ['notes'], { statuses: { held: 1, running: 1 }, outcomes: {} }]);
    const one = checked('status', await py(['status', ...q, '--json', String(running['id']).slice(20, 28)], dir), 'status ID');
    assert.equal([one['id'], one['status'], one['gen'], (one['owner'] as { verdict: string }).verdict], [running['id'], 'running', 1, 'alive']);
    assert.equal((one['generations'] as { gen: number; claim: { worker_id: string } }[]).map((gen) => [gen.gen, gen.claim.worker_id]), [[1, workers[0]?.worker_id]]);
    // A job blocked behind the held one: its dependencies and the held job up its chain, as the reference judges them.
    const blocked = checked('enqueue', await py(['enqueue', ...q, '--json', '--after', String(held['id']), '--', 'true'], dir), 'enqueue --after');
    const status = ['status', ...q, '--json', String(blocked['id'])];
    const [pyBlocked, nodeBlocked] = await Promise.all([py(status, dir), runFsjob(status, { cwd: dir })]);
    const judged = (ran: { stdout: string }): unknown => {
      const report = JSON.parse(ran.stdout) as Record<string, unknown>;
      return [report['status'], report['dependencies'], report['held_upstream']];
    };
    checked('status', pyBlocked, 'status ID of a blocked job');
    assert.equal(judged(pyBlocked), judged(nodeBlocked));
    assert.equal(judged(pyBlocked), ['blocked', [{ job_id: held['id'], when: 'succeeded', state: 'pending', what: null }], held['id']]);
    const cancelled = checked('cancel', await py(['cancel', ...q, '--json', String(running['id'])], dir), 'cancel of a running job');
    assert.equal([cancelled['published'], cancelled['next'], cancelled['receipt']], [true, 'owner', null]);
    const waited = await py(['wait', ...q, '--json', String(running['id'])], dir);
    assert.is(waited.status, 130, waited.stderr);
    checked('wait', waited, 'wait');
    const logs = ['logs', ...q, '--json', String(running['id']), String(held['id'])];
    const [pyLogs, nodeLogs] = await Promise.all([py(logs, dir), runFsjob(logs, { cwd: dir })]);
    const lines = pyLogs.stdout.split('\n').filter((line) => line !== '');
    for (const line of lines) checked('logs', { ...pyLogs, stdout: line }, 'logs');
    assert.is(pyLogs.stdout, nodeLogs.stdout, 'the same lines as fsjob logs --json');
    assert.equal(lines.map((line) => (JSON.parse(line) as { text: string }).text), ['started\n', '']);
    const now = checked('cancel', await py(['cancel', ...q, '--json', String(held['id'])], dir), 'cancel of a held job');
    assert.equal([now['next'], (now['receipt'] as { outcome: string } | null)?.outcome], ['finished', 'cancelled']);
    checked('pause', await py(['pause', ...q, '--json'], dir), 'pause');
    const paused = checked('status', await py(['status', ...q, '--json'], dir), 'status of a paused queue');
    assert.is(paused['paused'], true);
    checked('resume', await py(['resume', ...q, '--json'], dir), 'resume');
    const refused = await py(['status', ...q, '--json', '../jobs'], dir);
    assert.is(refused.status, 2);
    checked('error', refused, 'status of a non-id');
  } finally {
    // SIGTERM drains it (WORKER-3): nothing runs any more, so it exits; the directory is removed after.
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    if (worker.exitCode === null && worker.signalCode === null) worker.kill('SIGTERM');
    await exited;
  }
});

output('release --json of several ids; recover --json after a worker was killed: the claim broken, the lost receipt, the stale registration removed', async () => {
  const dir = await freshDir('fsjob-py-json-recover');
  const q = ['-q', join(dir, 'q')];
  checked('init', await py(['init', ...q, '--json'], dir), 'init');
  const job = checked('enqueue', await py(['enqueue', ...q, '--json', '--', 'sleep', '30'], dir), 'enqueue');
  // release of several ids: each on its own, the refusal reported beside the release (and its exit status the command's).
  const held = checked('enqueue', await py(['enqueue', ...q, '--json', '--hold', '--', 'true'], dir), 'enqueue --hold');
  const released = await py(['release', ...q, '--json', String(job['id']), String(held['id'])], dir);
  assert.is(released.status, 1, released.stderr);
  const both = checked('release', released, 'release of a held and a never-held job');
  assert.equal([(both['released'] as { id: string }[]).map((r) => r.id), (both['refused'] as { id: string }[]).map((r) => r.id)], [[held['id']], [job['id']]]);
  const worker = spawn(PYTHON, ['-S', '-m', 'fsjob', 'work', ...q], { cwd: dir, env: ENV, stdio: 'ignore' });
  const exited = new Promise((resolve) => worker.once('exit', resolve));
  for (;;) {
    const list = checked('status', await py(['status', ...q, '--json'], dir), 'status');
    if ((list['jobs'] as { id: string; status: string }[]).some((listed) => listed.id === job['id'] && listed.status === 'running')) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  worker.kill('SIGKILL');
  await exited;
  // Its guardian stops the command (WORKER-2); until then recover leaves the job alone, UNPROVEN, and exits 1.
  let report: Record<string, unknown>;
  for (;;) {
    const ran = await py(['recover', ...q, '--json'], dir);
    report = checked('recover', ran, 'recover');
    if (ran.status === 0) break;
    assert.is((report['unproven'] as unknown[]).length, 1, ran.stdout);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  assert.equal(report['claims_broken'], [{ job_id: job['id'], gen: 1, reason: (report['claims_broken'] as { reason: string }[])[0]?.reason }]);
  assert.equal((report['receipts'] as { job_id: string; outcome: string }[]).map((r) => [r.job_id, r.outcome]), [[job['id'], 'lost']]);
  assert.is((report['workers_removed'] as string[]).length, 1, "the dead worker's registration");
  const again = await py(['recover', ...q, '--json'], dir);
  assert.equal([again.status, checked('recover', again, 'recover again')['claims_broken']], [0, []]);
});

output.run();
