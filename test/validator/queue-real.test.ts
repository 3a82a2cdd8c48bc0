/**
 * fsjob validate QUEUE on what the real producer (src/producer) and consumer
 * (src/consumer) leave on disk: a queue they ran audits clean (exit 0, no
 * error, no warning) whatever the outcomes; an owner that died is reported as
 * an orphan (a warning), and once `recover` has run the queue is clean again.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { enqueue as produce, cancel, type JobRequest } from '../../src/producer/index.ts';
import { Worker, recover } from '../../src/consumer/index.ts';
import { main } from '../../src/cli/main.ts';
import type { Queue } from '../../src/model/queue.ts';
import type { QueueAudit } from '../../src/validator/queue.ts';
import { cleanupAll } from '../support/helpers.ts';
import { audit, claim, deadIdentity, killChildren, newQueue } from '../support/validate-queue.ts';

function problems(result: QueueAudit): string[] {
  return result.findings.filter((finding) => finding.severity !== 'info').map((finding) => `${finding.severity} ${finding.code} [${finding.clause}] ${finding.path}: ${finding.message}`);
}

async function drain(queue: Queue): Promise<void> {
  const worker = new Worker({ queues: [queue], mode: 'drain', concurrency: 2, pollMs: 100 });
  worker.handle('double', (ctx) => ({ doubled: Number((ctx.payload as { n: number }).n) * 2 }));
  worker.handle('fail', () => {
    throw new Error('handler failed on purpose');
  });
  await worker.run();
}

const real = suite('queues left by the real producer and consumer');
real.after(async () => {
  await killChildren();
  await cleanupAll();
});

real('succeeded, failed after a retry, timed out, truncated, cancelled, expired, rejected, lane, dedupe, stdin and payload jobs, and a queued one: no error, no warning', async () => {
  const queue = await newQueue('real');
  const cwd = tmpdir();
  const requests: JobRequest[] = [
    { argv: ['sh', '-c', 'echo out; echo err >&2'] },
    { argv: ['sh', '-c', 'exit 3'], max_attempts: 2 },
    { argv: ['sleep', '5'], timeout_ms: 300, kill_grace_ms: 100 },
    { argv: ['sh', '-c', 'head -c 5000 /dev/zero'], max_output_bytes: 100 },
    { argv: ['cat'], stdin_text: 'through stdin\n' },
    { argv: ['true'], lane: 'deploy' },
    { argv: ['true'], lane: 'deploy', priority: 5 },
    { argv: ['true'], dedupe: 'nightly' },
    { argv: ['true'], cwd: join(queue.root, 'jobs') },
    { handler: 'double', payload: { n: 21 } },
    { handler: 'fail', payload: null },
    { argv: ['true'], queue_deadline_ms: 1 },
  ];
  for (const request of requests) await produce(queue, request, { cwd });
  const cancelled = await produce(queue, { argv: ['true'] }, { cwd });
  await cancel(queue, cancelled.id);
  await new Promise((resolve) => setTimeout(resolve, 20)); // the deadline of 1 ms passes
  await drain(queue);
  await produce(queue, { argv: ['true'], priority: -1 }, { cwd });
  const result = await audit(queue);
  assert.equal(problems(result), []);
  assert.is(result.jobs, requests.length + 2);
  let out = '';
  const status = await main(['validate', '--strict', queue.root], { stdout: (text) => void (out += text), stderr: (text) => void (out += text) });
  assert.is(status, 0, out);
});

real('an orphaned claim is a warning until recover breaks it; after recover the queue audits clean', async () => {
  const queue = await newQueue('recover');
  const { id } = await produce(queue, { argv: ['true'] }, { cwd: tmpdir() });
  await claim(queue, id, 1, { owner: await deadIdentity() });
  const before = await audit(queue);
  assert.equal(before.findings.map((finding) => [finding.code, finding.severity, finding.job_id]), [['ORPHANED_CLAIM', 'warning', id]]);
  await recover(queue);
  const after = await audit(queue);
  assert.equal(problems(after), []);
  await drain(queue);
  assert.equal(problems(await audit(queue)), []);
});

real.run();
