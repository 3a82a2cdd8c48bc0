/**
 * A job scan posted from a scan worker thread (src/validator/posted-scan.ts):
 * a clean finished job travels as one string and comes back whole; every
 * other scan travels as it is; and an audit whose jobs the workers scanned
 * judges dependencies by the outcomes they posted, as the inline audit does.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { compactScan, expandScan } from '../../src/validator/posted-scan.ts';
import type { JobScan } from '../../src/validator/job-scan.ts';
import { makeFinding } from '../../src/records/findings.ts';
import { cleanupAll, withWatchdog } from '../support/helpers.ts';
import { audit, claim, codes, enqueue, exec, expectFinding, newQueue, receipt } from '../support/validate-queue.ts';

const ID = '1796369871692074894-00005b090001248e';

const posted = suite('a job scan posted between threads');
posted.after(cleanupAll);

posted('a clean finished job is posted as "<outcome>/<files>" and comes back equal', () => {
  const scan: JobScan = { summary: { id: ID, finished: true, outcome: 'failed' }, findings: { list: [], files: 7 } };
  const wire = compactScan(scan);
  assert.is(wire, 'failed/7');
  assert.equal(expandScan(wire, ID), scan);
});

posted('a scan with findings, an unfinished, gated or unreadable job, or one without an outcome travels whole', () => {
  const finding = makeFinding('RECEIPT_ATTEMPTS', 'x', { path: 'q/jobs/x/receipt.json', jobId: ID });
  const whole: JobScan[] = [
    { summary: { id: ID, finished: true, outcome: 'succeeded' }, findings: { list: [finding], files: 7 } },
    { summary: { id: ID, finished: false }, findings: { list: [], files: 2 } },
    { summary: { id: ID, finished: true, outcome: 'succeeded', gated: true }, findings: { list: [], files: 7 } },
    { summary: { id: ID, finished: false, unreadable: true }, findings: { list: [], files: 1 } },
    { summary: { id: ID, finished: true }, findings: { list: [], files: 7 } },
  ];
  for (const scan of whole) {
    assert.is(compactScan(scan), scan);
    assert.is(expandScan(scan, ID), scan);
  }
  assert.is(compactScan(undefined), null, 'a job that vanished');
  assert.is(expandScan(null, ID), null);
});

posted('dependencies are judged by the outcome a worker posted: a failed one leaves an open job AFTER_UNSATISFIED, as inline', async () => {
  const queue = await newQueue();
  const { id: failed } = await enqueue(queue);
  await claim(queue, failed, 1);
  await exec(queue, failed, 1, { stdout: 'x\n' });
  await receipt(queue, failed, 1, { outcome: 'failed' });
  const doomed = (await enqueue(queue, { after: [{ job_id: failed, when: 'succeeded' }] }, { gated: false })).id;
  const inline = await audit(queue, { threads: 1 });
  expectFinding(inline, 'AFTER_UNSATISFIED', { path: queue.paths.job(doomed), clause: 'AFTER-3', jobId: doomed, severity: 'error', field: '/after' });
  // The workers alone scan every job: the failed dependency's scan crosses the thread boundary.
  const threaded = await withWatchdog(30_000, audit(queue, { threads: 2, mainThreadScans: false, threadBatch: 1 }));
  assert.equal(codes(threaded), codes(inline));
  assert.equal(threaded, inline);
});

posted.run();
