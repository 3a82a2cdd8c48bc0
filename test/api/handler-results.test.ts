/**
 * What a payload handler comes to, as a service's Worker meets it
 * (src/consumer/payload.ts, PAYLOAD-1): each job gets exactly one receipt
 * that says what happened, and the Worker goes on to the next job. A result
 * the receipt cannot hold as it is (a Date, NaN, a Map, a function, a
 * bigint) fails the attempt with a receipt: it once left the claim open with
 * no receipt and a draining Worker waiting on it for ever.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Worker } from '../../src/consumer/index.ts';
import { enqueueMany, type Queue } from '../../src/producer/index.ts';
import { cleanupAll, withWatchdog } from '../support/helpers.ts';
import { freshQueue } from '../support/producer.ts';
import { receiptOf } from '../support/consumer.ts';

const results = suite('a payload handler\'s end');
let queue: Queue;
results.before(async () => {
  queue = await freshQueue('fsjob-api-results');
});
results.after(cleanupAll);

/** Handlers by name, each with the outcome and result its job's receipt must hold. */
const HANDLERS: Record<string, { run: () => unknown; outcome: string; result?: unknown }> = {
  plain: { run: () => ({ a: undefined, b: [1, 'x', null, true] }), outcome: 'succeeded', result: { b: [1, 'x', null, true] } },
  nothing: { run: () => undefined, outcome: 'succeeded', result: null },
  thenable: { run: () => ({ then: (resolve: (value: number) => void) => resolve(5) }), outcome: 'succeeded', result: 5 },
  date: { run: () => ({ at: new Date(0) }), outcome: 'failed' },
  nan: { run: () => Number.NaN, outcome: 'failed' },
  map: { run: async () => ({ m: new Map([[1, 2]]) }), outcome: 'failed' },
  function: { run: () => () => 1, outcome: 'failed' },
  symbol: { run: () => Symbol('x'), outcome: 'failed' },
  bigint: { run: () => ({ n: 1n }), outcome: 'failed' },
  cycle: {
    run: () => {
      const o: Record<string, unknown> = {};
      o['self'] = o;
      return o;
    },
    outcome: 'failed',
  },
  throws: {
    run: () => {
      throw new Error('boom');
    },
    outcome: 'failed',
  },
  'throws-null': {
    run: () => {
      throw null; // eslint-disable-line no-throw-literal
    },
    outcome: 'failed',
  },
  rejects: { run: () => Promise.reject(new TypeError('nope')), outcome: 'failed' },
  never: { run: () => new Promise(() => undefined), outcome: 'timed_out' },
};

results('every handler gets one receipt saying how it ended, and a draining Worker ends after all of them', async () => {
  const names = Object.keys(HANDLERS);
  // `never` is stopped by its timeout (EXEC-8) and its kill grace; one attempt each, so every end is a receipt.
  const made = await enqueueMany(queue, names.map((handler) => ({ handler, max_attempts: 1, timeout_ms: 100, kill_grace_ms: 0 })));
  const worker = new Worker({ queues: [queue], mode: 'drain', commands: false, concurrency: 4 });
  for (const name of names) worker.handle(name, (HANDLERS[name] as { run: () => unknown }).run);
  const summary = await withWatchdog(60_000, worker.run(), () => worker.stopNow());
  assert.is(summary.claimed, names.length);
  assert.equal(summary.left, []);
  for (const job of made) {
    assert.ok('id' in job);
    if (!('id' in job)) continue;
    const name = names[job.index] as string;
    const expected = HANDLERS[name] as { outcome: string; result?: unknown };
    const receipt = receiptOf(queue, job.id);
    assert.is(receipt.outcome, expected.outcome, name);
    if (expected.result !== undefined) assert.equal(receipt.result, expected.result, name);
    if (expected.outcome === 'failed') assert.is(receipt.exit_code, 1, name);
    if (expected.outcome !== 'succeeded') assert.type(receipt.message, 'string', name);
  }
});

results('an async onEvent listener that rejects is ignored as one that throws: no unhandled rejection, the receipt is published', async () => {
  const [made] = await enqueueMany(queue, [{ handler: 'plain' }]);
  assert.ok(made !== undefined && 'id' in made);
  if (made === undefined || !('id' in made)) return;
  const rejected: string[] = [];
  const unhandled = (reason: unknown): void => void rejected.push(String(reason));
  process.on('unhandledRejection', unhandled);
  try {
    const worker = new Worker({
      queues: [queue],
      mode: 'drain',
      commands: false,
      onEvent: async (event) => {
        if (event.type === 'finished') throw new Error('the listener failed');
      },
    });
    worker.handle('plain', () => 'done');
    const summary = await withWatchdog(60_000, worker.run(), () => worker.stopNow());
    await new Promise((resolve) => setImmediate(resolve)); // a rejection is reported after the microtasks of its turn
    assert.equal(summary.finished, { succeeded: 1 });
  } finally {
    process.off('unhandledRejection', unhandled);
  }
  assert.equal(rejected, []);
  assert.is(receiptOf(queue, made.id).result, 'done');
});

results.run();
