import { chmod, chown, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { isFsjobError } from '../../src/base/errors.ts';
import { FINDING_CODES, type Finding, makeFinding } from '../../src/records/findings.ts';
import { type ClaimRecord, checkRecord, encodeRecord, inspectRecord, readRecord, recordNameOf, serializeRecord } from '../../src/records/codec.ts';
import { NOBODY, cleanupAll, freshDir, mkfifo, withWatchdog } from '../support/helpers.ts';

const JOB = '1764476044123456789-3fa2c1d09b8e7f64';
const identity = { host: 'h', boot_id: 'b', pid_ns: 'pid:[1]', pid: 1, start: '1', uid: 0 };
const claim: ClaimRecord = { fsjob: '1.0', type: 'claim', job_id: JOB, gen: 3, owner: identity, worker_id: null, claimed_ms: 1, lease_ms: 30000 };
const bytesOf = (value: unknown): Buffer => Buffer.from(`${JSON.stringify(value)}\n`);
const codes = (findings: Finding[]): string[] => findings.map((finding) => finding.code);

const order = suite('checkRecord applies REC-4 in order and stops at the first failure');

order('a valid record has no findings', () => {
  assert.equal(checkRecord('claim', bytesOf(claim)), []);
});

order('compact form before version: pretty-printed fsjob 2.0 is NOT_COMPACT', () => {
  assert.equal(codes(checkRecord('claim', Buffer.from(`${JSON.stringify({ ...claim, fsjob: '2.0' }, null, 1)}\n`))), ['RECORD_NOT_COMPACT']);
});

order('version before type and schema: fsjob 2.0 of another type with unknown members is VERSION only', () => {
  assert.equal(codes(checkRecord('claim', bytesOf({ fsjob: '2.0', type: 'spec', other: 1 }))), ['RECORD_VERSION']);
});

order('unsupported_version is distinct from a schema failure', () => {
  const [finding] = checkRecord('claim', bytesOf({ ...claim, fsjob: '3.1' }));
  assert.is(finding?.code, 'RECORD_VERSION');
  assert.is(finding?.clause, 'VER-1');
  assert.ok(finding?.message.includes('unsupported_version'));
});

order('type before schema: a spec stored as a claim is one TYPE_MISMATCH, not a list of schema errors', () => {
  assert.equal(codes(checkRecord('claim', bytesOf({ fsjob: '1.0', type: 'spec', id: JOB }))), ['RECORD_TYPE_MISMATCH']);
});

order('schema before name: a bad record under a mismatched name reports the schema only', () => {
  assert.equal(codes(checkRecord('claim', bytesOf({ ...claim, lease_ms: 1 }), { expectedGen: 4 })), ['RECORD_SCHEMA']);
});

order('schema findings list every failing member, each with its pointer', () => {
  const findings = checkRecord('claim', bytesOf({ ...claim, lease_ms: 1, gen: 0, surprise: true }));
  assert.equal(findings.map((finding) => [finding.code, finding.field]).sort(), [
    ['RECORD_SCHEMA', '/gen'],
    ['RECORD_SCHEMA', '/lease_ms'],
    ['RECORD_UNKNOWN_MEMBER', '/surprise'],
  ]);
});

order('a member a failing nested object defines is not reported as unknown', () => {
  assert.equal(codes(checkRecord('claim', bytesOf({ ...claim, owner: { ...identity, pid: 0 } }))), ['RECORD_SCHEMA']);
});

order('a rule failure cites the rule clause', () => {
  const [finding] = checkRecord('end', bytesOf({ fsjob: '1.0', type: 'end', job_id: JOB, gen: 1, reason: 'released', counted: true, retry_at_ms: 1, status: null, ended_ms: 1 }));
  assert.is(finding?.clause, 'RETRY-1');
  assert.is(finding?.field, '/counted');
});

order('name checks: job id, generation, force, kind, key and worker id', () => {
  assert.equal(codes(checkRecord('claim', bytesOf(claim), { expectedJobId: `${JOB.slice(0, -1)}5`, expectedGen: 4 })), ['RECORD_ID_MISMATCH', 'RECORD_GEN_MISMATCH']);
  const cancel = { fsjob: '1.0', type: 'cancel', job_id: JOB, force: false, requested_ms: 1, by: identity, reason: null };
  assert.equal(codes(checkRecord('cancel', bytesOf(cancel), { expectedForce: true })), ['RECORD_NAME_MISMATCH']);
});

order('a newer minor is valid with an info finding', () => {
  const findings = checkRecord('claim', bytesOf({ ...claim, fsjob: '1.3', later: 1 }));
  assert.equal(codes(findings), ['RECORD_NEWER_MINOR']);
  assert.is(findings[0]?.severity, 'info');
});

order('a record over RECORD_MAX is refused before it is parsed', () => {
  assert.equal(codes(checkRecord('claim', Buffer.alloc(1_048_577, 0x20))), ['RECORD_TOO_LARGE']);
});

order('findings carry the path given and the job id from the name, else from the record', () => {
  const [finding] = checkRecord('claim', bytesOf({ ...claim, gen: 0 }), { path: 'q/jobs/x/claim.1.json' });
  assert.is(finding?.path, 'q/jobs/x/claim.1.json');
  assert.is(finding?.job_id, JOB);
});

order('inspectRecord returns the typed value of a valid record', () => {
  const inspection = inspectRecord('claim', bytesOf(claim));
  assert.ok(inspection.ok);
  assert.is(inspection.value.lease_ms, 30000);
});

order.run();

const names = suite('recordNameOf');

names('job records and their expectations', () => {
  assert.equal(recordNameOf(`q/jobs/${JOB}/spec.json`), { type: 'spec', expectations: { expectedJobId: JOB } });
  assert.equal(recordNameOf(`q/jobs/${JOB}/claim.10000.json`), { type: 'claim', expectations: { expectedJobId: JOB, expectedGen: 10000 } });
  assert.equal(recordNameOf('exec.7.json'), { type: 'exec', expectations: { expectedGen: 7 } });
  assert.equal(recordNameOf(`jobs/${JOB}/state.1.json`)?.type, 'state');
  assert.equal(recordNameOf(`jobs/${JOB}/end.2.json`)?.type, 'end');
  assert.equal(recordNameOf(`jobs/${JOB}/receipt.json`)?.type, 'receipt');
  assert.equal(recordNameOf(`jobs/${JOB}/cancel.json`)?.expectations.expectedForce, false);
  assert.equal(recordNameOf(`jobs/${JOB}/cancel-force.json`)?.expectations.expectedForce, true);
  assert.equal(recordNameOf('/abs/q/fsjob.json'), { type: 'queue', expectations: {} });
});

names('generations outside 1..GEN_MAX or with leading zeros are not record names', () => {
  for (const gen of ['0', '01', '10001', '-1', '1.5', 'x', '']) assert.is(recordNameOf(`claim.${gen}.json`), undefined, gen);
});

names('workers and holds', () => {
  const h = 'a'.repeat(64);
  assert.equal(recordNameOf('q/workers/c0ffee0123456789.json'), { type: 'worker', expectations: { expectedWorkerId: 'c0ffee0123456789' } });
  assert.equal(recordNameOf(`q/lanes/${h}/1.json`), { type: 'hold', expectations: { expectedKind: 'lane', expectedKeyHash: h } });
  assert.equal(recordNameOf(`q/dedupe/${h}/9007199254740991.json`)?.expectations.expectedKind, 'dedupe');
  assert.is(recordNameOf(`q/dedupe/${h}/9007199254740992.json`), undefined);
  assert.is(recordNameOf(`q/dedupe/${h}/01.json`), undefined);
  assert.is(recordNameOf('q/dedupe/short/1.json'), undefined);
  assert.is(recordNameOf('q/workers/C0FFEE0123456789.json'), undefined);
});

names('other names are not records', () => {
  for (const name of ['stdout.1', '.claim.1.json.tmp', 'notes.json', 'spec.json.bak', 'q/jobs/']) assert.is(recordNameOf(name), undefined, name);
});

names.run();

const reading = suite('readRecord');

reading('reads and checks a record from disk, with expectations from the caller', async () => {
  const dir = await freshDir();
  const path = join(dir, 'claim.3.json');
  await writeFile(path, serializeRecord(claim), { mode: 0o600 });
  const inspection = await readRecord(path, 'claim', { expectedGen: 3 });
  assert.ok(inspection.ok);
  assert.is(inspection.value.gen, 3);
});

reading('refuses a symlink, a FIFO (at once), a file over RECORD_MAX, a group-writable and a foreign file, as findings naming path and clause', async () => {
  const dir = await freshDir();
  const real = join(dir, 'real.json');
  await writeFile(real, serializeRecord(claim), { mode: 0o600 });
  const link = join(dir, 'link.json');
  await symlink(real, link);
  const fifo = join(dir, 'fifo.json');
  mkfifo(fifo);
  const large = join(dir, 'large.json');
  await writeFile(large, Buffer.alloc(1_048_577, 0x20), { mode: 0o600 });
  const open = join(dir, 'open.json');
  await writeFile(open, serializeRecord(claim));
  await chmod(open, 0o664);
  const foreign = join(dir, 'foreign.json');
  await writeFile(foreign, serializeRecord(claim), { mode: 0o600 });
  const canChown = process.geteuid?.() === 0;
  if (canChown) await chown(foreign, NOBODY, NOBODY);

  const expected: [string, string, string][] = [
    [link, 'RECORD_SYMLINK', 'SEC-2'],
    [fifo, 'RECORD_NOT_REGULAR', 'SEC-3'],
    [large, 'RECORD_TOO_LARGE', 'SEC-4'],
    [open, 'RECORD_MODE', 'SEC-5'],
    ...(canChown ? [[foreign, 'RECORD_OWNER', 'SEC-6'] as [string, string, string]] : []),
  ];
  for (const [path, code, clause] of expected) {
    const inspection = await withWatchdog(5000, readRecord(path, 'claim'));
    assert.not.ok(inspection.ok, path);
    const [finding] = inspection.findings;
    assert.is(finding?.code, code);
    assert.is(finding?.clause, clause);
    assert.is(finding?.path, path);
    assert.ok(finding?.message.includes(path), finding?.message);
  }
});

reading('a missing file is NOT_FOUND, or undefined with allowMissing', async () => {
  const dir = await freshDir();
  const path = join(dir, 'receipt.json');
  assert.is(await readRecord(path, 'receipt', { allowMissing: true }), undefined);
  try {
    await readRecord(path, 'receipt');
    assert.unreachable('expected NOT_FOUND');
  } catch (error) {
    assert.ok(isFsjobError(error, 'NOT_FOUND'));
  }
});

reading.after(cleanupAll);
reading.run();

const writing = suite('encodeRecord');

writing('returns the compact bytes of a valid record', () => {
  assert.equal(encodeRecord('claim', claim), bytesOf(claim));
});

writing('refuses to write an invalid record (VER-4)', () => {
  try {
    encodeRecord('claim', { ...claim, lease_ms: 1 });
    assert.unreachable('expected INVALID_RECORD');
  } catch (error) {
    assert.ok(isFsjobError(error, 'INVALID_RECORD'));
    assert.is(error.clause, 'REC-5');
  }
});

writing.run();

const registry = suite('finding codes');

registry('every code has a severity, a clause and advice', () => {
  for (const [code, spec] of Object.entries(FINDING_CODES)) {
    assert.match(code, /^[A-Z][A-Z0-9_]{0,63}$/);
    assert.ok(['error', 'warning', 'info'].includes(spec.severity), code);
    assert.match(spec.clause, /^[A-Z]+-[0-9]+$/);
    assert.ok(spec.fix.length > 10, code);
  }
});

registry('a finding says what is wrong, then what to do', () => {
  const finding = makeFinding('RECORD_BOM', 'the file starts with a byte order mark', { path: 'x.json' });
  assert.equal(finding, {
    code: 'RECORD_BOM',
    severity: 'error',
    path: 'x.json',
    job_id: null,
    clause: 'REC-1',
    message: `the file starts with a byte order mark; ${FINDING_CODES.RECORD_BOM.fix}`,
  });
});

registry.run();

const robust = suite('checkRecord never throws for bad input');

robust('3000 random byte mutations of valid records each give findings, not exceptions', () => {
  let seed = 0x2f6b_1d3a;
  const random = (n: number): number => {
    // xorshift32: deterministic, so a failure reproduces.
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) % n;
  };
  const samples: [Parameters<typeof checkRecord>[0], Buffer][] = [
    ['claim', bytesOf(claim)],
    ['cancel', bytesOf({ fsjob: '1.0', type: 'cancel', job_id: JOB, force: false, requested_ms: 1, by: identity, reason: 'ré\n😀' })],
    ['request', Buffer.from('{ "handler": "h", "payload": {"a": [1.5, "x", null]}, "labels": {"k": "v"} }\n')],
  ];
  for (let i = 0; i < 3000; i++) {
    const [type, original] = samples[i % samples.length] ?? samples[0]!;
    const bytes = Buffer.from(original);
    const edits = 1 + random(3);
    let mutated: Buffer = bytes;
    for (let e = 0; e < edits; e++) {
      const at = random(mutated.length + 1);
      const kind = random(3);
      const byte = Buffer.from([random(256)]);
      if (kind === 0) mutated = Buffer.concat([mutated.subarray(0, at), byte, mutated.subarray(at)]);
      else if (kind === 1) mutated = Buffer.concat([mutated.subarray(0, at), mutated.subarray(at + 1)]);
      else if (at < mutated.length) mutated[at] = byte[0] ?? 0;
    }
    const findings = checkRecord(type, mutated);
    assert.ok(Array.isArray(findings));
  }
});

robust.run();
