import { spawn } from 'node:child_process';
import * as nodeFs from 'node:fs/promises';
import { mkdir, readFile, readdir } from 'node:fs/promises';
import { renameSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { cancel, enqueue } from '../../src/producer/index.ts';
import { keyHash } from '../../src/model/layout.ts';
import { publishRecord } from '../../src/fs/safefs.ts';
import { realReads, type SafeFsSeam } from '../../src/fs/seam.ts';
import { encodeRecord, type HoldRecord } from '../../src/records/codec.ts';
import { selfIdentity, type Identity } from '../../src/model/identity.ts';
import type { Queue } from '../../src/model/queue.ts';
import { cleanupAll, rejectsWith, withWatchdog } from '../support/helpers.ts';
import { deadIdentity, entries, freshQueue, withSeam, writeReceipt } from '../support/producer.ts';

const RACER = fileURLToPath(new URL('../support/fixtures/enqueue-race.ts', import.meta.url));

const holdsOf = async (queue: Queue, key: string): Promise<string[]> => entries(join(queue.paths.dir('dedupe'), keyHash(key)));

/** A producer caught between DEDUPE-2 and ENQ-3: its hold and its staging directory, nothing published. */
async function stagedRival(queue: Queue, key: string, owner: Identity, id: string): Promise<void> {
  await mkdir(queue.paths.staging(id), { mode: 0o700 });
  const dir = join(queue.paths.dir('dedupe'), keyHash(key));
  await mkdir(dir, { mode: 0o700, recursive: true });
  const hold: HoldRecord = { fsjob: '1.0', type: 'hold', kind: 'dedupe', key, job_id: id, gen: null, owner, created_ms: Date.now() };
  await publishRecord(dir, '1.json', encodeRecord('hold', hold), 'link', queue.fsOptions);
}

const dedupe = suite('dedupe keys (DEDUPE-1..4)');
dedupe.after(cleanupAll);

dedupe('a second job with the key is refused with DEDUPE_HELD naming the unfinished holder, and nothing of it is written', async () => {
  const queue = await freshQueue();
  const first = await enqueue(queue, { argv: ['report'], dedupe: 'nightly' });
  const error = await rejectsWith(enqueue(queue, { argv: ['report'], dedupe: 'nightly' }), 'DEDUPE_HELD', { clause: 'DEDUPE-1' });
  assert.is(error.jobId, first.id, 'the error names the holding job');
  assert.equal(await entries(queue.paths.dir('jobs')), [first.id]);
  assert.equal(await entries(queue.paths.dir('tmp')), [], 'the refused job was unstaged');
  assert.equal(await entries(queue.paths.dir('ready')), [`1000-${first.id}`]);
  assert.equal(await holdsOf(queue, 'nightly'), ['1.json']);
  const other = await enqueue(queue, { argv: ['report'], dedupe: 'weekly' });
  assert.ok(other.id > first.id, 'another key is independent');
});

dedupe('the key is free again once the holder has a receipt (one written as a consumer would)', async () => {
  const queue = await freshQueue();
  const first = await enqueue(queue, { argv: ['x'], dedupe: 'k' });
  await writeReceipt(queue, first.id);
  const second = await enqueue(queue, { argv: ['x'], dedupe: 'k' });
  assert.equal(await holdsOf(queue, 'k'), ['2.json'], 'hold 2 taken, hold 1 pruned (GC-2)');
  const hold = JSON.parse(await readFile(join(queue.paths.dir('dedupe'), keyHash('k'), '2.json'), 'utf8')) as HoldRecord;
  assert.is(hold.job_id, second.id);
  assert.is(hold.gen, null);
  assert.equal(hold.owner, await selfIdentity());
});

dedupe('the key is free again once the holder is cancelled (cancel publishes its receipt)', async () => {
  const queue = await freshQueue();
  const first = await enqueue(queue, { argv: ['x'], dedupe: 'k' });
  await cancel(queue, first.id);
  const second = await enqueue(queue, { argv: ['x'], dedupe: 'k' });
  await rejectsWith(enqueue(queue, { argv: ['x'], dedupe: 'k' }), 'DEDUPE_HELD');
  assert.equal((await entries(queue.paths.dir('jobs'))).length, 2);
  assert.ok(second.id > first.id);
});

dedupe('a producer that died between its hold and publication does not block the key (DEDUPE-3)', async () => {
  const queue = await freshQueue();
  const ghost = '1764476044123456789-3fa2c1d09b8e7f64';
  await stagedRival(queue, 'k', await deadIdentity(), ghost);
  const { id } = await enqueue(queue, { argv: ['x'], dedupe: 'k' });
  assert.equal(await holdsOf(queue, 'k'), ['2.json']);
  assert.ok((await entries(queue.paths.dir('jobs'))).includes(id));
  assert.equal(await entries(queue.paths.dir('tmp')), [ghost], "the dead producer's staging is left for spec/recovery-and-gc.md");
});

dedupe('a live producer between its hold and publication does hold the key', async () => {
  const queue = await freshQueue();
  const staging = '1764476044123456789-0000000000000001';
  await stagedRival(queue, 'k', await selfIdentity(), staging);
  const error = await rejectsWith(enqueue(queue, { argv: ['x'], dedupe: 'k' }), 'DEDUPE_HELD');
  assert.is(error.jobId, staging);
  assert.equal(await holdsOf(queue, 'k'), ['1.json']);
});

dedupe('a producer that publishes and exits between a rival\'s looks still holds its key (DEDUPE-3: the last look at jobs/)', async () => {
  const queue = await freshQueue();
  const ghost = '1764476044123456789-3fa2c1d09b8e7f65';
  // Its owner is dead from the start: the producer that took hold 1 exits
  // right after its rename, so a judge that saw tmp/<id> and then asks about
  // the pid finds it gone. The seam forces that order: the rename happens
  // just after the rival's look at tmp/<id> returned "present".
  await stagedRival(queue, 'k', await deadIdentity(), ghost);
  const staging = queue.paths.staging(ghost);
  let raced = false;
  const seam: SafeFsSeam = {
    ...nodeFs,
    reads: {
      ...realReads,
      lstat: (path: string) => {
        const stats = realReads.lstat(path);
        if (!raced && path === staging) {
          raced = true;
          renameSync(staging, queue.paths.job(ghost));
        }
        return stats;
      },
    },
  };
  const error = await rejectsWith(enqueue(await withSeam(queue.root, seam), { argv: ['x'], dedupe: 'k' }), 'DEDUPE_HELD', { clause: 'DEDUPE-1' });
  assert.ok(raced, 'the rival looked at the staging directory');
  assert.is(error.jobId, ghost, 'the published job holds the key');
  assert.equal(await holdsOf(queue, 'k'), ['1.json'], 'no second hold was taken');
  assert.equal(await entries(queue.paths.dir('jobs')), [ghost]);
});

dedupe('an unreadable highest hold is never taken on a guess', async () => {
  const queue = await freshQueue();
  const dir = join(queue.paths.dir('dedupe'), keyHash('k'));
  await mkdir(dir, { mode: 0o700 });
  await publishRecord(dir, '1.json', '{"not":"a hold"}\n', 'link', queue.fsOptions);
  await rejectsWith(enqueue(queue, { argv: ['x'], dedupe: 'k' }), 'DEDUPE_HELD', { clause: 'DEDUPE-2' });
  assert.equal(await entries(queue.paths.dir('jobs')), []);
});

dedupe('8 processes enqueueing the same key at the same instant: exactly one is accepted, per key', async () => {
  const queue = await freshQueue();
  const keys = ['alpha', 'beta', 'gamma'];
  // Every racer loads, says "ready", and gets the same start instant on stdin.
  // A healthy run takes a few seconds; the watchdog is generous because other
  // suites may share the machine's two cores.
  const racers = Array.from({ length: 8 }, () => {
    const child = spawn(process.execPath, ['--import', 'tsx', RACER, queue.root, '150', ...keys], { stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    const ready = new Promise<void>((resolve) =>
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString('utf8');
        if (out.includes('ready\n')) resolve();
      }),
    );
    const exited = new Promise<string>((resolve, reject) => child.on('exit', (code) => (code === 0 ? resolve(out.replace('ready\n', '')) : reject(new Error(`racer exited ${code}`)))));
    exited.catch(() => undefined); // reported through Promise.all below, never unhandled
    return { child, ready, exited };
  });
  let texts: string[];
  try {
    await withWatchdog(120_000, Promise.all(racers.map((racer) => racer.ready)));
    const start = Date.now() + 200;
    for (const { child } of racers) child.stdin.end(`${start}\n`);
    texts = await withWatchdog(120_000, Promise.all(racers.map((racer) => racer.exited)));
  } finally {
    for (const { child } of racers) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  const lines = texts.flatMap((out) => out.trim().split('\n')).map((line) => JSON.parse(line) as { key: string; id?: string; code?: string; holder?: string });
  for (const key of keys) {
    const results = lines.filter((line) => line.key === key);
    assert.is(results.length, 8, key);
    const accepted = results.filter((line) => line.id !== undefined);
    assert.is(accepted.length, 1, `${key}: exactly one accepted`);
    for (const refused of results.filter((line) => line.id === undefined)) {
      assert.is(refused.code, 'DEDUPE_HELD', key);
      assert.is(refused.holder, accepted[0]?.id, `${key}: every refusal names the winner`);
    }
  }
  assert.is((await readdir(queue.paths.dir('jobs'))).length, keys.length);
  assert.equal(await entries(queue.paths.dir('tmp')), []);
  assert.is((await entries(queue.paths.dir('ready'))).length, keys.length);
});

dedupe.run();
