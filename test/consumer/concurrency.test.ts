/**
 * CLAIM-8: a consumer never claims a job it already owns, nor more jobs than
 * its concurrency. Each check waits for a barrier, not for time: the worker's
 * selection pass ends only when it goes to sleep for its poll period, which
 * is a setTimeout of exactly POLL_MS (an unusual number, so nothing else
 * arms one). What is on disk at that moment is everything the pass claimed:
 * a worker that ignored the bound would have claimed more before sleeping.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { enqueue, freshQueue } from '../support/enqueue.ts';
import { serve, waitFor } from '../support/consumer.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import type { Queue } from '../../src/model/queue.ts';

const POLL_MS = 987;

/** Resolves the next time the worker sleeps for its poll period (the end of a selection pass). */
function nextPollSleep(): { reached: Promise<void>; restore: () => void } {
  const real = globalThis.setTimeout;
  let reach: () => void = () => undefined;
  const reached = new Promise<void>((resolve) => (reach = resolve));
  const patched = ((handler: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    if (ms === POLL_MS) queueMicrotask(reach);
    return real(handler, ms, ...args);
  }) as typeof setTimeout;
  globalThis.setTimeout = Object.assign(patched, real);
  return { reached, restore: () => void (globalThis.setTimeout = real) };
}

/** A command that runs until `release` exists. */
function blocked(release: string): [string, ...string[]] {
  return ['sh', '-c', 'while [ ! -e "$1" ]; do sleep 0.05; done', 'sh', release];
}

function claimsOf(q: Queue, id: string): string[] {
  return readdirSync(q.paths.job(id)).filter((name) => /^claim\.[0-9]+\.json$/.test(name)).sort();
}

const claims = suite('claims of one consumer (CLAIM-8)');
claims.after(cleanupAll);

claims('a job this consumer runs is never claimed again by it, though its ready entry stays until the receipt (CLAIM-8)', async () => {
  const q = await freshQueue();
  const release = join(await freshDir('claim8'), 'release');
  const id = await enqueue(q, { argv: blocked(release) });
  const sleep = nextPollSleep();
  const { worker, done, events } = serve(q, { concurrency: 2, pollMs: POLL_MS });
  try {
    await sleep.reached;
  } finally {
    sleep.restore();
  }
  // The pass saw the job's ready entry again with a slot free, and passed over it.
  assert.ok(readdirSync(q.paths.dir('ready')).some((name) => name.endsWith(id)), 'the ready entry is still there');
  assert.equal(claimsOf(q, id), ['claim.1.json']);
  assert.is(events.filter((e) => e.type === 'claimed').length, 1);
  writeFileSync(release, '');
  await waitFor('the receipt', () => existsSync(q.paths.jobFile(id, 'receipt.json')));
  worker.stop();
  await done;
  assert.equal(claimsOf(q, id), ['claim.1.json'], 'one generation, run once');
});

claims('a consumer of concurrency 2 holds at most 2 open claims while 4 jobs are ready (CLAIM-8)', async () => {
  const q = await freshQueue();
  const dir = await freshDir('claim8');
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) ids.push(await enqueue(q, { argv: blocked(join(dir, `release-${i}`)) }));
  const sleep = nextPollSleep();
  const { worker, done, events } = serve(q, { concurrency: 2, pollMs: POLL_MS });
  try {
    await sleep.reached;
  } finally {
    sleep.restore();
  }
  const claimed = ids.filter((id) => claimsOf(q, id).length > 0);
  assert.equal(claimed, ids.slice(0, 2), 'the first two in FIFO order, and no other');
  // Release them one by one: each freed slot takes exactly one more job.
  let open = 0;
  let most = 0;
  const seen = new Set<string>();
  const count = (): void => {
    for (const event of events) {
      const key = `${event.type} ${'job_id' in event ? String(event.job_id) : ''}`;
      if (seen.has(key)) continue;
      seen.add(key);
      if (event.type === 'claimed') open += 1;
      if (event.type === 'finished') open -= 1;
      most = Math.max(most, open);
    }
  };
  for (let i = 0; i < 4; i++) {
    writeFileSync(join(dir, `release-${i}`), '');
    await waitFor(`job ${i}'s receipt`, () => existsSync(q.paths.jobFile(ids[i] as string, 'receipt.json')), 30_000);
    count();
  }
  worker.stop();
  await done;
  count();
  assert.is(most, 2, 'never more than 2 claims open at once');
  for (const id of ids) assert.equal(claimsOf(q, id), ['claim.1.json']);
});

claims.run();
