/**
 * `python3 -m fsjob status` on a queue where job directories cannot be read
 * by the queue's owner (mode 0000: EACCES), as the reference's b864f50
 * (test/battery/status-unreadable.test.ts): the queue view shows every other
 * job and lists the unreadable ones apart (--json: unreadable, with id, path
 * and errno), exit 1; `status ID` of such a job still fails with IO. Root
 * bypasses permission checks, so both command lines run as nobody through
 * setpriv on a queue nobody owns; skipped, saying why, where nobody cannot
 * run this checkout. Asserts exit statuses, codes, members, never wording.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { cleanupAll, NOBODY } from '../support/helpers.ts';
import { AS_NOBODY, fsjobCli, nobodyCannotRun, nobodysQueueWithClosedJobs } from '../support/faults.ts';
import { assertOutputSchema } from '../support/output-schemas.ts';
import { PYTHON, PYTHON_DIR } from './support.ts';

const WATCHDOG_MS = 120_000;

/** `python3 -m fsjob <args>` as nobody, from / (readable by every uid). */
function pyAsNobody(args: readonly string[]): { status: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string } {
  const argv = [...AS_NOBODY, 'env', `PYTHONPATH=${PYTHON_DIR}`, 'FSJOB_QUEUE=', PYTHON, '-S', '-m', 'fsjob', ...args];
  const done = spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8', cwd: '/', timeout: WATCHDOG_MS, killSignal: 'SIGKILL' });
  return { status: done.status, signal: done.signal, stdout: done.stdout ?? '', stderr: done.stderr ?? '' };
}

/** nobody must reach this checkout and its python/ (one cloned into a directory closed to others cannot, which says nothing of fsjob). */
const nobodyBlocked = ((): string | undefined => {
  const node = nobodyCannotRun();
  if (node !== undefined) return node;
  const py = pyAsNobody(['--version']);
  return py.status === 0 ? undefined : `nobody (uid ${NOBODY}) cannot run python3 -m fsjob from ${PYTHON_DIR}: ${py.stderr.slice(0, 200)}`;
})();
if (nobodyBlocked !== undefined) console.log(`python status-unreadable: skipped, ${nobodyBlocked}`);

interface StatusJson {
  total: number;
  counts: unknown;
  jobs: { id: string; status: string }[];
  unreadable: { id: string; path: string; errno: string | null }[];
}

const unreadable = suite('python3 -m fsjob status over job directories its owner cannot read, as the reference');
unreadable.after(cleanupAll);

unreadable('the queue view lists every readable job and the ones of mode 0000 apart with EACCES, exit 1, as the reference; status ID of one fails with IO', async () => {
  if (nobodyBlocked !== undefined) return;
  const { queue, closedFinished, fineFinished, closedQueued, held } = await nobodysQueueWithClosedJobs('fsjob-py-status-unreadable');
  const before = readdirSync(queue.paths.dir('jobs')).sort();

  const list = ['status', '--queue', queue.root, '--json', '--limit', '0'];
  const pyList = pyAsNobody(list);
  const nodeList = fsjobCli(list, { prefix: AS_NOBODY });
  const pyText = pyAsNobody(['status', '--queue', queue.root]);
  const pyOne = pyAsNobody(['status', '--queue', queue.root, closedFinished, '--json']);
  const pyHeld = pyAsNobody(['status', '--queue', queue.root, held, '--json']);
  for (const id of [closedFinished, closedQueued]) chmodSync(queue.paths.job(id), 0o700);
  chmodSync(queue.paths.gatedJob(held), 0o700);

  for (const ran of [pyList, pyText, pyOne, pyHeld]) {
    assert.is(ran.signal, null, ran.stderr);
    assert.not.match(ran.stderr, /Traceback/);
  }
  assert.is(pyList.status, 1, `python status exits 1 when a job could not be read: ${pyList.stdout}${pyList.stderr}`);
  assert.is(nodeList.status, 1, nodeList.stderr);
  const [py, node] = [JSON.parse(pyList.stdout) as StatusJson, JSON.parse(nodeList.stdout) as StatusJson];
  assertOutputSchema('status', py);
  assert.is(py.total, 4, 'total counts the unreadable jobs too');
  assert.equal(py.jobs.map((job) => job.id), [fineFinished], 'the readable job is shown');
  const project = (view: StatusJson): unknown => [view.total, view.counts, view.jobs.map((job) => [job.id, job.status]), view.unreadable.map((entry) => [entry.id, entry.errno]).sort()];
  assert.equal(project(py), project(node), 'python lists what the reference lists');
  assert.equal(
    py.unreadable.map((entry) => [entry.id, entry.errno]).sort(),
    [[closedFinished, 'EACCES'], [closedQueued, 'EACCES'], [held, 'EACCES']].sort(),
  );
  for (const entry of py.unreadable) assert.ok(entry.path.startsWith(queue.paths.dir('jobs')), `${entry.path} is in jobs/`);

  assert.is(pyText.status, 1, `python status (text) exits 1: ${pyText.stdout}${pyText.stderr}`);
  assert.ok(pyText.stdout.includes(fineFinished), `the table shows ${fineFinished}: ${pyText.stdout}`);
  for (const id of [closedFinished, closedQueued, held]) assert.ok(pyText.stderr.includes(id), `stderr names ${id}: ${pyText.stderr}`);

  for (const [id, ran, dirOf] of [[closedFinished, pyOne, queue.paths.job(closedFinished)], [held, pyHeld, queue.paths.gatedJob(held)]] as const) {
    assert.is(ran.status, 1, `status ID of the unreadable job ${id} fails: ${ran.stdout}${ran.stderr}`);
    const refusal = JSON.parse(ran.stdout) as { error: { code: string; errno?: string; path?: string } };
    assertOutputSchema('error', refusal);
    assert.equal([refusal.error.code, refusal.error.errno], ['IO', 'EACCES']);
    assert.ok(refusal.error.path?.startsWith(dirOf), `the error names its path: ${ran.stdout}`);
  }
  assert.equal(readdirSync(queue.paths.dir('jobs')).sort(), before, 'status changed nothing in jobs/');
});

unreadable.run();
