/**
 * fsjob-sh when an attempt cannot start (EXEC-3): the generation is given
 * back with an end record `released`, counted false, runnable again 2 s
 * later (its `retry_at_ms`), and the run is bounded:
 *
 * - below the descriptors it needs (`ulimit -n 16`) it claims nothing and says,
 *   in one line, what the limit is and what it needs (exit 1); it used to
 *   claim about 5,000 generations a minute, each failing to start its leader;
 * - descriptors that run short while it runs (prlimit on the live process)
 *   stop the run at the first attempt that cannot start;
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

starts('descriptors that run short while it runs stop the run at the first attempt that cannot start', async () => {
  if (spawnSync('prlimit', ['--version']).status !== 0) {
    console.log('  skipped: prlimit (util-linux) is not installed');
    return;
  }
  const go = path.join(dir(), 'go');
  const { queue, ids } = queueWith(['sh', '-c', `until [ -e '${go}' ]; do sleep 0.02; done`], ['true']);
  const [first, second] = ids as [string, string];
  const consumer = spawn(SH, ['consume', queue], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  consumer.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => consumer.on('exit', (code) => resolve(code)));
  const watchdog = setTimeout(() => consumer.kill('SIGKILL'), WATCHDOG_MS);
  try {
    while (!existsSync(path.join(queue, 'jobs', first, 'exec.1.json'))) await new Promise((resolve) => setTimeout(resolve, 20));
    const lowered = spawnSync('prlimit', ['--pid', String(consumer.pid), '--nofile=16:'], { encoding: 'utf8' });
    assert.is(lowered.status, 0, lowered.stderr);
    writeFileSync(go, '');
    assert.is(await exited, 1, stderr);
  } finally {
    clearTimeout(watchdog);
  }
  assert.match(stderr, /stopping; the jobs stay queued: .*too few file descriptors \(EMFILE\): ulimit -n 16/);
  assert.ok(existsSync(path.join(queue, 'jobs', first, 'receipt.json')), 'the running job finished');
  givenBack(queue, second);
});

starts.run();
