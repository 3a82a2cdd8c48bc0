/**
 * The worker as an operator runs it: a real `fsjob work` process, real
 * signals, a real closed pipe. Jobs block on FIFOs, so the test decides when
 * they end (no race is won by luck), and every wait has a watchdog.
 */
import { existsSync } from 'node:fs';
import { open, readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enqueue } from '../../src/producer/index.ts';
import { initQueue, type Queue } from '../../src/model/queue.ts';
import type { ReceiptRecord, WorkerRecord } from '../../src/records/codec.ts';
import { cleanupAll, freshDir, mkfifo } from '../support/helpers.ts';
import { CLI_WATCHDOG_MS, runFsjob, startFsjob, type StartedCli } from '../support/cli.ts';
import { writeClaim, writeOutput, writeReceipt } from '../support/producer.ts';

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const deadline = Date.now() + CLI_WATCHDOG_MS;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`watchdog: ${what} did not happen within ${CLI_WATCHDOG_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function setup(): Promise<{ dir: string; queue: Queue; q: string[] }> {
  const dir = await freshDir('fsjob-worker');
  const queue = await initQueue(join(dir, 'q'));
  return { dir, queue, q: ['-q', queue.root] };
}

const receiptOf = async (queue: Queue, id: string): Promise<ReceiptRecord | undefined> => {
  const file = queue.paths.jobFile(id, 'receipt.json');
  return existsSync(file) ? (JSON.parse(await readFile(file, 'utf8')) as ReceiptRecord) : undefined;
};
const started = (queue: Queue, id: string): (() => true | undefined) => () => (existsSync(queue.paths.jobFile(id, 'exec.1.json')) ? true : undefined);

async function registration(queue: Queue): Promise<WorkerRecord | undefined> {
  const names = (await readdir(queue.paths.dir('workers'))).filter((name) => name.endsWith('.json'));
  return names[0] === undefined ? undefined : (JSON.parse(await readFile(join(queue.paths.dir('workers'), names[0]), 'utf8')) as WorkerRecord);
}

/** Lets a job blocked reading `fifo` go on (its `read` gets one line). */
async function release(fifo: string): Promise<void> {
  const handle = await open(fifo, 'w');
  await handle.write('go\n');
  await handle.close();
}

const lifecycle = suite('fsjob work: shutdown, signals, a closed log pipe');
lifecycle.after(cleanupAll);

lifecycle('SIGTERM drains: nothing new is claimed, the running job finishes within --shutdown-grace, the reason is logged', async () => {
  const { dir, queue, q } = await setup();
  const gate = join(dir, 'gate');
  mkfifo(gate);
  const running = await enqueue(queue, { argv: ['sh', '-c', `read line < '${gate}'; echo "finished after $line"`] });
  const worker = startFsjob(['work', ...q, '--concurrency', '2', '--shutdown-grace', '1h', '--json'], { cwd: dir });
  await until('the job started', started(queue, running.id));
  worker.child.kill('SIGTERM');
  await worker.waitForStderr('"type":"shutdown"', 'the draining event');
  // A slot is free and a job waits: a worker that still claimed would take it now.
  const waiting = await enqueue(queue, { argv: ['true'] });
  assert.is((await registration(queue))?.mode, 'stopping', 'the registration says the worker is stopping');
  assert.ok(worker.child.exitCode === null, 'the worker waits for its running job');
  await release(gate);
  const result = await worker.result;
  assert.equal([result.status, result.signal], [0, null], result.stderr);
  assert.is((await receiptOf(queue, running.id))?.outcome, 'succeeded', 'the running job finished on its own: not lost');
  assert.ok(!existsSync(queue.paths.jobFile(waiting.id, 'claim.1.json')), 'nothing was claimed during the drain');
  const events = result.stderr.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as Record<string, unknown>);
  assert.equal(
    events.filter((event) => event['type'] === 'signal' || event['type'] === 'shutdown').map((event) => [event['type'], event['signal'] ?? event['phase'], event['running'] ?? null, event['grace_ms'] ?? null]),
    [
      ['signal', 'SIGTERM', null, null],
      ['shutdown', 'draining', 1, 3_600_000],
    ],
    'the reason and the grace are logged; no "stopping" phase since the job ended in time',
  );
  assert.is(await registration(queue), undefined, 'the registration is removed on the clean exit (WORKER-1)');
});

lifecycle('SIGHUP is SIGTERM: when the grace runs out the running job is stopped and ends lost (shutdown), and the log says why', async () => {
  const { dir, queue, q } = await setup();
  const job = await enqueue(queue, { argv: ['sleep', '600'] });
  const worker = startFsjob(['work', ...q, '--shutdown-grace', '1s'], { cwd: dir });
  await until('the job started', started(queue, job.id));
  worker.child.kill('SIGHUP');
  const result = await worker.result;
  assert.equal([result.status, result.signal], [0, null], `a hangup is a clean shutdown, not a death: ${result.stderr}`);
  const receipt = await receiptOf(queue, job.id);
  assert.equal([receipt?.outcome, receipt?.reason], ['lost', 'shutdown'], 'max_attempts 1 and the grace ran out: lost, reason shutdown (WORKER-3)');
  assert.match(result.stderr, /SIGHUP: stopping; no new claims/);
  assert.match(result.stderr, /1 running job gets up to 1s to finish \(--shutdown-grace\)/);
  assert.match(result.stderr, /SIGHUP, and the grace ran out: stopping 1 running job/);
  assert.not.match(result.stderr, /WORKER-3/, 'clause ids only with --verbose');
});

lifecycle('a second signal ends the grace at once, through the same clean shutdown', async () => {
  const { dir, queue, q } = await setup();
  const job = await enqueue(queue, { argv: ['sleep', '600'], max_attempts: 2 });
  const worker = startFsjob(['work', ...q, '--shutdown-grace', '7d'], { cwd: dir });
  await until('the job started', started(queue, job.id));
  worker.child.kill('SIGINT');
  await worker.waitForStderr('to finish (--shutdown-grace)', 'the draining line');
  worker.child.kill('SIGTERM');
  const result = await worker.result;
  assert.equal([result.status, result.signal], [0, null], result.stderr);
  assert.match(result.stderr, /SIGTERM again: stopping the running jobs now/);
  const end = JSON.parse(await readFile(queue.paths.jobFile(job.id, 'end.1.json'), 'utf8')) as { reason: string; counted: boolean };
  assert.equal([end.reason, end.counted], ['shutdown', true], 'an attempt remains: an end record, the job runs again later');
  assert.is(await receiptOf(queue, job.id), undefined);
});

lifecycle('a worker whose log pipe closes keeps serving: no job is lost to EPIPE, and it still shuts down cleanly', async () => {
  const { dir, queue, q } = await setup();
  const worker: StartedCli = startFsjob(['work', ...q, '--concurrency', '2'], { cwd: dir });
  await worker.waitForStderr('serving', 'its first line');
  // The reader goes away (`fsjob work 2>&1 | head -1`): every later log line meets a closed pipe.
  worker.child.stderr.destroy();
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push((await enqueue(queue, { argv: ['sh', '-c', `echo job ${i}`] })).id);
  const waited = await runFsjob(['wait', ...q, '--timeout', '60s', ...ids], { cwd: dir });
  assert.is(waited.status, 0, `every job finished: ${waited.stdout} ${waited.stderr}`);
  for (const id of ids) assert.is((await receiptOf(queue, id))?.outcome, 'succeeded');
  assert.ok(worker.child.exitCode === null, 'the worker is still alive');
  assert.ok((await registration(queue)) !== undefined, 'and still registered');
  worker.child.kill('SIGTERM');
  const result = await worker.result;
  assert.equal([result.status, result.signal], [0, null]);
  assert.is(await registration(queue), undefined, 'a clean exit removes the registration');
});

lifecycle('a reader that stops reading (| head) ends status, logs and gc quietly: exit 0, no stack trace', async () => {
  const { dir, queue, q } = await setup();
  // Output far larger than a pipe buffer, so writes meet the closed pipe whatever the scheduling.
  const big = await enqueue(queue, { argv: ['echo', ...Array.from({ length: 4 }, (_, i) => `${i}${'x'.repeat(100_000)}`)] });
  await writeClaim(queue, big.id, 1);
  await (await writeOutput(queue, big.id, 'stdout', 1, Buffer.alloc(2_000_000, 0x61))).close();
  await (await writeOutput(queue, big.id, 'stderr', 1, '')).close();
  await writeReceipt(queue, big.id);
  const cases = [
    ['status', ...q, '--json'],
    ['status', ...q, big.id],
    ['logs', ...q, big.id],
    ['gc', ...q, '--all', '--dry-run', '--json'],
  ];
  const results = await Promise.all(
    cases.map((args) => {
      const run = startFsjob(args, { cwd: dir });
      run.child.stdout.once('data', () => run.child.stdout.destroy());
      return run.result;
    }),
  );
  for (const [index, result] of results.entries()) {
    const name = (cases[index] as string[]).join(' ');
    assert.equal([result.status, result.signal], [0, null], `${name}: ${result.stderr}`);
    assert.not.match(result.stderr, /EPIPE|Error|at /, `${name} says nothing about the closed pipe: ${result.stderr}`);
  }
});

lifecycle.run();
