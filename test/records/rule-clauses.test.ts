/**
 * The clause a schema rule's finding cites (src/records/schemas.ts picks the
 * innermost if/then rule of the failing keyword, and the schemas describe
 * each rule with its clause): lane_slots above 1 on a preemptible job is
 * PREEMPT-2 at /lane_slots, in a request (`fsjob validate --type request`,
 * as `fsjob enqueue` refuses it) and in a spec record; the outer rule's
 * other failure, lane_slots without a lane, stays LANE-5.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { checkRecord, type ValidateReport, type VectorFile } from '../../src/records/codec.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { fsjobCli } from '../support/faults.ts';

const VECTORS = new URL('../../conformance/vectors/', import.meta.url);

/** clause, field and severity of each finding, for one assertion. */
function cited(bytes: string, type: 'request' | 'spec'): string[] {
  return checkRecord(type, Buffer.from(bytes)).map((finding) => `${finding.severity} ${finding.code} ${finding.clause} ${finding.field ?? '-'}`);
}

const request = (members: object): string => `${JSON.stringify({ fsjob: '1.2', argv: ['make', 'deploy'], ...members })}\n`;

/** A valid 1.2 command spec from the vectors, with `members` over it. */
function spec(members: object): string {
  const file = JSON.parse(readFileSync(new URL('spec.json', VECTORS), 'utf8')) as VectorFile;
  const base = file.tests.find((test) => test.valid && typeof test.data === 'object' && test.data !== null && 'argv' in test.data);
  assert.ok(base !== undefined, 'conformance/vectors/spec.json has a valid command spec');
  return `${JSON.stringify({ ...(base.data as object), fsjob: '1.2', ...members })}\n`;
}

const slots = suite('lane_slots and preemptible (LANE-5, PREEMPT-2)');
slots.after(cleanupAll);

slots('a request with lane_slots 2 and preemptible true is RECORD_SCHEMA citing PREEMPT-2 at /lane_slots', () => {
  assert.equal(cited(request({ lane: 'render', lane_slots: 2, preemptible: true }), 'request'), ['error RECORD_SCHEMA PREEMPT-2 /lane_slots']);
});

slots('a spec record with lane_slots 2 and preemptible true cites PREEMPT-2 at /lane_slots', () => {
  assert.equal(cited(spec({ lane: 'render', lane_slots: 2, preemptible: true }), 'spec'), ['error RECORD_SCHEMA PREEMPT-2 /lane_slots']);
});

slots('the other verdicts of the rule stand: lane_slots without a lane is LANE-5; slots 1 preemptible, or 2 not, are valid', () => {
  assert.equal(cited(request({ lane_slots: 2 }), 'request'), ['error RECORD_SCHEMA LANE-5 /lane']);
  assert.equal(cited(request({ lane: 'render', lane_slots: 1, preemptible: true }), 'request'), []);
  assert.equal(cited(request({ lane: 'render', lane_slots: 2, preemptible: false }), 'request'), []);
  assert.equal(cited(spec({ lane: 'render', lane_slots: 2, preemptible: false }), 'spec'), []);
});

slots('fsjob validate --type request names PREEMPT-2 and /lane_slots, as fsjob enqueue does', async () => {
  const dir = await freshDir('fsjob-rule-clauses');
  const path = join(dir, 'request.json');
  await writeFile(path, request({ lane: 'render', lane_slots: 2, preemptible: true }));
  const run = fsjobCli(['validate', '--type', 'request', path, '--json']);
  assert.is(run.status, 1, `${run.stdout}${run.stderr}`);
  const report = JSON.parse(run.stdout) as ValidateReport;
  assert.equal(report.findings.map((finding) => [finding.code, finding.clause, finding.field]), [['RECORD_SCHEMA', 'PREEMPT-2', '/lane_slots']]);
  const human = fsjobCli(['validate', '--type', 'request', path]);
  assert.match(human.stdout, `RECORD_SCHEMA [PREEMPT-2] ${path} /lane_slots`);
});

slots.run();
