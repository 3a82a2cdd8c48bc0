/**
 * fsjob-sh when an attempt cannot start (EXEC-3): the generation is given
 * back with an end record `released`, counted false, runnable again 2 s
 * later (its `retry_at_ms`), and the run is bounded:
 *
 * - below the descriptors it needs (`ulimit -n 16`) it claims nothing and says,
 *   in one line, what the limit is and what it needs (exit 1); it used to
 *   claim about 5,000 generations a minute, each failing to start its leader;
 * - descriptors that run short while it runs (prlimit on the live process)
 *   stop the run at the first attempt that cannot start; where they run so
 *   short that dash itself fails (exit 2), nothing of the run is left
 *   holding its output, and `recover` gives back what it claimed;
 * - three attempts in a row that cannot start (a planted `stdout.1` in each
 *   job) stop the run, leaving the jobs queued.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { FSJOB_SH as SH, runSh as sh, SH_WATCHDOG_MS as WATCHDOG_MS, shTestDirs } from '../support/fsjob-sh.ts';

const RETRY_MS = 2_000;
const starts = suite('fsjob-sh: attempts that cannot start');
const dir = shTestDirs(starts, 'fsjob-sh-starts');

/** A queue with one job per argv, in that order; their ids. */
function queueWith(...argvs: string[][]): { queue: string; ids: string[] } {
  const queue = path.join(dir(), 'q');
  assert.is(sh('init', queue).status, 0);
  const ids = argvs.map((argv, i) => {
    const request = path.join(dir(), `r${i}.json`);
    writeFileSync(request, `${JSON.stringify({ argv, cwd: dir() })}\n`);
    const produced = sh('produce', queue, request);
    assert.is(produced.status, 0, produced.stderr);
    return produced.stdout.trim();
  });
  return { queue, ids };
}

const files = (queue: string, id: string): string[] => readdirSync(path.join(queue, 'jobs', id)).sort();
const claims = (queue: string, id: string): string[] => files(queue, id).filter((name) => name.startsWith('claim.'));

/** Generation 1 of the job was given back unstarted, runnable RETRY_MS later, and nothing else was claimed. */
function givenBack(queue: string, id: string): void {
  assert.equal(claims(queue, id), ['claim.1.json'], id);
  assert.not.ok(existsSync(path.join(queue, 'jobs', id, 'exec.1.json')), 'nothing ran');
  const end = JSON.parse(readFileSync(path.join(queue, 'jobs', id, 'end.1.json'), 'utf8')) as Record<string, unknown>;
  assert.is(end['reason'], 'released');
  assert.is(end['counted'], false);
  assert.is(Number(end['retry_at_ms']) - Number(end['ended_ms']), RETRY_MS);
}

starts('below the descriptors it needs, consume claims nothing and names the limit and the need (exit 1)', () => {
  const { queue, ids } = queueWith(['true']);
  const run = spawnSync('sh', ['-c', 'ulimit -n 16 && exec "$0" consume "$1"', SH, queue], { encoding: 'utf8', timeout: WATCHDOG_MS });
  assert.is(run.status, 1, run.stderr);
  assert.match(run.stderr, /^fsjob-sh: cannot start: too few file descriptors \(EMFILE\): ulimit -n 16, and fsjob-sh needs \d+ here/);
  assert.is(run.stderr.split('\n').length, 2, 'one line');
  assert.equal(claims(queue, ids[0] as string), [], 'nothing claimed');
  assert.equal(readdirSync(path.join(queue, 'ready')).length, 1, 'the job is still queued');
});

starts('three attempts in a row that cannot start stop the run; each is given back for later (EXEC-3)', () => {
  const { queue, ids } = queueWith(['true'], ['true'], ['true'], ['true']);
  // A file at stdout.1 makes generation 1's output files impossible to create (EXEC-1).
  for (const id of ids.slice(0, 3)) writeFileSync(path.join(queue, 'jobs', id, 'stdout.1'), 'planted\n', { mode: 0o600 });
  const run = sh('consume', queue);
  assert.is(run.status, 1, run.stderr);
  assert.match(run.stderr, /stopping; the jobs stay queued: 3 attempts in a row could not start/);
  for (const id of ids.slice(0, 3)) givenBack(queue, id);
  assert.equal(claims(queue, ids[3] as string), [], 'the run stopped before the fourth job');
});

/**
 * `fsjob-sh consume` on a first job that waits for a file and a second `true`
 * job, its stdout and stderr one pipe; once the first job runs, its limit is
 * lowered to `limit` (prlimit) and the first job let go. Resolves once the
 * pipe has closed (every process holding it is gone) with the exit status
 * and what was written; undefined for a run still holding it after the watchdog.
 */
async function lowerWhileRunning(limit: number): Promise<{ ids: [string, string]; status: number | null; output: string } | undefined> {
  const go = path.join(dir(), 'go');
  const { queue, ids } = queueWith(['sh', '-c', `until [ -e '${go}' ]; do sleep 0.02; done`], ['true']);
  const [first, second] = ids as [string, string];
  const consumer = spawn('sh', ['-c', 'exec "$0" consume "$1" 2>&1', SH, queue], { stdio: ['ignore', 'pipe', 'ignore'] });
  let output = '';
  consumer.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => consumer.on('exit', (code) => resolve(code)));
  const closed = new Promise<boolean>((resolve) => consumer.stdout.on('close', () => resolve(true)));
  let timer: NodeJS.Timeout | undefined;
  const watchdog = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), 15_000)));
  while (!existsSync(path.join(queue, 'jobs', first, 'exec.1.json'))) await new Promise((resolve) => setTimeout(resolve, 20));
  const lowered = spawnSync('prlimit', ['--pid', String(consumer.pid), `--nofile=${limit}:`], { encoding: 'utf8' });
  assert.is(lowered.status, 0, lowered.stderr);
  writeFileSync(go, '');
  const done = await Promise.race([closed, watchdog]);
  clearTimeout(timer);
  if (!done) {
    // What still holds the pipe is not this test's child: stop reading it, so the test fails instead of waiting.
    consumer.kill('SIGKILL');
    consumer.stdout.destroy();
    return undefined;
  }
  return { ids: [first, second], status: await exited, output };
}

const noPrlimit = (): boolean => {
  if (spawnSync('prlimit', ['--version']).status === 0) return false;
  console.log('  skipped: prlimit (util-linux) is not installed');
  return true;
};

starts('descriptors that run short while it runs stop the run at the first attempt that cannot start', async () => {
  if (noPrlimit()) return;
  const run = await lowerWhileRunning(16);
  assert.ok(run, 'the run ended');
  const queue = path.join(dir(), 'q');
  assert.is(run.status, 1, run.output);
  assert.match(run.output, /stopping; the jobs stay queued: .*too few file descriptors \(EMFILE\): ulimit -n 16/);
  assert.ok(existsSync(path.join(queue, 'jobs', run.ids[0], 'receipt.json')), 'the running job finished');
  givenBack(queue, run.ids[1]);
});

starts('a consumer that dies starting an attempt leaves no process holding its output, and loses no job', async () => {
  if (noPrlimit()) return;
  // At 12 dash itself fails while the attempt starts (a redirection it must
  // make, exit 2): the readers of the outputs were waiting for a writer then,
  // for ever, holding the consumer's stdout.
  const run = await lowerWhileRunning(12);
  assert.ok(run, 'every process holding the output pipe is gone');
  assert.is.not(run.status, 0, run.output);
  const queue = path.join(dir(), 'q');
  assert.not.ok(existsSync(path.join(queue, 'jobs', run.ids[1], 'exec.1.json')), 'nothing of the second job ran');
  // RECOV-1 gives back what the dead consumer claimed; a consumer then runs it.
  assert.is(sh('recover', queue).status, 0);
  const again = sh('consume', queue);
  assert.is(again.status, 0, again.stderr);
  for (const id of run.ids) assert.match(readFileSync(path.join(queue, 'jobs', id, 'receipt.json'), 'utf8'), /"outcome":"succeeded"/);
});

starts.run();
