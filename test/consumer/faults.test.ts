import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import * as nodeFs from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { enqueue, freshQueue } from '../support/enqueue.ts';
import { drain, endOf, fileExists, receiptOf, serve, waitFor } from '../support/consumer.ts';
import { cleanupAll, freshDir, withWatchdog } from '../support/helpers.ts';
import { LEASE_MIN } from '../../src/base/constants.ts';
import { Guardian } from '../../src/consumer/index.ts';
import { Spawner } from '../../src/consumer/spawner.ts';
import type { SafeFsSeam } from '../../src/fs/safefs.ts';

const faults = suite('injected filesystem faults');
faults.after(cleanupAll);

/** A seam whose link() refuses the links `refuse` picks (by target and how many it refused so far) with errno `code`. */
function refusingLinks(refuse: (target: string, refusedSoFar: number) => boolean, code: string, message: string): { fs: SafeFsSeam; refused: () => number } {
  let refused = 0;
  const fs: SafeFsSeam = {
    ...nodeFs,
    link: async (from, to) => {
      if (refuse(String(to), refused)) {
        refused += 1;
        throw Object.assign(new Error(message), { code });
      }
      return nodeFs.link(from, to);
    },
  };
  return { fs, refused: () => refused };
}

faults('an exec record that cannot be published: the command never runs, the generation is given back, a later attempt runs (EXEC-3)', async () => {
  const q = await freshQueue();
  const dir = await freshDir('fault');
  const log = join(dir, 'log');
  const id = await enqueue(q, { argv: ['sh', '-c', `echo ran >> ${log}`] });
  const { fs, refused: failed } = refusingLinks((to) => to.endsWith('/exec.1.json'), 'ENOSPC', 'no space left on device');
  const { summary } = await drain(q, { fs });
  assert.is(failed(), 1);
  const end = endOf(q, id, 1);
  assert.is(end.reason, 'released');
  assert.is(end.counted, false);
  const r = receiptOf(q, id);
  assert.is(r.outcome, 'succeeded');
  assert.is(r.gen, 2);
  assert.is(r.attempts, 1, 'the unrecorded attempt does not count');
  assert.is(readFileSync(log, 'utf8'), 'ran\n', 'the command ran exactly once');
  assert.is(summary.errors, 1);
});

faults('a claim that cannot be published leaves the job untouched for the next consumer', async () => {
  const q = await freshQueue();
  const id = await enqueue(q, { argv: ['true'] });
  const fs: SafeFsSeam = {
    ...nodeFs,
    link: async (from, to) => {
      if (String(to).endsWith('/claim.1.json')) throw Object.assign(new Error('read-only file system'), { code: 'EROFS' });
      return nodeFs.link(from, to);
    },
  };
  const first = await drain(q, { fs });
  assert.is(first.summary.claimed, 0);
  assert.ok(first.events.some((e) => e.type === 'error' && e.error.code === 'IO' && e.error.errno === 'EROFS'));
  const temps = (await nodeFs.readdir(q.paths.job(id))).filter((name) => name.startsWith('.'));
  assert.equal(temps, [], 'the temporary file of the failed publish is removed');
  await drain(q);
  assert.is(receiptOf(q, id).outcome, 'succeeded');
});

faults('a receipt the filesystem refused is published on a later try, and the command is not run again meanwhile (RCPT-7)', async () => {
  const q = await freshQueue();
  const dir = await freshDir('fault');
  const log = join(dir, 'log');
  const id = await enqueue(q, { argv: ['sh', '-c', `echo ran >> ${log}`] });
  const { fs, refused } = refusingLinks((to, so) => to.endsWith('/receipt.json') && so < 2, 'ENOSPC', 'no space left on device');
  const { events } = await drain(q, { fs });
  assert.is(refused(), 2, 'the first two tries were refused');
  const r = receiptOf(q, id);
  assert.is(r.outcome, 'succeeded');
  assert.is(r.gen, 1, 'published by the same owner, in its own generation');
  assert.is(fileExists(q.paths.jobFile(id, 'end.1.json')), false, 'no end record: the outcome is the receipt');
  assert.is(fileExists(q.paths.jobFile(id, 'claim.2.json')), false, 'never claimed again');
  assert.is(readFileSync(log, 'utf8'), 'ran\n', 'the command ran exactly once');
  // The first refusal is reported once, as what is pending and why (issue 19 point 10); the retries are silent.
  const pending = events.filter((e) => e.type === 'pending');
  assert.is(pending.length, 1, 'the first refusal is reported, once');
  assert.ok(pending[0]?.type === 'pending' && pending[0].step === 'receipt' && pending[0].error?.errno === 'ENOSPC', 'it names the receipt and the refusal');
  assert.is(events.filter((e) => e.type === 'error').length, 0, 'a refusal retried to success is not an error');
});

faults('a receipt refused on every try is given up lease_ms after the first refusal even while renewals succeed (RCPT-7): the drain ends, the claim stays open, the command ran once', async () => {
  const q = await freshQueue();
  const dir = await freshDir('fault');
  const log = join(dir, 'log');
  const id = await enqueue(q, { argv: ['sh', '-c', `echo ran >> ${log}`] });
  // Only the receipt is refused: state records (renewals, by rename) and everything else go through.
  const { fs, refused } = refusingLinks((to) => to.endsWith('/receipt.json'), 'EIO', 'input/output error');
  // LEASE_MIN: the drain must end on its own, about 3 s after the first refusal (the watchdog is far beyond it).
  const { summary, events } = await withWatchdog(120_000, drain(q, { fs, leaseMs: LEASE_MIN }));
  assert.ok(refused() >= 2, `tried again before giving up (${refused()} tries)`);
  assert.is(fileExists(q.paths.jobFile(id, 'receipt.json')), false, 'nothing was published');
  assert.is(fileExists(q.paths.jobFile(id, 'end.1.json')), false, 'nor an end record: the claim stays open for RECOV-1');
  assert.is(readFileSync(log, 'utf8'), 'ran\n', 'the command ran exactly once');
  assert.equal(summary.left.map((job) => job.job_id), [id], 'the worker says which job it leaves unfinished');
  assert.is(events.filter((e) => e.type === 'pending').length, 1, 'the first refusal is reported, once');
});

faults.run();

const guardian = suite('the guardian (WORKER-2)');
guardian.after(cleanupAll);

guardian('a dead guardian is restarted, and no command job is claimed while it is down', async () => {
  const q = await freshQueue();
  const g = new Guardian();
  const { worker, done, events } = serve(q, { guardian: g });
  await waitFor('the guardian', () => g.pid);
  const first = g.pid as number;
  process.kill(first, 'SIGKILL');
  await waitFor('the restart', () => events.some((e) => e.type === 'guardian' && e.state === 'restarted') && g.pid !== undefined && g.pid !== first);
  assert.ok(events.some((e) => e.type === 'guardian' && e.state === 'down'));
  const id = await enqueue(q, { argv: ['true'] });
  await waitFor('the receipt', () => fileExists(q.paths.jobFile(id, 'receipt.json')));
  worker.stop();
  await done;
  assert.is(receiptOf(q, id).outcome, 'succeeded');
});

guardian('a command job is refused, not run unguarded, when the guardian cannot protect it', async () => {
  const q = await freshQueue();
  const id = await enqueue(q, { argv: ['true'] });
  class BrokenGuardian extends Guardian {
    override get healthy(): boolean {
      return false;
    }
    override async ensure(): Promise<void> {
      throw new Error('cannot start /bin/sh');
    }
    override async start(): Promise<void> {}
  }
  const { summary } = await drain(q, { guardian: new BrokenGuardian() });
  assert.is(summary.claimed, 0);
  assert.not.ok(fileExists(q.paths.jobFile(id, 'claim.1.json')));
});

guardian.run();

const spawnerDeath = suite('the spawner (design-notes "Spawning commands")');
spawnerDeath.after(cleanupAll);

spawnerDeath('a dead spawner is replaced, and no command job is claimed while it is down', async () => {
  const q = await freshQueue();
  const spawner = new Spawner();
  const { worker, done, events } = serve(q, { spawner });
  await waitFor('the spawner', () => spawner.pid);
  const first = spawner.pid as number;
  process.kill(first, 'SIGKILL');
  await waitFor('the restart', () => events.some((e) => e.type === 'spawner' && e.state === 'restarted') && spawner.pid !== undefined && spawner.pid !== first);
  assert.ok(events.some((e) => e.type === 'spawner' && e.state === 'down'));
  const id = await enqueue(q, { argv: ['true'] });
  await waitFor('the receipt', () => fileExists(q.paths.jobFile(id, 'receipt.json')));
  worker.stop();
  await done;
  assert.is(receiptOf(q, id).outcome, 'succeeded');
});

spawnerDeath('no command job is claimed while no spawner answers', async () => {
  const q = await freshQueue();
  const id = await enqueue(q, { argv: ['true'] });
  class DeadSpawner extends Spawner {
    override get healthy(): boolean {
      return false;
    }
    override async start(): Promise<string | null> {
      return null;
    }
    override async ensure(): Promise<string | null> {
      throw new Error('cannot start /bin/sh');
    }
  }
  const { summary } = await drain(q, { spawner: new DeadSpawner() });
  assert.is(summary.claimed, 0);
  assert.not.ok(fileExists(q.paths.jobFile(id, 'claim.1.json')));
});

spawnerDeath("a command whose exit status died with its waiter or spawner ends as a dead owner's attempt: counted, then lost (RETRY-1, RECOV-1)", async () => {
  const q = await freshQueue();
  const again = await enqueue(q, { argv: ['sleep', '30'], max_attempts: 2, kill_grace_ms: 200 });
  const last = await enqueue(q, { argv: ['sleep', '30'], max_attempts: 1, kill_grace_ms: 200 });
  const spawner = new Spawner();
  const { worker, done, events } = serve(q, { spawner, concurrency: 2 });
  await waitFor('both started', () => events.filter((e) => e.type === 'started').length === 2);
  // The spawner and its waiters share a process group; each command has its own.
  process.kill(-(spawner.pid as number), 'SIGKILL');
  await waitFor('the end record and the receipt', () => fileExists(q.paths.jobFile(again, 'end.1.json')) && fileExists(q.paths.jobFile(last, 'receipt.json')));
  worker.stop();
  await done;
  const end = endOf(q, again, 1);
  assert.equal([end.reason, end.counted, end.status], ['failed', true, null]);
  const receipt = receiptOf(q, last);
  assert.equal([receipt.outcome, receipt.exit_code, receipt.reason, receipt.status], ['lost', 125, 'owner_lost', null]);
  assert.match(receipt.message ?? '', /died, and the exit status with it/);
});

spawnerDeath.run();
