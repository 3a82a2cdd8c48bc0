import * as nodeFs from 'node:fs/promises';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { cancel, enqueue } from '../../src/producer/index.ts';
import { checkRecord, encodeRecord, type CancelRecord, type ClaimRecord, type ReceiptRecord } from '../../src/records/codec.ts';
import { selfIdentity } from '../../src/model/identity.ts';
import type { SafeFsSeam } from '../../src/fs/safefs.ts';
import { cleanupAll, dotFiles, rejectsWith } from '../support/helpers.ts';
import { entries, freshQueue, modeOf, withSeam, writeClaim, writeEnd, writeExec, writeReceipt } from '../support/producer.ts';

const read = async <T>(path: string): Promise<T> => JSON.parse(await readFile(path, 'utf8')) as T;

const cancelling = suite('cancel (CANCEL-1, CANCEL-2)');
cancelling.after(cleanupAll);

cancelling('cancel before any consumer: cancel.json, claim.1.json by this process, a cancelled receipt with exit code 130, no ready entry', async () => {
  const queue = await freshQueue();
  const { id } = await enqueue(queue, { argv: ['deploy'] });
  const result = await cancel(queue, id, { reason: 'wrong branch' });
  assert.is(result.next, 'finished');
  assert.is(result.published, true);
  const dir = queue.paths.job(id);
  assert.equal(await entries(dir), ['cancel.json', 'claim.1.json', 'receipt.json', 'spec.json']);
  for (const name of ['cancel.json', 'claim.1.json', 'receipt.json']) {
    assert.is(await modeOf(join(dir, name)), 0o600, name);
    const type = name.split('.')[0] as 'cancel' | 'claim' | 'receipt';
    const expectations = name === 'cancel.json' ? { expectedForce: false } : name === 'claim.1.json' ? { expectedGen: 1 } : {};
    assert.equal(checkRecord(type, await readFile(join(dir, name)), { expectedJobId: id, ...expectations }), [], `${name} is a valid record`);
  }
  const me = await selfIdentity();
  const request = await read<CancelRecord>(join(dir, 'cancel.json'));
  assert.equal([request.force, request.reason, request.by], [false, 'wrong branch', me]);
  const claim = await read<ClaimRecord>(join(dir, 'claim.1.json'));
  assert.equal([claim.gen, claim.owner, claim.worker_id], [1, me, null]);
  const receipt = await read<ReceiptRecord>(join(dir, 'receipt.json'));
  assert.equal(receipt, result.receipt);
  assert.equal(
    [receipt.gen, receipt.outcome, receipt.exit_code, receipt.reason, receipt.attempts, receipt.status, receipt.stdout, receipt.by],
    [1, 'cancelled', 130, null, 0, null, null, me],
  );
  assert.ok(receipt.message?.includes('wrong branch'));
  assert.equal(await entries(queue.paths.dir('ready')), [], 'READY-2');
  assert.equal(await dotFiles(dir), [], 'no temporary file left');
});

cancelling('cancel --force writes cancel-force.json; a job nobody ran is still cancelled (130)', async () => {
  const queue = await freshQueue();
  const { id } = await enqueue(queue, { argv: ['x'] });
  const result = await cancel(queue, id, { force: true });
  assert.is(result.record, 'cancel-force.json');
  const dir = queue.paths.job(id);
  assert.equal(await entries(dir), ['cancel-force.json', 'claim.1.json', 'receipt.json', 'spec.json']);
  assert.is((await read<CancelRecord>(join(dir, 'cancel-force.json'))).force, true);
  assert.is((await read<ReceiptRecord>(join(dir, 'receipt.json'))).exit_code, 130);
});

cancelling('cancelling a finished job is refused with FINISHED and writes nothing', async () => {
  const queue = await freshQueue();
  const { id } = await enqueue(queue, { argv: ['x'] });
  await writeReceipt(queue, id, { outcome: 'failed', exit_code: 3, status: { exit: 3, signal: null } });
  const before = await entries(queue.paths.job(id));
  const error = await rejectsWith(cancel(queue, id), 'FINISHED', { clause: 'CANCEL-1' });
  assert.is(error.jobId, id);
  assert.ok(error.message.includes('failed, exit code 3'), 'the message reports the outcome');
  assert.equal(await entries(queue.paths.job(id)), before);
});

cancelling('a job with an open claim only gets the request: its owner acts on it (CANCEL-3), and asking twice succeeds', async () => {
  const queue = await freshQueue();
  const { id } = await enqueue(queue, { argv: ['x'] });
  await writeClaim(queue, id, 1); // owned by this live process: running or claimed
  await writeExec(queue, id, 1, 1);
  const first = await cancel(queue, id);
  assert.equal([first.next, first.published, first.receipt], ['owner', true, null]);
  const again = await cancel(queue, id);
  assert.equal([again.next, again.published], ['owner', false], 'the request already stands');
  const force = await cancel(queue, id, { force: true });
  assert.equal([force.record, force.published], ['cancel-force.json', true], 'force may follow a graceful request');
  assert.equal(await entries(queue.paths.job(id)), ['cancel-force.json', 'cancel.json', 'claim.1.json', 'exec.1.json', 'spec.json']);
});

cancelling('a job waiting for a retry is claimed at the next generation, and its receipt counts the attempt used', async () => {
  const queue = await freshQueue();
  const { id } = await enqueue(queue, { argv: ['x'], max_attempts: 3 });
  await writeClaim(queue, id, 1);
  await writeExec(queue, id, 1, 1);
  await writeEnd(queue, id, 1, 2);
  const result = await cancel(queue, id);
  assert.is(result.next, 'finished');
  const dir = queue.paths.job(id);
  assert.ok((await entries(dir)).includes('claim.2.json'));
  const receipt = await read<ReceiptRecord>(join(dir, 'receipt.json'));
  assert.equal([receipt.gen, receipt.attempts, receipt.outcome], [2, 1, 'cancelled']);
});

cancelling('a claim lost to a consumer leaves the job to that consumer (CLAIM-6.2)', async () => {
  const base = await freshQueue();
  const { id } = await enqueue(base, { argv: ['x'] });
  const rival: ClaimRecord = { fsjob: '1.0', type: 'claim', job_id: id, gen: 1, owner: await selfIdentity(), worker_id: 'c0ffee0123456789', claimed_ms: Date.now(), lease_ms: 30_000 };
  const fs: SafeFsSeam = {
    ...nodeFs,
    link: async (existing, target) => {
      // A consumer links claim.1.json an instant before we do.
      if (String(target).endsWith('/claim.1.json')) await nodeFs.writeFile(target, encodeRecord('claim', rival), { mode: 0o600 });
      return nodeFs.link(existing, target);
    },
  };
  const result = await cancel(await withSeam(base.root, fs), id);
  assert.equal([result.next, result.receipt], ['claimed-elsewhere', null]);
  assert.equal(await entries(base.paths.job(id)), ['cancel.json', 'claim.1.json', 'spec.json']);
  assert.is((await read<ClaimRecord>(join(base.paths.job(id), 'claim.1.json'))).worker_id, 'c0ffee0123456789', "the consumer's claim stands");
  assert.equal(await dotFiles(base.paths.job(id)), []);
});

cancelling('an unknown job is NOT_FOUND; a malformed id is INVALID_ID', async () => {
  const queue = await freshQueue();
  await rejectsWith(cancel(queue, '1764476044123456789-3fa2c1d09b8e7f64'), 'NOT_FOUND');
  await rejectsWith(cancel(queue, '../../etc'), 'INVALID_ID');
});

cancelling.run();
