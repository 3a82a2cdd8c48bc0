/**
 * A wait that cannot end says so: `waitFor` on a job that no live worker
 * serves writes one line of advice (by default on stderr), and one more when
 * a worker shows up; `unservedNotice: false` says nothing. (The CLI's `wait`
 * and `logs -f` are test/cli/operator-commands.test.ts's.)
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Worker } from '../../src/consumer/worker.ts';
import { enqueue } from '../../src/producer/enqueue.ts';
import { waitFor } from '../../src/producer/watch.ts';
import { cleanupAll, withWatchdog } from '../support/helpers.ts';
import { freshQueue } from '../support/producer.ts';

const notice = suite('waitFor says when no worker serves the queue');
notice.after(cleanupAll);

async function until(check: () => boolean, what: string): Promise<void> {
  await withWatchdog(20_000, (async () => {
    while (!check()) await new Promise((resolve) => setTimeout(resolve, 50));
  })()).catch((error: unknown) => assert.unreachable(`${what}: ${String(error)}`));
}

notice('with no live worker the wait says so once, and once more when a worker serves the queue; then the receipt', async () => {
  const queue = await freshQueue('fsjob-notice');
  const { id } = await enqueue(queue, { argv: ['true'] });
  const lines: string[] = [];
  const waited = waitFor(queue, id, { unservedNotice: (line) => lines.push(line) });
  await until(() => lines.length > 0, 'the advice');
  assert.equal(lines, [`fsjob: no live worker serves ${queue.root}, so the job waits until one does (start one: fsjob work -q ${queue.root}); a one-shot consumer runs it without registering\n`]);
  const worker = new Worker({ queues: [queue], mode: 'serve' });
  const running = worker.run();
  try {
    const receipt = await withWatchdog(20_000, waited);
    assert.is(receipt.outcome, 'succeeded');
  } finally {
    worker.stop();
    await running;
  }
  assert.is(lines.length <= 2, true, lines.join(''));
  assert.is(lines.filter((line) => line.includes('no live worker')).length, 1);
});

notice('unservedNotice: false keeps the wait silent', async () => {
  const queue = await freshQueue('fsjob-notice');
  const { id } = await enqueue(queue, { argv: ['true'] });
  const controller = new AbortController();
  const written: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array) => written.push(String(chunk)) > 0) as typeof process.stderr.write;
  try {
    const waited = waitFor(queue, id, { unservedNotice: false, signal: controller.signal }).catch((error: unknown) => error);
    // A second wait started after it, on the same job, that does speak: once it has, the silent one had its look too.
    const lines: string[] = [];
    const witness = waitFor(queue, id, { unservedNotice: (line) => lines.push(line), signal: controller.signal }).catch((error: unknown) => error);
    await until(() => lines.length > 0, "the witness's advice");
    controller.abort(new Error('enough'));
    assert.is(((await waited) as Error).message, 'enough');
    await witness;
  } finally {
    process.stderr.write = write;
  }
  assert.equal(written.filter((text) => text.includes('no live worker')), []);
});

notice.run();
