/**
 * src/records/codec.ts encodeBuilt: a record a writer built is written
 * without its whole schema run; only the identity it took from the
 * operating system is checked, the first time it comes (checkIdentity,
 * schemas.ts memberFindings). That check must say of an identity what the
 * record's whole schema says of the member that holds it (REC-8, VER-2).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { checkRecord, FROM_OUTSIDE, serializeRecord, type ClaimRecord, type RecordType, type SpecRecord, type VectorFile } from '../../src/records/codec.ts';
import { parsePayloadText } from '../../src/records/json.ts';
import { serializeBuilt } from '../../src/records/json-write.ts';
import { FsjobError } from '../../src/base/errors.ts';
import { memberFindings } from '../../src/records/schemas.ts';
import type { Identity } from '../../src/records/codec.ts';
import { specRecord } from '../../conformance/runner/fixtures.ts';

const GOOD = { host: 'vm', boot_id: '06bb2271-88ff-4a65-b1c7-075270ddc195', pid_ns: 'pid:[4026531836]', pid: 17884, start: '2274540', uid: 0 };

/** A valid spec record (conformance's fixture) with `producer` as its producer. */
function spec(producer: unknown): SpecRecord {
  return specRecord('1796438421045000000-d1d59aa3fa26aeb7', { handler: 'bench', payload: { i: 0 } }, producer as Identity, 1796438421045).spec;
}

const IDENTITIES: [string, unknown][] = [
  ['valid', GOOD],
  ['an extension member', { ...GOOD, 'x-note': [1] }],
  ['uid at its bound', { ...GOOD, uid: 4294967294 }],
  ['uid -1', { ...GOOD, uid: -1 }],
  ['uid (uid_t)-1', { ...GOOD, uid: 4294967295 }],
  ['an empty host', { ...GOOD, host: '' }],
  ['a control character in host', { ...GOOD, host: 'a\u0001' }],
  ['a host of 256 bytes', { ...GOOD, host: 'h'.repeat(256) }],
  ['no boot_id', { host: 'vm', pid_ns: 'x', pid: 1, start: '1', uid: 0 }],
  ['pid as text', { ...GOOD, pid: '1' }],
  ['pid 0', { ...GOOD, pid: 0 }],
  ['start as a number', { ...GOOD, start: 5 }],
  ['an unknown member (VER-2)', { ...GOOD, foo: 1 }],
  ['33 members', { ...GOOD, ...Object.fromEntries(Array.from({ length: 27 }, (_, i) => [`x-${i}`, i])) }],
  ['not an object', 'vm'],
];

const identity = suite('encodeBuilt checks an identity as the whole schema would (REC-8, VER-2)');

function claim(owner: unknown): ClaimRecord {
  return { fsjob: '1.2', type: 'claim', job_id: '1796438421045000000-d1d59aa3fa26aeb7', gen: 1, owner, worker_id: null, claimed_ms: 1796438421045, lease_ms: 30000 } as ClaimRecord;
}

identity("memberFindings says of each identity what the record's whole schema says of the member holding it (a spec's producer, a claim's owner)", () => {
  let invalid = 0;
  for (const [type, member, make] of [['spec', 'producer', spec], ['claim', 'owner', claim]] as const) {
    for (const [what, value] of IDENTITIES) {
      const whole = checkRecord(type, serializeRecord(make(value))).filter((finding) => finding.severity === 'error');
      const part = memberFindings(type, member, value, { path: '-', jobId: null }).filter((finding) => finding.severity === 'error');
      assert.is(part.length === 0, whole.length === 0, `${type} ${what}: ${JSON.stringify(whole.map((f) => f.message))} vs ${JSON.stringify(part.map((f) => f.message))}`);
      if (whole.length > 0) {
        invalid++;
        assert.ok(whole.every((finding) => finding.field?.startsWith(`/${member}`)), `${type} ${what}: the whole check faults the ${member} alone`);
        assert.equal([...new Set(part.map((f) => f.field))].sort(), [...new Set(whole.map((f) => f.field))].sort(), `${type} ${what}: the same members`);
      }
    }
  }
  assert.ok(invalid >= 20, `${invalid} invalid identities`);
});

identity('without FSJOB_CHECK_WRITES, encodeBuilt refuses a bad identity naming its member, and writes a good one as serializeRecord does', () => {
  const codec = new URL('../../src/records/codec.ts', import.meta.url).pathname;
  const script = `
    const { encodeBuilt, serializeRecord } = await import(${JSON.stringify(codec)});
    const spec = JSON.parse(process.argv[1]);
    const out = {};
    out.good = encodeBuilt('spec', spec, {}, spec.producer).equals(serializeRecord(spec));
    const bad = { ...spec, producer: { ...spec.producer, uid: -1 } };
    try { encodeBuilt('spec', bad, {}, bad.producer); out.bad = 'written'; } catch (error) { out.bad = error.code + ' ' + error.message; }
    process.stdout.write(JSON.stringify(out));`;
  const run = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, JSON.stringify(spec(GOOD))], {
    env: { ...process.env, FSJOB_CHECK_WRITES: '0' },
    encoding: 'utf8',
  });
  const out = JSON.parse(run) as { good: boolean; bad: string };
  assert.is(out.good, true);
  assert.match(out.bad, /^INVALID_RECORD refusing to write an invalid spec record: .*\/producer\/uid/);
});

const GROUP = { pgid: 17884, start: '2274540', boot_id: GOOD.boot_id, pid_ns: GOOD.pid_ns };

identity("where the compiled validators are loaded (a consumer), an exec record's group is judged as the whole schema judges it, and a bad one refused with the member's finding and clause", () => {
  const groups: [string, unknown][] = [
    ['valid', GROUP],
    ['an extension member', { ...GROUP, 'x-note': [1] }],
    ['pgid 0', { ...GROUP, pgid: 0 }],
    ['pgid past PID_MAX_LIMIT', { ...GROUP, pgid: 4194305 }],
    ['pgid as text', { ...GROUP, pgid: '5' }],
    ['an empty start', { ...GROUP, start: '' }],
    ['a control character in boot_id', { ...GROUP, boot_id: 'a\u0001' }],
    ['a pid_ns of 129 bytes', { ...GROUP, pid_ns: 'p'.repeat(129) }],
    ['no pid_ns', { pgid: 1, start: '1', boot_id: 'b' }],
    ['an unknown member (VER-2)', { ...GROUP, host: 'vm' }],
    ['33 members', { ...GROUP, ...Object.fromEntries(Array.from({ length: 29 }, (_, i) => [`x-${i}`, i])) }],
    ['an array', [1]],
  ];
  const exec = (group: unknown): Record<string, unknown> => ({ fsjob: '1.2', type: 'exec', job_id: '1796438421045000000-d1d59aa3fa26aeb7', gen: 1, attempt: 1, group, recorded_ms: 1796438421045 });
  const records = new URL('../../src/records/', import.meta.url).pathname;
  const script = `
    await import(${JSON.stringify(`${records}compiled.ts`)});
    const { encodeBuilt } = await import(${JSON.stringify(`${records}codec.ts`)});
    const out = JSON.parse(process.argv[1]).map((record) => {
      try { encodeBuilt('exec', record, { path: '/q/exec.1.json' }, record.group); return null; }
      catch (error) { return { code: error.code, clause: error.clause, path: error.path, message: error.message }; }
    });
    process.stdout.write(JSON.stringify(out));`;
  const run = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, JSON.stringify(groups.map(([, group]) => exec(group)))], {
    env: { ...process.env, FSJOB_CHECK_WRITES: '0' },
    encoding: 'utf8',
  });
  const out = JSON.parse(run) as ({ code: string; clause: string | undefined; path: string; message: string } | null)[];
  let refused = 0;
  groups.forEach(([what, group], i) => {
    const whole = checkRecord('exec', serializeRecord(exec(group))).filter((finding) => finding.severity === 'error');
    const first = memberFindings('exec', 'group', group, { path: '-', jobId: null }).find((finding) => finding.severity === 'error');
    const answer = out[i];
    assert.is(answer === null, whole.length === 0, `${what}: ${JSON.stringify(answer)} vs ${JSON.stringify(whole.map((f) => f.message))}`);
    if (answer === null || answer === undefined) return;
    refused++;
    assert.is(answer.code, 'INVALID_RECORD', what);
    assert.is(answer.path, '/q/exec.1.json', what);
    assert.is(answer.clause, first?.clause, `${what}: the member's clause`);
    assert.match(answer.message, /\/group/, `${what}: names the member`);
  });
  assert.is(refused, groups.length - 2);
  assert.ok(out.some((answer) => answer?.clause !== undefined), 'some refusal cites a clause');
});

identity.run();

const built = suite('encodeBuilt: only the members a consumer takes from outside are walked (serializeBuilt)');

/** serializeBuilt's answer, and serializeRecord's: bytes, or the refusal's code and message. */
function both(type: string, value: Record<string, unknown>): [unknown, unknown] {
  const answer = (write: () => Buffer): unknown => {
    try {
      return write().toString('utf8');
    } catch (error) {
      return error instanceof FsjobError ? `${error.code} ${error.message}` : String(error);
    }
  };
  return [answer(() => serializeBuilt(value, FROM_OUTSIDE[type as RecordType] ?? [])), answer(() => serializeRecord(value))];
}

built('every valid conformance record of the types it serves gives serializeRecord bytes', () => {
  let count = 0;
  for (const type of Object.keys(FROM_OUTSIDE)) {
    const file = JSON.parse(readFileSync(new URL(`../../conformance/vectors/${type}.json`, import.meta.url), 'utf8')) as VectorFile;
    for (const test of file.tests) {
      if (!test.valid || typeof test.data !== 'object' || test.data === null) continue;
      const [fast, full] = both(type, test.data as Record<string, unknown>);
      assert.is(fast, full, `${type}: ${test.description}`);
      count += 1;
    }
  }
  assert.ok(count > 40, `${count} records`);
});

built('what REC-1 forbids in a member from outside is refused alike (code, message, member path)', () => {
  const receipt = { fsjob: '1.2', type: 'receipt', job_id: '1796438421045000000-d1d59aa3fa26aeb7', gen: 1, outcome: 'succeeded', exit_code: 0, reason: null, message: null, attempts: 1, status: null, started_ms: 1, finished_ms: 2, stdout: null, stderr: null, result: null, by: GOOD };
  const deep = (n: number): unknown => (n === 0 ? 1 : [deep(n - 1)]);
  const values: [string, Record<string, unknown>][] = [
    ['a lone surrogate in message', { ...receipt, outcome: 'failed', exit_code: 1, message: 'x\uD800' }],
    ['a non-finite result', { ...receipt, result: { a: Number.NaN } }],
    ['a fraction in status', { ...receipt, status: { exit: 0.5, signal: null } }],
    ['undefined in a result array', { ...receipt, result: [1, undefined] }],
    ['a Map as result', { ...receipt, result: new Map() }],
    ['a result nested past NEST_MAX', { ...receipt, result: deep(200) }],
    ['a result over RECORD_MAX', { ...receipt, result: 'r'.repeat(300_000) }],
    ['a result kept as written', { ...receipt, result: parsePayloadText('{"a": 1.50}') }],
    ['a result with a lone surrogate in a member name', { ...receipt, result: { 'k\uDC00': 1 } }],
    ['two members at fault: the first in record order', { ...receipt, message: '\uD800', result: Number.POSITIVE_INFINITY }],
  ];
  for (const [label, value] of values) {
    const [fast, full] = both('receipt', value);
    assert.is(fast, full, label);
  }
  const exec = { fsjob: '1.2', type: 'exec', job_id: receipt.job_id, gen: 1, attempt: 1, group: { host: 'h\uD800', boot_id: GOOD.boot_id, pid_ns: GOOD.pid_ns, pgid: 5, start: '1' }, recorded_ms: 1 };
  assert.is(...both('exec', exec), 'a lone surrogate in a process group');
  const state = { fsjob: '1.2', type: 'state', job_id: receipt.job_id, gen: 1, heartbeat_ms: 1, phase: 'running', attempt: 1, stdout_bytes: 0, stderr_bytes: 0, progress: '\uDFFF' };
  assert.is(...both('state', state), 'a lone surrogate in progress');
});

built.run();
