/**
 * The conformance runner's machinery, without running any implementation:
 * manifests, the pool, kill-point selection, the publication audit, case
 * selection, the catalog and the report schema.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ALL_CASES } from '../../conformance/cases/index.ts';
import { quickPoints, spreadPoints } from '../../conformance/cases/crash.ts';
import type { CountedCall } from '../../conformance/crash/run.ts';
import type { TraceRecord } from '../../conformance/crash/trace.ts';
import { auditCalls } from '../../conformance/runner/audit.ts';
import { parseManifest, REFERENCE_MANIFEST, loadManifest, roleArgv } from '../../conformance/runner/manifest.ts';
import { Pool } from '../../conformance/runner/pool.ts';
import { buildReport, formatCase, type CaseResult } from '../../conformance/runner/report.ts';
import { selectCases } from '../../conformance/runner/run.ts';
import { schemaErrors } from '../../src/records/schemas.ts';
import { isFsjobError } from '../../src/base/errors.ts';

const manifests = suite('manifests (MANIFEST-1)');

manifests('relative paths resolve against the manifest directory, placeholders are filled', () => {
  const m = parseManifest(JSON.stringify({ name: 'x', roles: { produce: ['./bin/x', 'add', '{queue}', '--req={request}'], consume: ['x-consume', '{queue}', '../lib/conf'] }, env: { A: '1' }, timeout_s: 5 }), '/srv/impl/manifest.json');
  assert.is(m.dir, '/srv/impl');
  assert.is(m.timeoutMs, 5000);
  assert.equal(m.env, { A: '1' });
  assert.equal(roleArgv(m, 'produce', { queue: '/q', request: '/r.json' }), ['/srv/impl/bin/x', 'add', '/q', '--req=/r.json']);
  assert.equal(roleArgv(m, 'consume', { queue: '/q' }), ['x-consume', '/q', '/srv/lib/conf']);
});

manifests('the default time limit is 60 s', () => {
  const m = parseManifest(JSON.stringify({ name: 'x', roles: { produce: ['p', '{queue}', '{request}'], consume: ['c', '{queue}'] } }), '/m.json');
  assert.is(m.timeoutMs, 60_000);
});

manifests('an invalid manifest is refused naming the problem', () => {
  const cases = [
    '{',
    JSON.stringify({ name: 'x', roles: { consume: ['c', '{queue}'] } }),
    JSON.stringify({ name: 'x', roles: { produce: ['p', '{queue}'], consume: ['c', '{queue}'] } }),
    JSON.stringify({ name: 'x', roles: { produce: ['p', '{queue}', '{request}'], consume: ['c', '{queue}'] }, surprise: 1 }),
  ];
  for (const text of cases) {
    try {
      parseManifest(text, '/m.json');
      assert.unreachable(text);
    } catch (error) {
      assert.ok(isFsjobError(error, 'USAGE'), String(error));
      assert.match((error as Error).message, /m\.json/);
    }
  }
});

manifests('a placeholder the step does not provide is a usage error', () => {
  const m = parseManifest(JSON.stringify({ name: 'x', roles: { produce: ['p', '{queue}', '{request}'], consume: ['c', '{queue}'], cancel: ['c', '{queue}', '{id}'] } }), '/m.json');
  assert.throws(() => roleArgv(m, 'cancel', { queue: '/q' }), /\{id\}/);
});

manifests('the reference and sh manifests are valid', () => {
  const reference = loadManifest(REFERENCE_MANIFEST);
  assert.ok(reference.roles.produce?.some((arg) => arg.endsWith('bin/fsjob.js')));
  const sh = loadManifest(path.join(path.dirname(REFERENCE_MANIFEST), '..', 'sh', 'manifest.json'));
  assert.ok(sh.roles.consume !== undefined);
});

manifests.run();

const pool = suite('Pool');

pool('never runs more than its size at once, and an exclusive unit runs alone', async () => {
  const p = new Pool(3);
  let running = 0;
  let peak = 0;
  let aloneOk = true;
  const work = (ms: number) => async () => {
    running += 1;
    peak = Math.max(peak, running);
    await new Promise((resolve) => setTimeout(resolve, ms));
    running -= 1;
  };
  const exclusive = async () => {
    if (running !== 0) aloneOk = false;
    running += 10;
    await new Promise((resolve) => setTimeout(resolve, 5));
    running -= 10;
  };
  await Promise.all([...Array.from({ length: 10 }, () => p.run(work(5))), p.run(exclusive, 3), ...Array.from({ length: 5 }, () => p.run(work(2)))]);
  assert.ok(peak <= 3 || peak >= 10, `peak ${peak}`);
  assert.ok(aloneOk, 'the exclusive unit ran alone');
});

pool.run();

const points = suite('kill points');

points('a spread keeps the first and the last call', () => {
  assert.equal(spreadPoints(5, 9), [1, 2, 3, 4, 5]);
  const spread = spreadPoints(200, 9);
  assert.is(spread.length, 9);
  assert.is(spread[0], 1);
  assert.is(spread.at(-1), 200);
});

points('quick adds the call right after each receipt link and each publication rename', () => {
  const root = '/q';
  const calls: CountedCall[] = Array.from({ length: 100 }, (_, i) => ({ k: i + 1, pid: 1, op: 'write', path: `/q/jobs/x/.t${i}` }));
  calls[40] = { k: 41, pid: 1, op: 'linkat', path: '/q/jobs/1764476044123456789-3fa2c1d09b8e7f64/.receipt.json.x', path2: '/q/jobs/1764476044123456789-3fa2c1d09b8e7f64/receipt.json' };
  calls[60] = { k: 61, pid: 1, op: 'renameat2', path: '/q/tmp/1764476044123456789-3fa2c1d09b8e7f64', path2: '/q/jobs/1764476044123456789-3fa2c1d09b8e7f64' };
  const ks = quickPoints(calls, root);
  assert.ok(ks.includes(42) && ks.includes(62) && ks.includes(1) && ks.includes(100), ks.join(','));
  assert.ok(ks.length <= 12, ks.join(','));
});

points.run();

const audit = suite('publication audit');
const ID = '1764476044123456789-3fa2c1d09b8e7f64';
const J = `/q/jobs/${ID}`;
const call = (k: number, op: string, p: string, p2?: string): CountedCall => (p2 === undefined ? { k, pid: 7, op, path: p } : { k, pid: 7, op, path: p, path2: p2 });
const clausesOf = (calls: CountedCall[]): string[][] => auditCalls(calls, '/q', 'run').map((f) => f.clauses);

audit('a correct publication (temp, write, fsync, link) passes', () => {
  assert.equal(clausesOf([call(1, 'openat', `${J}/.claim.1.json.a`), call(2, 'write', `${J}/.claim.1.json.a`), call(3, 'fsync', `${J}/.claim.1.json.a`), call(4, 'linkat', `${J}/.claim.1.json.a`, `${J}/claim.1.json`), call(5, 'unlinkat', `${J}/.claim.1.json.a`), call(6, 'fsync', J)]), []);
});

audit('a record written in place is PUB-3', () => {
  assert.equal(clausesOf([call(1, 'open64', `${J}/receipt.json`), call(2, 'write', `${J}/receipt.json`)]), [['PUB-3', 'PUB-1', 'I1']]);
});

audit('a claim published by rename is CLAIM-5', () => {
  assert.equal(clausesOf([call(1, 'openat', `${J}/.c`), call(2, 'fsync', `${J}/.c`), call(3, 'renameat2', `${J}/.c`, `${J}/claim.1.json`)]), [['CLAIM-5', 'PUB-3', 'I2']]);
});

audit('a link without an fsync after the last write is PUB-2', () => {
  assert.equal(clausesOf([call(1, 'openat', `${J}/.c`), call(2, 'fsync', `${J}/.c`), call(3, 'write', `${J}/.c`), call(4, 'linkat', `${J}/.c`, `${J}/exec.1.json`), call(5, 'fsync', J)]), [['PUB-2', 'I1']]);
});

audit('outputs written after the receipt, or not fsynced before it, are RCPT-2', () => {
  const base = [call(1, 'openat', `${J}/stdout.1`), call(2, 'write', `${J}/stdout.1`), call(3, 'openat', `${J}/.r`), call(4, 'fsync', `${J}/.r`), call(5, 'linkat', `${J}/.r`, `${J}/receipt.json`), call(6, 'fsync', J)];
  assert.equal(clausesOf(base), [['RCPT-2', 'I4']]);
  assert.equal(clausesOf([...base.slice(0, 2), call(3, 'fsync', `${J}/stdout.1`), ...base.slice(2).map((c) => ({ ...c, k: c.k + 1 })), call(8, 'write', `${J}/stdout.1`)]), [['RCPT-2', 'I4']]);
});

audit('a job directory made in jobs/ instead of renamed there is ENQ-3', () => {
  assert.equal(clausesOf([call(1, 'mkdir', J)]), [['ENQ-3', 'ENQ-5', 'I1']]);
  assert.equal(clausesOf([call(1, 'mkdir', `/q/tmp/${ID}`), call(2, 'openat', `/q/ready/1000-${ID}`), call(3, 'renameat2', `/q/tmp/${ID}`, J)]), []);
});

audit('a job published before its ready entry exists is ENQ-2', () => {
  assert.equal(clausesOf([call(1, 'mkdir', `/q/tmp/${ID}`), call(2, 'renameat2', `/q/tmp/${ID}`, J), call(3, 'openat', `/q/ready/1000-${ID}`)]), [['ENQ-2', 'READY-1', 'I1']]);
});

audit('a job renamed into jobs/ from outside the queue is LAYOUT-3; from another name inside it PUB-9', () => {
  assert.equal(clausesOf([call(1, 'openat', `/q/ready/1000-${ID}`), call(2, 'renameat2', `/elsewhere/${ID}`, J)]), [['LAYOUT-3', 'ENQ-3', 'I1']]);
  assert.equal(clausesOf([call(1, 'openat', `/q/ready/1000-${ID}`), call(2, 'renameat2', `/q/tmp/.stage-${ID}`, J)]), [['PUB-9', 'ENQ-3', 'I1']]);
  assert.equal(clausesOf([call(1, 'openat', `/q/ready/1000-${ID}`), call(2, 'renameat2', `/q/jobs/.tmp-${ID}`, J)]), [['PUB-9', 'ENQ-3', 'I1']]);
});

audit('a temporary, output or staged file created without O_EXCL is PUB-1 or PUB-7', () => {
  const open = (k: number, p: string, flags: number): CountedCall => ({ ...call(k, 'openat', p), flags });
  const TRUNC = 0o1101;
  const EXCL = 0o301;
  assert.equal(clausesOf([open(1, `${J}/.claim.1.json.a`, TRUNC)]), [['PUB-1', 'PUB-3']]);
  assert.equal(clausesOf([open(1, `${J}/stdout.1`, TRUNC)]), [['PUB-7', 'EXEC-1']]);
  assert.equal(clausesOf([open(1, `/q/tmp/${ID}/spec.json`, TRUNC)]), [['PUB-7', 'ENQ-3']]);
  assert.equal(clausesOf([open(1, `/q/ready/1000-${ID}`, TRUNC)]), [['PUB-7', 'ENQ-2']]);
  assert.equal(clausesOf([open(1, `${J}/.claim.1.json.a`, EXCL), open(2, `${J}/stdout.1`, EXCL), open(3, `/q/tmp/${ID}/spec.json`, EXCL), open(4, `/q/tmp/.scratch/pipe`, TRUNC)]), []);
});

audit('removing a receipt is RCPT-6; staging in tmp/ is never audited', () => {
  assert.equal(clausesOf([call(1, 'unlinkat', `${J}/receipt.json`)]), [['RCPT-6', 'I3']]);
  assert.equal(clausesOf([call(1, 'openat', `/q/tmp/${ID}/spec.json`), call(2, 'write', `/q/tmp/${ID}/spec.json`)]), []);
});

audit('a chmod of anything the run did not create is PUB-11; of its own new directory or temporary file it is fine', () => {
  assert.equal(clausesOf([call(1, 'fchmodat', `${J}/claim.1.json`)]), [['PUB-11']]);
  assert.equal(clausesOf([call(1, 'chmod', '/q/ready')]), [['PUB-11']]);
  assert.equal(clausesOf([call(1, 'mkdir', '/q/lanes/ab'), call(2, 'chmod', '/q/lanes/ab'), { ...call(3, 'openat', `${J}/.claim.1.json.a`), flags: 0o301 }, call(4, 'fchmod', `${J}/.claim.1.json.a`)]), []);
});

audit('removing a state record, an output, the spec or the job directory in jobs/ is PUB-10; temporary names, ready entries, lower holds and registrations may go', () => {
  for (const name of ['state.1.json', 'stdout.1', 'stderr.2', 'spec.json', 'stdin']) assert.equal(clausesOf([call(1, 'unlinkat', `${J}/${name}`)]), [['PUB-10', 'I1']], name);
  assert.equal(clausesOf([call(1, 'rmdir', J)]), [['PUB-10', 'I1']]);
  assert.equal(clausesOf([call(1, 'unlinkat', `${J}/.claim.1.json.a`), call(2, 'unlinkat', `/q/ready/1000-${ID}`), call(3, 'unlinkat', '/q/lanes/ab/1.json'), call(4, 'unlinkat', '/q/workers/0123456789abcdef.json'), call(5, 'rmdir', `/q/tmp/.gc-${ID}-1`)]), []);
});

audit('a link not followed by an fsync of its directory, before the next link there or the end of the run, is PUB-5; a link that failed (a claim lost to a rival) published nothing', () => {
  const publish = (k: number, name: string): CountedCall[] => [call(k, 'openat', `${J}/.${name}.a`), call(k + 1, 'fsync', `${J}/.${name}.a`), call(k + 2, 'linkat', `${J}/.${name}.a`, `${J}/${name}`)];
  assert.equal(clausesOf(publish(1, 'claim.1.json')), [['PUB-5', 'DUR-2']]);
  assert.equal(clausesOf([...publish(1, 'claim.1.json'), ...publish(4, 'exec.1.json'), call(7, 'fsync', J)]), [['PUB-5', 'DUR-2']]);
  assert.equal(clausesOf([...publish(1, 'claim.1.json'), call(4, 'fsync', J), ...publish(5, 'exec.1.json'), call(8, 'fsync', J)]), []);
  // The trace says the link failed (EEXIST): it was counted before it ran, and made no record.
  const lost: TraceRecord = { k: 3, done: 3, pid: 7, op: 'linkat', family: 'link', ret: -1, errno: 17, flags: 0, path: `${J}/.claim.1.json.a`, path2: `${J}/claim.1.json` };
  assert.equal(auditCalls(publish(1, 'claim.1.json'), '/q', 'run', [lost]), []);
  assert.equal(auditCalls(publish(1, 'claim.1.json'), '/q', 'run', [{ ...lost, ret: 0, errno: 0 }]).length, 1);
});

audit.run();

const catalog = suite('case catalog');
const clauseIds = new Set((JSON.parse(readFileSync(new URL('../../spec/clauses.json', import.meta.url), 'utf8')) as { id: string }[]).map((c) => c.id));
const INVARIANTS = new Set(['I1', 'I2', 'I3', 'I4', 'I5', 'I6', 'I7', 'I8']);

catalog('every case has a unique name and cites existing clauses', () => {
  const names = new Set<string>();
  for (const c of ALL_CASES) {
    assert.not.ok(names.has(c.name), c.name);
    names.add(c.name);
    assert.ok(c.clauses.length > 0, c.name);
    for (const clause of c.clauses) assert.ok(clauseIds.has(clause) || INVARIANTS.has(clause), `${c.name}: ${clause}`);
  }
});

catalog('the catalog covers the invariants I1 to I7', () => {
  const cited = new Set(ALL_CASES.flatMap((c) => c.clauses));
  for (const invariant of ['I1', 'I2', 'I3', 'I4', 'I5', 'I6', 'I7']) assert.ok(cited.has(invariant), invariant);
});

catalog('selection: --only by clause, --role by level, crash cases only with --crash, missing roles skip', () => {
  const m = parseManifest(JSON.stringify({ name: 'x', roles: { produce: ['p', '{queue}', '{request}'], consume: ['c', '{queue}'] } }), '/m.json');
  const only = selectCases(ALL_CASES, m, { only: ['ID-7'] });
  assert.ok(only.run.length > 0 && only.run.every((c) => c.clauses.includes('ID-7')));
  const producer = selectCases(ALL_CASES, m, { role: 'producer' });
  assert.ok(producer.run.every((c) => c.level === 'producer'));
  assert.not.ok(selectCases(ALL_CASES, m, {}).run.some((c) => c.crash === true));
  assert.ok(selectCases(ALL_CASES, m, { crash: 'quick' }).run.some((c) => c.crash === true));
  const skipped = selectCases(ALL_CASES, m, {}).skipped.map((s) => s.c.name);
  assert.ok(skipped.includes('consumer/cancel-running'), skipped.join(','));
});

catalog.run();

const reports = suite('report');

reports('a report matches schemas/conformance-report.schema.json and prints its failures', () => {
  const results: CaseResult[] = [
    { name: 'crash/consume', clauses: ['I3'], level: 'consumer', strength: 'MUST', status: 'fail', durationMs: 12, failures: [{ clauses: ['I3', 'RCPT-3'], message: 'job x has no receipt', evidence: ['jobs/x/: spec.json(10)'], crash: { k: 7, op: 'linkat', path: 'jobs/x/.r', path2: 'jobs/x/receipt.json' } }] },
    { name: 'behaviour/stdin', clauses: ['EXEC-7'], level: 'consumer', strength: 'MUST', status: 'ok', durationMs: 3, failures: [] },
    { name: 'consumer/cancel-running', clauses: ['CANCEL-3'], level: 'consumer', strength: 'MUST', status: 'skip', durationMs: 0, note: 'no cancel role', failures: [] },
  ];
  const report = buildReport({ implementation: { name: 'x', manifest: '/m.json' }, options: { role: 'all', crash: 'quick', power: 'quick', only: [] }, startedMs: 1, finishedMs: 2, results, crashPoints: 12 });
  assert.equal(schemaErrors('conformance-report', report), []);
  assert.equal(report.summary, { passed: 1, failed: 1, skipped: 1, must_failed: 1, crash_points: 12 });
  const text = formatCase(results[0] as CaseResult).join('\n');
  assert.match(text, /^FAIL crash\/consume \[I3\]/);
  assert.match(text, /broke I3 RCPT-3: job x has no receipt/);
  assert.match(text, /crash point: k=7 linkat jobs\/x\/\.r -> jobs\/x\/receipt\.json/);
  assert.match(text, /jobs\/x\/: spec\.json\(10\)/);
});

reports.run();
