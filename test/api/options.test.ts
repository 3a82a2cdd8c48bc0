/**
 * The options of the library's entry points as a JavaScript caller passes
 * them (src/base/option-checks.ts): a value of the wrong type or out of
 * range is USAGE with the option as the error's `field`, at the call, before
 * anything is written, never a TypeError from deep inside, a wait that never
 * ends, or a default silently taken instead. Values the types allow work.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync } from 'node:fs';
import { isFsjobError, type FsjobError } from '../../src/base/errors.ts';
import { Worker, claimNext, recover } from '../../src/consumer/index.ts';
import { cancel, enqueue, enqueueBatch, enqueueMany, gc, jobStatus, listJobs, normalizeRequest, pauseQueue, pauseState, readLogs, release, releaseWhere, resumeQueue, retry, waitFor, waitForMany, type Queue } from '../../src/producer/index.ts';
import { cleanupAll } from '../support/helpers.ts';
import { freshQueue } from '../support/producer.ts';

/** The FsjobError `run` throws or rejects with; fails the test on anything else. */
async function refusal(run: () => unknown, what = ''): Promise<FsjobError> {
  try {
    await run();
  } catch (error) {
    if (isFsjobError(error)) return error;
    assert.unreachable(`${what}: not an FsjobError: ${error instanceof Error ? error.stack : String(error)}`);
  }
  assert.unreachable(`${what}: accepted`);
  throw new Error('unreachable');
}

async function refusedAs(run: () => unknown, field: string | undefined, what: string): Promise<void> {
  const error = await refusal(run, what);
  assert.equal([error.code, error.field], ['USAGE', field], `${what}: ${error.message}`);
}

/** Names no queue that exists: a constructor that refuses an option never opens it. */
const ROOT = '/nonexistent/fsjob-api-options';

const worker = suite('new Worker(options)');

worker('each option of the wrong type or out of range is USAGE naming it, thrown by the constructor', async () => {
  const bad: [Record<string, unknown>, string][] = [
    [{ queues: ROOT }, '/queues'], // a string is iterable: its characters were opened as queues
    [{ queues: [] }, '/queues'],
    [{ queues: undefined }, '/queues'],
    [{ queues: [1] }, '/queues/0'],
    [{ queues: [ROOT, { root: ROOT }] }, '/queues/1'],
    [{ concurrency: '4' }, '/concurrency'],
    [{ concurrency: 0 }, '/concurrency'],
    [{ concurrency: 1.5 }, '/concurrency'],
    [{ mode: 'forever' }, '/mode'],
    [{ commands: 'no' }, '/commands'],
    [{ pollMs: 0 }, '/pollMs'],
    [{ pollMs: '100' }, '/pollMs'],
    [{ pollMs: Number.NaN }, '/pollMs'],
    [{ leaseMs: '30000' }, '/leaseMs'],
    [{ leaseMs: 1 }, '/leaseMs'],
    [{ allow: 'sh' }, '/allow'],
    [{ allow: [1] }, '/allow'],
    [{ maxOutputBytes: '1k' }, '/maxOutputBytes'],
    [{ shutdownGraceMs: -1 }, '/shutdownGraceMs'],
    [{ shutdownGraceMs: '10' }, '/shutdownGraceMs'],
    [{ cgroup: 5 }, '/cgroup'],
    [{ onEvent: 'log' }, '/onEvent'],
    [{ clock: {} }, '/clock'],
    [{ fs: {} }, '/fs'],
    [{ guardian: {} }, '/guardian'],
    [{ spawner: {} }, '/spawner'],
  ];
  for (const [options, field] of bad) {
    await refusedAs(() => new Worker({ queues: [ROOT], ...options } as never), field, JSON.stringify(options));
  }
  await refusedAs(() => new Worker(undefined as never), undefined, 'no options');
});

worker('the values the types allow are accepted: Infinity grace, a poll over a second, no commands, several queues', () => {
  const accepted = new Worker({ queues: [ROOT, `${ROOT}-2`], concurrency: 1024, mode: 'once', commands: false, pollMs: 30_000, shutdownGraceMs: Number.POSITIVE_INFINITY, leaseMs: 3_000, allow: ['sh'], maxOutputBytes: 0, onEvent: () => undefined });
  assert.type(accepted.id, 'string');
});

worker('handle() refuses a name that is not a handler name and a handler that is not a function; stop() a reason that is not text', async () => {
  const w = new Worker({ queues: [ROOT], commands: false });
  await refusedAs(() => w.handle(1 as never, () => null), undefined, 'a number as name');
  await refusedAs(() => w.handle('Resize', () => null), undefined, 'an upper-case name');
  await refusedAs(() => w.handle('resize', 'resize' as never), undefined, 'a string as handler');
  await refusedAs(() => w.stop(15 as never), undefined, 'a signal number as reason');
  assert.is(w.handle('resize', () => null), w, 'handle() chains');
});

worker('claimNext and recover refuse their consumer options before they open the queue', async () => {
  await refusedAs(() => claimNext(ROOT, { leaseMs: 'long' as never }), '/leaseMs', 'claimNext leaseMs');
  await refusedAs(() => recover(ROOT, { onEvent: 'log' as never }), '/onEvent', 'recover onEvent');
});

worker.run();

const producer = suite('enqueue, enqueueMany, enqueueBatch, waitFor, readLogs, pauseQueue');
let queue: Queue;
producer.before(async () => {
  queue = await freshQueue('fsjob-api-options');
});
producer.after(cleanupAll);

/** Every entry under the queue's jobs/ and tmp/: a refused call leaves none. */
function written(): string[] {
  return [...readdirSync(queue.paths.dir('jobs')), ...readdirSync(queue.paths.dir('tmp'))];
}

producer('enqueue options of the wrong type are USAGE naming them, and nothing is written', async () => {
  const request = { handler: 'resize', payload: 1 };
  const bad: [unknown, string | undefined][] = [
    [{ cwd: 5 }, '/cwd'],
    [{ stdin: 'hello' }, '/stdin'],
    [{ clock: {} }, '/clock'],
    [{ source: 5 }, '/source'],
    [{ nameField: 'flag' }, '/nameField'],
    ['options', undefined],
  ];
  for (const [options, field] of bad) {
    await refusedAs(() => enqueue(queue, request, options as never), field, `enqueue ${JSON.stringify(options)}`);
    await refusedAs(() => normalizeRequest(request, options as never), field, `normalizeRequest ${JSON.stringify(options)}`);
  }
  await refusedAs(() => enqueueMany(queue, 5 as never), undefined, 'enqueueMany of a number');
  await refusedAs(() => enqueueMany(queue, [request], { onResult: 'print' as never }), '/onResult', 'enqueueMany onResult');
  await refusedAs(() => enqueueBatch(queue, [], { stdin: 'x' } as never), '/stdin', 'enqueueBatch stdin');
  assert.equal(written(), []);
});

producer('enqueueBatch takes one string as the text of its lines (its type allows a string), not as characters', async () => {
  const results = await enqueueBatch(queue, '{"handler":"a"}\n\n{"handler":"b"}\n');
  assert.equal(results.map((result) => ('id' in result ? result.line : result.error.code)), [1, 3]);
  const ids = results.map((result) => ('id' in result ? result.id : ''));
  assert.equal(readdirSync(queue.paths.dir('jobs')).sort(), ids.sort());
});

producer('waitFor, waitForMany and readLogs refuse options that would wait for ever, spin or crash a timer', async () => {
  const { id } = await enqueue(queue, { handler: 'never-served' });
  const quiet = { unservedNotice: false as const };
  const bad: [Record<string, unknown>, string][] = [
    [{ timeoutMs: '10' }, '/timeoutMs'], // was added to the clock as text: a deadline far away
    [{ timeoutMs: Number.NaN }, '/timeoutMs'],
    [{ timeoutMs: -5 }, '/timeoutMs'],
    [{ pollMs: 0 }, '/pollMs'],
    [{ pollMs: 'x' }, '/pollMs'],
    [{ signal: 'stop' }, '/signal'], // crashed the process from the poll timer
    [{ clock: Date }, '/clock'],
    [{ unservedNotice: 'stderr' }, '/unservedNotice'],
  ];
  for (const [options, field] of bad) {
    await refusedAs(() => waitFor(queue, id, { ...quiet, ...options } as never), field, `waitFor ${JSON.stringify(options)}`);
    await refusedAs(() => waitForMany(queue, [id], { ...quiet, ...options } as never), field, `waitForMany ${JSON.stringify(options)}`);
  }
  await refusedAs(() => waitForMany(queue, [id], { ...quiet, onReceipt: 'print' } as never), '/onReceipt', 'waitForMany onReceipt');
  await refusedAs(() => waitForMany(queue, id as never, quiet), undefined, 'waitForMany of one id as a string');
  await refusedAs(() => readLogs(queue, id, { stream: 'stdin' } as never).next(), '/stream', 'readLogs stream');
  await refusedAs(() => readLogs(queue, id, { pollMs: -1 }).next(), '/pollMs', 'readLogs pollMs');
  await refusedAs(() => readLogs(queue, id, { signal: {} } as never).next(), '/signal', 'readLogs signal');
  // Within the types: a timeout of 0 looks once; an Infinity timeout with an aborted signal rejects with its reason.
  assert.is((await refusal(() => waitFor(queue, id, { ...quiet, timeoutMs: 0 }))).code, 'TIMEOUT');
  const reason = new Error('mine');
  try {
    await waitFor(queue, id, { ...quiet, timeoutMs: Number.POSITIVE_INFINITY, signal: AbortSignal.abort(reason) });
    assert.unreachable('resolved');
  } catch (error) {
    assert.is(error, reason);
  }
});

producer('pauseQueue, resumeQueue and pauseState are the library road to PAUSE-1: a Queue only, a reason as text', async () => {
  await refusedAs(() => pauseQueue(queue.root as never), undefined, 'a path');
  await refusedAs(() => pauseQueue(queue, { reason: 5 } as never), '/reason', 'a number as reason');
  assert.equal(readdirSync(queue.root).includes('pause.json'), false);
  assert.is((await pauseQueue(queue, { reason: 'maintenance' })).published, true);
  assert.ok(readdirSync(queue.root).includes('pause.json'));
  const state = await pauseState(queue);
  assert.equal(state.paused && state.record?.reason, 'maintenance');
  assert.is(await resumeQueue(queue), true);
  assert.equal(readdirSync(queue.root).includes('pause.json'), false);
});

producer('listJobs, jobStatus, cancel, gc, retry and release refuse what they would misread; gc removes nothing then', async () => {
  const { id } = await enqueue(queue, { handler: 'listed' });
  const bad: [() => unknown, string | undefined][] = [
    [() => listJobs(queue, 'all' as never), undefined],
    [() => listJobs(queue, { limit: '10' } as never), '/limit'],
    [() => listJobs(queue, { statuses: ['waiting'] } as never), '/statuses'],
    [() => listJobs(queue, { outcomes: 'failed' } as never), '/outcomes'],
    [() => listJobs(queue, { sort: 'newest' } as never), '/sort'],
    [() => listJobs(queue, { counts: 'yes' } as never), '/counts'],
    [() => listJobs(queue, { labels: { team: 1 } } as never), '/labels'],
    [() => jobStatus(queue, id, { clock: 5 } as never), '/clock'],
    [() => cancel(queue, id, { force: 'yes' } as never), '/force'],
    [() => cancel(queue, id, { reason: 5 } as never), '/reason'],
    [() => gc(queue, { dryRun: 'no' } as never), '/dryRun'], // was truthy: a dry run the caller did not want, or the reverse
    [() => gc(queue, { ids: id } as never), '/ids'],
    [() => gc(queue, { olderThanMs: '1d' } as never), '/olderThanMs'],
    [() => gc(queue, { keep: -1 }), '/keep'],
    [() => retry(queue, id, { unfinished: 'yes' } as never), '/unfinished'],
    [() => release(queue, id, { clock: 'now' } as never), '/clock'],
    [() => releaseWhere(queue, 'lane-a' as never), undefined],
    [() => releaseWhere(queue, { lane: 5 } as never), '/lane'],
    [() => releaseWhere(queue, { labels: { team: 1 } } as never), '/labels'],
  ];
  for (const [run, field] of bad) await refusedAs(run, field, run.toString());
  assert.ok(readdirSync(queue.paths.job(id)).includes('spec.json'));
  assert.equal(readdirSync(queue.paths.job(id)).filter((name) => name.startsWith('cancel')), []);
  const list = await listJobs(queue, { limit: Number.POSITIVE_INFINITY, statuses: ['queued'], sort: 'priority', counts: 100 });
  assert.ok(list.jobs.some((job) => job.id === id));
});

producer('a job claimed with claimNext: handlers as an array only, complete() takes { result }, heartbeat() text', async () => {
  await refusedAs(() => claimNext(queue, { handlers: 'resize' } as never), '/handlers', 'handlers as a string matched by substring');
  await refusedAs(() => claimNext(queue, { workerId: 5 } as never), '/workerId', 'a number as worker id');
  const { id } = await enqueue(queue, { handler: 'claimed-here', payload: 1 });
  const job = await claimNext(queue, { handlers: ['claimed-here'] });
  assert.ok(job !== null && job.id === id);
  if (job === null) return;
  await refusedAs(() => job.heartbeat(5 as never), undefined, 'a number as progress');
  await refusedAs(() => job.complete(42 as never), undefined, 'a bare result');
  assert.equal(readdirSync(queue.paths.job(id)).includes('receipt.json'), false);
  const outcome = await job.complete({ result: 42 });
  assert.is(outcome.kind, 'receipt');
  assert.ok(readdirSync(queue.paths.job(id)).includes('receipt.json'));
});

producer.run();
