/**
 * Two enqueue refusals that must say what to do next, as data:
 * - a dedupe key held by a held job (or one blocked behind a held job):
 *   waiting for it never ends, so the error reports the holder's status
 *   (job_status held or blocked), not only its id;
 * - --lane-slots N with --preemptible: a preemptible job runs in slot 1
 *   only (PREEMPT-2), and the refusal cites that clause with the rejected
 *   member as its field, instead of a bare schema mismatch (REC-5).
 * Nothing of a refused job is written: jobs/ holds only what was there.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enqueue } from '../../src/producer/index.ts';
import { initQueue } from '../../src/model/queue.ts';
import { cleanupAll, freshDir, rejectsWith } from '../support/helpers.ts';
import { runFsjob } from '../support/cli.ts';
import { assertOutputSchema } from '../support/output-schemas.ts';

interface ErrorDoc {
  error: { code: string; exit_status: number; job_id?: string; job_status?: string; clause?: string; field?: string };
}

function errorOf(stdout: string): ErrorDoc['error'] {
  const doc = JSON.parse(stdout) as ErrorDoc;
  assertOutputSchema('error', doc);
  return doc.error;
}

const dedupe = suite('enqueue --dedupe refused for a held holder: the holder and its status');
dedupe.after(cleanupAll);

dedupe('a held holder: exit 3, DEDUPE_HELD naming the holder with job_status held; nothing written', async () => {
  const dir = await freshDir('fsjob-enqueue-refusals');
  const queue = await initQueue(join(dir, 'q'));
  const holder = await enqueue(queue, { argv: ['true'], hold: true, dedupe: 'nightly' });
  const run = await runFsjob(['enqueue', '-q', queue.root, '--json', '--dedupe', 'nightly', '--', 'true'], { cwd: dir });
  assert.is(run.status, 3, run.stderr);
  const error = errorOf(run.stdout);
  assert.equal([error.code, error.job_id, error.job_status, error.clause], ['DEDUPE_HELD', holder.id, 'held', 'DEDUPE-1']);
  assert.equal(readdirSync(queue.paths.dir('jobs')), [`${holder.id}.gated`]);
});

dedupe('through the library: blocked behind a held job, or queued, the holder status says which', async () => {
  const dir = await freshDir('fsjob-enqueue-refusals');
  const queue = await initQueue(join(dir, 'q'));
  const held = await enqueue(queue, { argv: ['true'], hold: true });
  const blocked = await enqueue(queue, { argv: ['true'], after: [{ job_id: held.id, when: 'succeeded' }], dedupe: 'behind' });
  const queued = await enqueue(queue, { argv: ['true'], dedupe: 'plain' });
  const behind = await rejectsWith(enqueue(queue, { argv: ['true'], dedupe: 'behind' }), 'DEDUPE_HELD', { clause: 'DEDUPE-1' });
  assert.equal([behind.jobId, behind.jobStatus], [blocked.id, 'blocked']);
  const plain = await rejectsWith(enqueue(queue, { argv: ['true'], dedupe: 'plain' }), 'DEDUPE_HELD', { clause: 'DEDUPE-1' });
  assert.equal([plain.jobId, plain.jobStatus], [queued.id, 'queued']);
});

dedupe.run();

const slots = suite('--lane-slots with --preemptible: refused, citing PREEMPT-2, the field on the error');
slots.after(cleanupAll);

slots('the CLI: exit 2, USAGE, clause PREEMPT-2, field /lane_slots; nothing written', async () => {
  const dir = await freshDir('fsjob-enqueue-refusals');
  const queue = await initQueue(join(dir, 'q'));
  const run = await runFsjob(['enqueue', '-q', queue.root, '--json', '--lane', 'render', '--lane-slots', '3', '--preemptible', '--', 'true'], { cwd: dir });
  assert.is(run.status, 2, run.stderr);
  const error = errorOf(run.stdout);
  assert.equal([error.code, error.clause, error.field], ['USAGE', 'PREEMPT-2', '/lane_slots']);
  assert.equal(readdirSync(queue.paths.dir('jobs')), []);
});

slots('a request (library or --request file): the same code, clause and field; lane_slots 1 with preemptible is accepted', async () => {
  const dir = await freshDir('fsjob-enqueue-refusals');
  const queue = await initQueue(join(dir, 'q'));
  const value = await rejectsWith(enqueue(queue, { argv: ['true'], lane: 'render', lane_slots: 2, preemptible: true }), 'USAGE', { clause: 'PREEMPT-2' });
  const bytes = await rejectsWith(enqueue(queue, Buffer.from('{"fsjob":"1.2","argv":["true"],"lane":"render","lane_slots":64,"preemptible":true}')), 'USAGE', { clause: 'PREEMPT-2' });
  assert.equal([value.field, bytes.field], ['/lane_slots', '/lane_slots']);
  const accepted = await enqueue(queue, { argv: ['true'], lane: 'render', lane_slots: 1, preemptible: true });
  assert.equal(readdirSync(queue.paths.dir('jobs')), [accepted.id]);
});

slots.run();
