/**
 * A Worker's claims in flight (src/consumer/claims-in-flight.ts): with
 * several free slots its claims run at once, and still no job gets two
 * claims of it (CLAIM-8), claims link in CLAIM-1's order, a lane's slots are
 * judged as by a worker that claims one job at a time (LANE-4: no
 * `lane_busy` against itself), once claims one job, and a stop waits for the
 * claims in flight (WORKER-3). Each case holds one claim's temp file at its
 * fsync (a filesystem seam) until what it checks has happened beside it; a
 * bounded wait stands in where the fixed worker has nothing to show
 * (the walk it holds back makes no call), never an assertion on time.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import * as nodeFs from 'node:fs/promises';
import { existsSync, readdirSync } from 'node:fs';
import { enqueue, freshQueue } from '../support/enqueue.ts';
import { drain, jobFiles, receiptOf, serve, waitFor } from '../support/consumer.ts';
import { cleanupAll, withWatchdog } from '../support/helpers.ts';
import { realReads, type SafeFsSeam } from '../../src/fs/safefs.ts';
import type { Queue } from '../../src/model/queue.ts';
import { ClaimsInFlight } from '../../src/consumer/claims-in-flight.ts';
import type { ClaimOutcome } from '../../src/consumer/select.ts';

/** How long a held claim waits for a sign that only a broken worker gives. */
const NO_SIGN_MS = 300;
/**
 * How long a held claim waits for a sign that the fixed worker gives (the next claim's temp fsynced beside it):
 * however slowly a loaded machine walks to the next job, only the overlap tests what the case checks (a 300 ms
 * fallback failed the first case 1 run in 8 while other work kept the machine busy).
 */
const SIGN_MS = 10_000;
/** A worker that lost count of its claims in flight never ends: fail instead of hanging. */
const WATCHDOG_MS = 30_000;

const later = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Seam {
  fs: SafeFsSeam;
  /** The jobs whose claim was linked, in link order. */
  links: string[];
  /** Whether another job's claim temp was fsynced while the held one waited. */
  overlapped: () => boolean;
  /** How many other jobs' claim temps were fsynced. */
  synced: () => number;
  /** Lets the held claim go on (its fsync runs then). */
  release: () => void;
}

function jobOf(path: string): string | undefined {
  return /\/jobs\/([^/]+)\/\.?claim\.1\.json/.exec(path)?.[1];
}

/**
 * A seam that holds the fsync of job `held`'s claim temp until `until`
 * resolves or release() is called, and logs claim links and the fsyncs of
 * other jobs' claim temps.
 */
function holdingSeam(held: string, until: Promise<void>): Seam {
  const links: string[] = [];
  let holding = false;
  let overlapped = false;
  let synced = 0;
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  const fs: SafeFsSeam = {
    ...nodeFs,
    open: async (path, flags, mode) => {
      const handle = await nodeFs.open(path, flags, mode);
      const job = jobOf(path);
      if (job === undefined) return handle;
      const sync = handle.sync.bind(handle);
      handle.sync = async () => {
        if (job === held) {
          holding = true;
          await Promise.race([until, released]);
          holding = false;
          return sync();
        }
        if (holding) overlapped = true;
        await sync();
        synced += 1;
      };
      return handle;
    },
    link: async (from, to) => {
      await nodeFs.link(from, to);
      const job = jobOf(String(to));
      if (job !== undefined) links.push(job);
    },
  };
  return { fs, links, overlapped: () => overlapped, synced: () => synced, release };
}

/** Every job claimed once, in generation 1, run to a succeeded receipt, no temp file left. */
function claimedOnceEach(q: Queue, ids: readonly string[]): void {
  for (const id of ids) {
    const files = jobFiles(q, id);
    assert.equal(files.filter((name) => name.startsWith('claim.')), ['claim.1.json'], `job ${id}: one claim`);
    assert.equal(files.filter((name) => name.startsWith('end.') || name.startsWith('.')), [], `job ${id}: no end record, no temp file`);
    assert.is(receiptOf(q, id).outcome, 'succeeded');
    assert.is(receiptOf(q, id).gen, 1);
  }
}

/** holdingSeam holding job `held`'s claim temp until job `next`'s claim temp was fsynced (or SIGN_MS passed). */
function heldUntilSynced(held: string, next: string): Seam {
  let nextSynced: () => void = () => undefined;
  const synced = new Promise<void>((resolve) => (nextSynced = resolve));
  // The fallback's timer is cleared once the sign came: a pending one would hold the test process open.
  let timer: NodeJS.Timeout | undefined;
  const fallback = new Promise<void>((resolve) => (timer = setTimeout(resolve, SIGN_MS)));
  const seam = holdingSeam(held, Promise.race([synced.then(() => clearTimeout(timer)), fallback]));
  const open = seam.fs.open;
  seam.fs.open = async (path, flags, mode) => {
    const handle = await open(path, flags, mode);
    if (jobOf(path) === next) {
      const sync = handle.sync.bind(handle);
      handle.sync = async () => {
        await sync();
        nextSynced();
      };
    }
    return handle;
  };
  return seam;
}

const inFlight = suite('claims in flight at once (claims-in-flight.ts; CLAIM-1, CLAIM-8, LANE-4, WORKER-3)');
inFlight.after(cleanupAll);

inFlight('a worker of concurrency 4 claims beside a held claim, links its claims in CLAIM-1 order, and claims no job twice', async () => {
  const q = await freshQueue();
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) ids.push(await enqueue(q, { handler: 'h', payload: i }));
  // The second job's claim temp, fsynced while the first is held, lets the first go on.
  const seam = heldUntilSynced(ids[0] as string, ids[1] as string);
  const { summary } = await withWatchdog(WATCHDOG_MS, drain(q, { concurrency: 4, commands: false, fs: seam.fs }, (worker) => worker.handle('h', () => null)));
  assert.ok(seam.overlapped(), 'the next claim was written and fsynced while the first waited');
  assert.equal(seam.links, ids, 'claims link in CLAIM-1 order, the held one first');
  assert.is(summary.raced, 0, 'no claim lost, not even to its own worker');
  claimedOnceEach(q, ids);
});

inFlight('a claim the walk makes itself (too few jobs listed to hand it over) links after the claim in flight before it (CLAIM-1)', async () => {
  const q = await freshQueue();
  const ids = [await enqueue(q, { handler: 'h', payload: 0 }), await enqueue(q, { handler: 'h', payload: 1 })];
  // Concurrency 2, two jobs: the first claim is handed over, the second made by the walk itself; its temp,
  // fsynced while the first is held, lets the first go on, so only a turn keeps the second's link behind.
  const seam = heldUntilSynced(ids[0] as string, ids[1] as string);
  const { summary } = await withWatchdog(WATCHDOG_MS, drain(q, { concurrency: 2, commands: false, fs: seam.fs }, (worker) => worker.handle('h', () => null)));
  assert.ok(seam.overlapped(), 'the second claim was written and fsynced while the first waited');
  assert.equal(seam.links, ids, 'claims link in CLAIM-1 order, the held one first');
  assert.is(summary.raced, 0);
  claimedOnceEach(q, ids);
});

inFlight('claims in flight of one lane: a worker of concurrency 4 judges the lane after its own claim took it, so no generation ends lane_busy (LANE-4)', async () => {
  for (const slots of [1, 2]) {
    const q = await freshQueue();
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(await enqueue(q, { handler: 'h', payload: i, lane: 'one', ...(slots > 1 ? { lane_slots: slots } : {}) } as Parameters<typeof enqueue>[1]));
    // A broken worker judges the lane again (lists a lane slot's holds) while the first claim waits; this one waits for that claim first.
    let lanesLooked = 0;
    let looked: () => void = () => undefined;
    const again = new Promise<void>((resolve) => (looked = resolve));
    const seam = holdingSeam(ids[0] as string, Promise.race([again, later(NO_SIGN_MS)]));
    seam.fs.reads = {
      ...realReads,
      readdir: ((path: string, options?: { withFileTypes: true }) => {
        if (path.includes('/lanes/') && ++lanesLooked >= 2) looked();
        return options === undefined ? realReads.readdir(path) : realReads.readdir(path, options);
      }) as typeof realReads.readdir,
    };
    let running = 0;
    let most = 0;
    const handler = async (): Promise<null> => {
      running += 1;
      most = Math.max(most, running);
      await later(20); // so that jobs of the lane could overlap
      running -= 1;
      return null;
    };
    const { summary } = await withWatchdog(WATCHDOG_MS, drain(q, { concurrency: 4, commands: false, fs: seam.fs }, (worker) => worker.handle('h', handler)));
    assert.ok(most <= slots, `at most ${slots} of the lane at once (${most})`);
    assert.is(summary.raced, 0);
    claimedOnceEach(q, ids);
  }
});

inFlight('once, at concurrency 4: one job is claimed, the others are left untouched', async () => {
  const q = await freshQueue();
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push(await enqueue(q, { handler: 'h', payload: i }));
  await drain(q, { concurrency: 4, commands: false, mode: 'once' }, (worker) => worker.handle('h', () => null));
  assert.is(receiptOf(q, ids[0] as string).outcome, 'succeeded');
  for (const id of ids.slice(1)) assert.equal(jobFiles(q, id), ['spec.json'], `job ${id} untouched`);
});

inFlight('a stop while claims are in flight: run() ends only after each of them ended, every claimed job has its receipt or end record (WORKER-3)', async () => {
  const q = await freshQueue();
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) ids.push(await enqueue(q, { handler: 'h', payload: i }));
  const seam = holdingSeam(ids[0] as string, new Promise<void>(() => undefined));
  const { worker, done } = serve(q, { concurrency: 4, commands: false, fs: seam.fs });
  worker.handle('h', () => null);
  // The first claim is held; the others were written and fsynced beside it, and wait to be linked after it.
  await waitFor('the claims beside the held one', () => seam.synced() === 3);
  worker.stop();
  // Held on until run() returned (a worker that does not wait for its claims) or for a while (one that does).
  void Promise.race([done, later(NO_SIGN_MS)]).then(seam.release, seam.release);
  await withWatchdog(WATCHDOG_MS, done);
  for (const id of ids) {
    const files = readdirSync(q.paths.job(id));
    assert.equal(files.filter((name) => name.startsWith('.')), [], `job ${id}: no temp file left`);
    if (!files.includes('claim.1.json')) continue;
    assert.ok(files.includes('receipt.json') || files.includes('end.1.json'), `job ${id}: claimed, then finished or ended before run() returned (${files.join(' ')})`);
  }
  assert.ok(existsSync(q.paths.jobFile(ids[0] as string, 'claim.1.json')), 'the held claim was linked after the stop, and its job handled');
});

inFlight('a claim whose settling throws gives its link turn back: the claim started after it links, and nothing is left in flight', async () => {
  const claims = new ClaimsInFlight();
  const handled: ClaimOutcome[] = [];
  const pipeline = claims.pipeline('/q', (outcome) => void handled.push(outcome), () => claims.size);
  pipeline.start('a', null, () => Promise.reject(new Error('settling threw')));
  let linked = false;
  pipeline.start('b', null, async (turn) => {
    const done = await turn();
    linked = true;
    done();
    return { result: null, raced: true };
  });
  await withWatchdog(WATCHDOG_MS, claims.all());
  assert.ok(linked, "the second claim got its turn after the first one's failure");
  assert.is(claims.size, 0);
  assert.equal(handled, [{ result: null, raced: false }, { result: null, raced: true }], 'each claim handled once, the failed one as one that claimed nothing');
});

inFlight.run();
