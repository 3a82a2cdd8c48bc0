/**
 * The audit's fast accept of a record (src/validator/fast-record.ts) never
 * changes a verdict: what the audit answers (the fast accept, else
 * inspectRecord) equals inspectRecord's answer, findings included, on every
 * conformance vector under names that match and names that do not, and on
 * thousands of damaged records of every type (bytes and members changed).
 * It must also take the common road: most valid records are accepted fast.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import '../../src/records/compiled.ts';
import { inspectRecord, type RecordExpectations, type RecordType, type VectorFile } from '../../src/records/codec.ts';
import { fastParseRecordBytes } from '../../src/records/fast-json.ts';
import { acceptRecord } from '../../src/validator/fast-record.ts';
import { mutateBytes, seededRandom, vectorCaseBytes } from '../support/mutations.ts';

const VECTORS = new URL('../../conformance/vectors/', import.meta.url);

interface Sample {
  type: RecordType;
  bytes: Buffer;
}

function vectorSamples(): Sample[] {
  const samples: Sample[] = [];
  for (const name of readdirSync(VECTORS).filter((file) => file.endsWith('.json'))) {
    const file = JSON.parse(readFileSync(new URL(name, VECTORS), 'utf8')) as VectorFile;
    if (file.record_type === 'request') continue;
    for (const test of file.tests) samples.push({ type: file.record_type, bytes: vectorCaseBytes(test) });
  }
  return samples;
}

/** Name expectations to check a record under: none, the ones its members meet, and ones they do not. */
function expectationsFor(bytes: Buffer): RecordExpectations[] {
  let value: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(bytes.toString('utf8'));
    if (typeof parsed === 'object' && parsed !== null) value = parsed as Record<string, unknown>;
  } catch {
    // not JSON: the expectations below still apply
  }
  const id = typeof value['job_id'] === 'string' ? value['job_id'] : typeof value['id'] === 'string' ? value['id'] : '1764476044123456789-3fa2c1d09b8e7f64';
  const gen = typeof value['gen'] === 'number' ? value['gen'] : 1;
  return [
    {},
    { expectedJobId: id },
    { expectedJobId: id, expectedGen: gen },
    { expectedJobId: id, expectedGen: gen + 1 },
    { expectedJobId: '1764476044123456789-0000000000000000' },
    { expectedJobId: id, expectedForce: value['force'] === true },
    { expectedJobId: id, expectedForce: value['force'] !== true },
    { expectedKind: value['kind'] === 'lane' ? 'lane' : 'dedupe' },
    { expectedWorkerId: typeof value['worker_id'] === 'string' ? value['worker_id'] : '0123456789abcdef' },
  ];
}

let accepted = 0;
let checked = 0;

/** The audit's answer (fast accept, else the full inspection) equals the full inspection's, findings and value alike. */
function same(sample: Sample, expect: RecordExpectations, label: string): void {
  const options = { ...expect, path: 'jobs/x/record.json', parse: fastParseRecordBytes };
  const full = inspectRecord(sample.type, sample.bytes, options);
  const fast = acceptRecord(sample.type, sample.bytes, expect);
  checked += 1;
  if (fast === undefined) return;
  accepted += 1;
  assert.equal({ ok: true, value: fast, findings: [] }, full, `${label}: accepted fast, so inspectRecord finds nothing either`);
}

const verdicts = suite('the fast accept of a record answers as inspectRecord does');

verdicts('on every conformance vector, under matching and mismatching names', () => {
  accepted = 0;
  checked = 0;
  const samples = vectorSamples();
  for (const [index, sample] of samples.entries()) {
    for (const expect of expectationsFor(sample.bytes)) same(sample, expect, `vector ${index} (${sample.type}) ${JSON.stringify(expect)}`);
    // Under every other type's name too (REC-3).
    for (const type of ['spec', 'claim', 'exec', 'receipt'] as const) if (type !== sample.type) same({ type, bytes: sample.bytes }, {}, `vector ${index} as ${type}`);
  }
  assert.ok(samples.length > 300, `${samples.length} vectors`);
  assert.ok(accepted > 100, `the fast road is taken: ${accepted} of ${checked} accepted fast`);
});

verdicts('on 6000 damaged records of every type: bytes changed, members changed, dropped, added, versions and types swapped', () => {
  accepted = 0;
  checked = 0;
  const random = seededRandom(0x0fa5_7ec0);
  const valid = vectorSamples().filter((sample) => inspectRecord(sample.type, sample.bytes).ok);
  const replacements: unknown[] = [null, 0, -1, 1.5, 2 ** 53, '', 'x', '1.2', '2.0', '1.3', '1.02', true, false, [], {}, 'spec', 'claim', '1764476044123456789-3fa2c1d09b8e7f64', 'a'.repeat(300)];
  let rejected = 0;
  for (let i = 0; i < 6000; i++) {
    const base = valid[random(valid.length)] as Sample;
    let bytes: Buffer;
    if (i % 2 === 0) {
      // A member changed, dropped or added, at the top or one level down; written in compact form, so the fast road sees it.
      const value = JSON.parse(base.bytes.toString('utf8')) as Record<string, unknown>;
      let target: Record<string, unknown> = value;
      const nested = Object.keys(value).filter((key) => typeof value[key] === 'object' && value[key] !== null && !Array.isArray(value[key]));
      if (nested.length > 0 && random(3) === 0) target = value[nested[random(nested.length)] as string] as Record<string, unknown>;
      const keys = Object.keys(target);
      const key = keys.length > 0 && random(4) !== 0 ? (keys[random(keys.length)] as string) : `extra_${random(3)}`;
      if (random(4) === 0) delete target[key];
      else target[key] = replacements[random(replacements.length)];
      bytes = Buffer.from(`${JSON.stringify(value)}\n`);
    } else {
      bytes = mutateBytes(base.bytes, random);
    }
    const sample = { type: base.type, bytes };
    if (!inspectRecord(sample.type, bytes).ok) rejected += 1;
    const expects = expectationsFor(bytes);
    // Half under a name the record meets (the first three), half under any.
    same(sample, expects[random(i % 4 < 2 ? 3 : expects.length)] as RecordExpectations, `damage ${i} (${base.type}): ${JSON.stringify(bytes.toString('latin1'))}`);
  }
  assert.ok(rejected > 1000, `the damage is real: ${rejected} of 6000 rejected`);
  assert.ok(accepted > 300, `the fast road is taken: ${accepted} of ${checked} accepted fast`);
});

verdicts.run();
