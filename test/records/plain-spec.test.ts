/**
 * src/records/plain-spec.ts plainSpec: a spec it takes without the full
 * check (REC-5) is one the full check (the generated validator) finds
 * valid. Every spec of conformance/vectors/spec.json, mutations of the
 * common spec aimed at each guard (each guard of plainSpec has a mutation
 * here that only it turns away: without that guard the comparison fails),
 * and thousands of random combinations of them. It must also take the
 * specs a producer writes, or it saves nothing.
 */
import { readFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import '../../src/records/compiled.ts';
import { inspectRecord, type VectorFile } from '../../src/records/codec.ts';
import { plainSpec } from '../../src/records/plain-spec.ts';
import { schemaErrors } from '../../src/records/schemas.ts';
import { specRecord } from '../../conformance/runner/fixtures.ts';
import type { Identity } from '../../src/records/codec.ts';

const test = suite('records/plain-spec');

const PRODUCER = { host: 'vm', boot_id: '06bb2271-88ff-4a65-b1c7-075270ddc195', pid_ns: 'pid:[4026531836]', pid: 17884, start: '2274540', uid: 1000 };
const ID = '1796438421045000000-d1d59aa3fa26aeb7';
/** A payload job's spec as the producer writes it. */
const BASE = specRecord(ID, { handler: 'bench', payload: { i: 0 } }, PRODUCER as Identity, 1796438421045).spec as unknown as Record<string, unknown>;

let accepted = 0;
/** plainSpec never takes a spec the full check refuses. */
function compare(value: unknown, what: string): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const fast = plainSpec(value as Record<string, unknown>);
  if (!fast) return false;
  accepted++;
  const errors = schemaErrors('spec', value);
  assert.equal(errors, [], `${what}: plainSpec took a spec the schema refuses: ${JSON.stringify(errors.slice(0, 2))}`);
  return true;
}

const ABSENT = Symbol('absent');
const big = (bytes: number): string => 'a'.repeat(bytes);

/** Values for each member: ones the schema takes and, for each guard, one only that guard turns away. */
const MEMBER_VALUES: Record<string, unknown[]> = {
  fsjob: ['1.0', '1.1', '1.2', '1.3', '2.0', '1.01', 1, ABSENT],
  type: ['spec', 'claim', ABSENT],
  id: [ID, '1796438421045000000-D1D59AA3FA26AEB7', '179643842104500000-d1d59aa3fa26aeb7', 7, ABSENT],
  created_ms: [0, 1796438421045, Number.MAX_SAFE_INTEGER, -1, 2 ** 53, 1.5, '1', ABSENT],
  handler: ['bench', 'a'.repeat(64), 'a'.repeat(65), 'A', '', 7, ABSENT],
  payload: [null, 0, 'x', [1, { a: null }], { deep: { er: [] } }, ABSENT],
  cwd: ['/', '/home/ana', 'rel', '', '/a\u0000b', '/' + big(4095), '/' + big(4096), '/é' + big(4093), '/é' + big(4094), 5, ABSENT],
  env: [{}, { LANG: 'C' }, { FSJOB_X: 'a' }, { '1A': 'a' }, { A: 1 }, { A: { base64: 'gA==' } }, { A: 'a\u0000' }, { A: big(32_769) }, { A: 'é'.repeat(16_385) }, Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`V${i}`, ''])), [], null, ABSENT],
  stdin: [null, { bytes: 1, sha256: 'a'.repeat(64) }, { bytes: -1, sha256: 'a'.repeat(64) }, 'x', ABSENT],
  timeout_ms: [1, 604_800_000, 0, 604_800_001, 1.5, null, ABSENT],
  kill_grace_ms: [0, 300_000, -1, 300_001, ABSENT],
  queue_deadline_ms: [null, 1, 2_592_000_000, 0, 2_592_000_001, '1', ABSENT],
  max_attempts: [1, 100, 0, 101, null, ABSENT],
  retry_delay_ms: [0, 86_400_000, 86_400_001, -1, ABSENT],
  priority: [0, -1000, 1000, -1001, 1001, 0.5, ABSENT],
  lane: [null, 'site', '', 'a\u0001', 'a\u007f', big(256), big(257), 'é' + big(255), 5, ABSENT],
  dedupe: [null, 'k', '', 'a\u001f', big(257), false, ABSENT],
  preemptible: [false, true, 0, null, 'true', ABSENT],
  max_output_bytes: [0, 67_108_864, 67_108_865, -1, ABSENT],
  labels: [{}, { team: 'web' }, { Team: 'web' }, { team: 1 }, { team: big(257) }, { team: 'é'.repeat(129) }, Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`l${i}`, ''])), 'x', ABSENT],
  producer: [
    PRODUCER,
    { ...PRODUCER, 'x-note': 1 },
    { ...PRODUCER, foo: 1 },
    { ...PRODUCER, host: '' },
    { ...PRODUCER, host: 'a\u0001' },
    { ...PRODUCER, host: big(256) },
    { ...PRODUCER, boot_id: big(129) },
    { ...PRODUCER, pid_ns: 'a\u0000' },
    { ...PRODUCER, start: 5 },
    { ...PRODUCER, pid: 0 },
    { ...PRODUCER, pid: 4_194_305 },
    { ...PRODUCER, uid: -1 },
    { ...PRODUCER, uid: 4_294_967_295 },
    { host: 'vm', boot_id: 'b', pid_ns: 'p', start: 's', uid: 0, 'x-pid': 1 },
    null,
    ABSENT,
  ],
  output_keep: [ABSENT, 'head', 'tail', 'head_tail', 'middle', null],
  not_before_ms: [ABSENT, null, 0, Number.MAX_SAFE_INTEGER, -1, 2 ** 53, 0.5],
  argv: [ABSENT, ['true']],
  lane_slots: [ABSENT, 1, 2],
  hold: [ABSENT, false, true],
  after: [ABSENT, []],
  'x-note': [ABSENT, 1],
  bogus: [ABSENT, 1],
};

function withMember(base: Record<string, unknown>, name: string, value: unknown): Record<string, unknown> {
  const copy = { ...base };
  if (value === ABSENT) delete copy[name];
  else copy[name] = value;
  return copy;
}

test('the spec a producer writes is taken', () => {
  assert.ok(plainSpec(BASE));
  assert.ok(plainSpec({ ...BASE, queue_deadline_ms: 60_000, lane: 'site', dedupe: 'k', labels: { team: 'web' }, env: { LANG: 'C' }, output_keep: 'tail', not_before_ms: null }));
  // Read back through inspectRecord, the consumer's road: valid, the same value.
  const read = inspectRecord('spec', Buffer.from(`${JSON.stringify(BASE)}\n`), { expectedJobId: ID });
  assert.ok(read.ok);
  assert.equal(read.ok ? read.value : undefined, JSON.parse(JSON.stringify(BASE)));
});

test('every spec vector', () => {
  const file = JSON.parse(readFileSync(new URL('../../conformance/vectors/spec.json', import.meta.url), 'utf8')) as VectorFile;
  let taken = 0;
  for (const vector of file.tests) if (vector.data !== undefined && compare(vector.data, vector.description)) taken++;
  assert.ok(taken > 0, 'some payload spec vector is taken');
});

test('each member mutated alone, and one member put in place of another', () => {
  for (const [name, values] of Object.entries(MEMBER_VALUES)) {
    for (const value of values) {
      compare(withMember(BASE, name, value), `${name} = ${String(value).slice(0, 40)}`);
      // The same count of members: a required member dropped, another added (a guard that counts must still see it).
      for (const other of ['payload', 'stdin', 'lane', 'handler', 'producer']) {
        if (other !== name && value !== ABSENT) compare(withMember(withMember(BASE, other, ABSENT), name, value), `${name} in place of ${other}`);
      }
    }
  }
});

test('thousands of random combinations', () => {
  let seed = 24;
  const next = (n: number): number => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed % n;
  };
  const names = Object.keys(MEMBER_VALUES);
  const before = accepted;
  for (let round = 0; round < 5000; round++) {
    let value = BASE;
    const changes = 1 + next(3);
    for (let i = 0; i < changes; i++) {
      const name = names[next(names.length)] as string;
      const values = MEMBER_VALUES[name] as unknown[];
      value = withMember(value, name, values[next(values.length)]);
    }
    compare(value, `round ${round}`);
  }
  assert.ok(accepted - before > 500, `only ${accepted - before} of 5000 combinations taken: the check takes too little to be tested`);
});

test.run();
