/**
 * src/cli/thread-pool.ts: `fsjob work` runs with libuv's pool sized for its
 * concurrency, and a UV_THREADPOOL_SIZE the user set is kept. Seen from
 * outside: a real `fsjob work` process's threads (/proc/<pid>/task; libuv
 * starts every thread of its pool at once) beside the concurrency its
 * registration record says yargs read. node's own threads are the same in
 * every process, so each worker is compared with one at --concurrency 1,
 * whose pool is libuv's 4.
 */
import { existsSync, readdirSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { initQueue } from '../../src/model/queue.ts';
import type { WorkerRecord } from '../../src/records/codec.ts';
import { POOL_CAP, poolSizeFor, sizeThreadPool, workConcurrency } from '../../src/cli/thread-pool.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { CLI_WATCHDOG_MS, startFsjob } from '../support/cli.ts';

const reading = suite('thread-pool: the concurrency of a command line, read as yargs reads it');

reading('--concurrency N and --concurrency=N, after the command or before it', () => {
  assert.is(workConcurrency(['work', '--concurrency', '16']), 16);
  assert.is(workConcurrency(['work', '-q', 'q', '--concurrency=64', '--drain']), 64);
  assert.is(workConcurrency(['--concurrency', '8', 'work']), 8);
  assert.is(workConcurrency(['-q', 'q', 'work', '--concurrency', '0x10']), 16, 'yargs reads a number as Number() does');
});

reading('nothing for another command, for what follows "--", or for a value work refuses', () => {
  assert.is(workConcurrency(['status', '--concurrency', '16']), undefined);
  assert.is(workConcurrency(['work']), undefined);
  assert.is(workConcurrency(['work', '--', '--concurrency', '16']), undefined);
  for (const value of ['0', '1025', '2.5', '', 'many', '-4']) assert.is(workConcurrency(['work', `--concurrency=${value}`]), undefined, value);
  assert.is(workConcurrency(['work', '--concurrency']), undefined);
  assert.is(workConcurrency(['work', '--concurrency', '--drain']), undefined);
  assert.is(workConcurrency(['work', '--concurrency', '8', '--concurrency', '16']), undefined, 'given twice, yargs makes a list, which work refuses');
});

reading.run();

const sizing = suite('thread-pool: UV_THREADPOOL_SIZE for fsjob work');

sizing('a thread per job, at least libuv 4, at most POOL_CAP', () => {
  assert.equal([1, 4, 5, 16, POOL_CAP, POOL_CAP + 1, 1024].map(poolSizeFor), [4, 4, 5, 16, POOL_CAP, POOL_CAP, POOL_CAP]);
});

sizing('set for work above 4; nothing for a smaller pool or another command', () => {
  const env = (argv: string[]): NodeJS.ProcessEnv => {
    const out: NodeJS.ProcessEnv = {};
    sizeThreadPool(argv, out);
    return out;
  };
  assert.equal(env(['work', '--concurrency', '16']), { UV_THREADPOOL_SIZE: '16' });
  assert.equal(env(['work', '--concurrency', '4']), {});
  assert.equal(env(['work']), {});
  assert.equal(env(['enqueue', '--concurrency', '16', '--', 'true']), {});
});

sizing("the user's UV_THREADPOOL_SIZE wins, whatever it says", () => {
  for (const mine of ['2', '64', '']) {
    const env: NodeJS.ProcessEnv = { UV_THREADPOOL_SIZE: mine };
    sizeThreadPool(['work', '--concurrency', '16'], env);
    assert.equal(env, { UV_THREADPOOL_SIZE: mine });
  }
});

sizing.run();

const running = suite('fsjob work: the pool of the running process');
running.after(cleanupAll);

/** The registration record of the one worker in `workers`, once it is there (published just after the start-up line). */
async function registration(workers: string): Promise<WorkerRecord> {
  const deadline = Date.now() + CLI_WATCHDOG_MS;
  for (;;) {
    const [name] = (await readdir(workers)).filter((file) => file.endsWith('.json'));
    if (name !== undefined) return JSON.parse(await readFile(join(workers, name), 'utf8')) as WorkerRecord;
    if (Date.now() > deadline) throw new Error(`watchdog: no worker registered in ${workers} within ${CLI_WATCHDOG_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A serving `fsjob work` with `args` (and `env`): its thread count and the concurrency its registration says. */
async function observe(args: string[], env: Record<string, string | undefined>): Promise<{ threads: number; concurrency: number }> {
  const dir = await freshDir('thread-pool');
  const queue = await initQueue(join(dir, 'q'));
  const worker = startFsjob([...args, '-q', queue.root], { cwd: dir, env });
  try {
    await worker.waitForStderr('in serve mode', 'its start-up line');
    const threads = readdirSync(`/proc/${worker.child.pid}/task`).length;
    const record = await registration(queue.paths.dir('workers'));
    return { threads, concurrency: record.concurrency };
  } finally {
    worker.child.kill('SIGTERM');
    await worker.result;
  }
}

running('--concurrency K: K threads (at most POOL_CAP); a UV_THREADPOOL_SIZE the user set is kept', async () => {
  if (!existsSync('/proc/self/task')) {
    console.log('  skipped: no /proc/<pid>/task here to count threads in');
    return;
  }
  const none = { UV_THREADPOOL_SIZE: undefined };
  // All at once: each start waits for the machine, not for the others.
  const [base, c16, c64, mine, mineSmall] = await Promise.all([
    observe(['work', '--concurrency', '1'], none),
    observe(['work', '--concurrency', '16'], none),
    observe(['--concurrency=64', 'work'], none),
    observe(['work', '--concurrency', '16'], { UV_THREADPOOL_SIZE: '6' }),
    observe(['work', '--concurrency', '16'], { UV_THREADPOOL_SIZE: '2' }),
  ]);
  assert.equal([base, c16, c64, mine, mineSmall].map((seen) => seen.concurrency), [1, 16, 64, 16, 16], 'the concurrency yargs read');
  const pool = (seen: { threads: number }): number => seen.threads - base.threads + 4;
  assert.is(pool(c16), 16);
  assert.is(pool(c64), POOL_CAP);
  assert.is(pool(mine), 6, "the user's pool, larger than libuv's");
  assert.is(pool(mineSmall), 2, "the user's pool, smaller than libuv's");
});

running.run();
