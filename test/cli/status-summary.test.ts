/**
 * `fsjob status` on a queue over EXACT_COUNT_MAX jobs (issue 16: a summary
 * in under a second at 100,000 jobs): the counts at the top are the ready
 * index's, from the listings of jobs/ and ready/ alone, unless --exact
 * counts every job by status and outcome. Timing is bench/backlog.bench.ts's
 * business; this test checks what each mode says, on a real queue whose job
 * directories are written straight (no fsync: the test is about reading).
 */
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { EXACT_COUNT_MAX } from '../../src/cli/commands/status-options.ts';
import { readyEntryName } from '../../src/model/layout.ts';
import { listJobs } from '../../src/producer/index.ts';
import { newJobId } from '../../src/producer/id.ts';
import { encodeRecord } from '../../src/records/codec.ts';
import { SCHEMA_BASE } from '../../src/records/schemas.ts';
import { createAjv } from '../../tools/gen/schema-compiler.ts';
import { SCHEMAS_DIR } from '../../tools/gen/schema-files.ts';
import { deadOwner, receiptRecord } from '../../conformance/runner/fixtures.ts';
import { runFsjob } from '../support/cli.ts';
import { buildSpec, freshQueue } from '../support/enqueue.ts';
import { cleanupAll } from '../support/helpers.ts';

const FINISHED = 501;
const UNFINISHED = EXACT_COUNT_MAX + 1 - FINISHED;

const summary = suite('fsjob status: the ready index sums up a big queue, --exact counts it');
summary.after(cleanupAll);

summary(`over ${EXACT_COUNT_MAX} jobs: unfinished and finished from the listings; --exact: every status and outcome; --json says which`, async () => {
  const queue = await freshQueue('status-summary');
  const dead = await deadOwner();
  const template = await buildSpec(newJobId(), { argv: ['true'] });
  // Oldest first (ids sort by creation): the finished ones, then the waiting ones with their ready entries.
  for (let i = 0; i < FINISHED + UNFINISHED; i++) {
    const id = newJobId();
    const dir = queue.paths.job(id);
    mkdirSync(dir, { mode: 0o700 });
    writeFileSync(join(dir, 'spec.json'), encodeRecord('spec', { ...template, id }, { expectedJobId: id }), { mode: 0o600 });
    if (i < FINISHED) {
      const receipt = receiptRecord(id, 1, dead, { outcome: 'cancelled', exit_code: 130, attempts: 0, status: null, started_ms: null, stdout: null, stderr: null });
      writeFileSync(join(dir, 'receipt.json'), encodeRecord('receipt', receipt, { expectedJobId: id }), { mode: 0o600 });
    } else writeFileSync(join(queue.paths.dir('ready'), readyEntryName(template.priority, id)), '', { mode: 0o600 });
  }
  // A stale entry without a job (READY-3) counts for nothing.
  writeFileSync(join(queue.paths.dir('ready'), readyEntryName(0, newJobId())), '', { mode: 0o600 });
  assert.is(readdirSync(queue.paths.dir('jobs')).length, EXACT_COUNT_MAX + 1);

  const q = ['--queue', queue.root];
  const options = { cwd: queue.root };
  const [plain, exact, json, exactJson] = await Promise.all([
    runFsjob(['status', ...q], options),
    runFsjob(['status', ...q, '--exact'], options),
    runFsjob(['status', ...q, '--json'], options),
    runFsjob(['status', ...q, '--exact', '--json'], options),
  ]);
  for (const run of [plain, exact, json, exactJson]) assert.is(run.status, 0, run.stderr);
  const total = EXACT_COUNT_MAX + 1;
  assert.is(plain.stdout.split('\n')[0], `${total} jobs: ${UNFINISHED} unfinished, ${FINISHED} finished, by the ready index (over ${EXACT_COUNT_MAX} jobs; --exact counts every status and outcome, one look at each job)`);
  assert.match(plain.stdout, /showing the newest 20 jobs/, 'the table still shows the newest jobs, each examined');
  assert.is(exact.stdout.split('\n')[0], `${total} jobs: ${UNFINISHED} queued, ${FINISHED} finished (${FINISHED} cancelled)`);

  const ajv = createAjv();
  for (const file of readdirSync(join(SCHEMAS_DIR, 'output'))) ajv.addSchema(JSON.parse(readFileSync(join(SCHEMAS_DIR, 'output', file), 'utf8')) as object);
  const validate = ajv.getSchema(`${SCHEMA_BASE}output/status.schema.json`);
  if (validate === undefined) throw new Error('no status output schema');
  const indexed = JSON.parse(json.stdout) as { counts: unknown; index: unknown; total: number };
  const counted = JSON.parse(exactJson.stdout) as { counts: { statuses: Record<string, number>; outcomes: Record<string, number> }; index: unknown };
  for (const value of [indexed, counted]) assert.ok(validate(value), JSON.stringify(validate.errors?.slice(0, 3)));
  assert.is(indexed.counts, null);
  assert.equal(indexed.index, { unfinished: UNFINISHED, finished: FINISHED });
  assert.equal(counted.counts, { statuses: { queued: UNFINISHED, finished: FINISHED }, outcomes: { cancelled: FINISHED } });
  assert.equal(counted.index, indexed.index);

  // The library: a number as `counts` is the most jobs it counts.
  const list = await listJobs(queue, { limit: 1, counts: EXACT_COUNT_MAX });
  assert.is(list.counts, undefined);
  assert.equal(list.index, { unfinished: UNFINISHED, finished: FINISHED });
  assert.is(list.jobs.length, 1);
});

summary.run();
