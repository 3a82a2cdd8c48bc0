/**
 * The directory-move audit (PUB-9, conformance/runner/audit-moves.ts) on
 * made-up traces, and on a real `fsjob gc` run: the one mover of GC-1 no
 * manifest role reaches.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runWithCrash, type TraceRecord } from '../../conformance/crash/run.ts';
import { callFamily } from '../../conformance/crash/run.ts';
import { auditMoves, classifyMove } from '../../conformance/runner/audit-moves.ts';
import { deadOwner, receiptRecord } from '../../conformance/runner/fixtures.ts';
import { createQueue, plantRecord, stageJob } from '../../conformance/runner/stage.ts';

const ID = '1764476044123456789-3fa2c1d09b8e7f64';
const DIR = 0o40700;
const FILE = 0o100600;

let k = 0;
function rec(op: string, p: string, more: Partial<TraceRecord> = {}): TraceRecord {
  k += 1;
  return { k, done: k, pid: 7, op, family: callFamily(op), ret: 0, errno: 0, flags: 0, path: p, ...more };
}
const clausesOf = (trace: TraceRecord[]): string[][] => auditMoves(trace, '/q', 'run').map((f) => f.clauses);

const moves = suite('directory moves (PUB-9)');
moves.before.each(() => {
  k = 0;
});

moves('tmp/<id> -> jobs/<id> then an fsync of jobs/ passes; jobs/<id> -> tmp/.gc-<id>-<r> then jobs/ and tmp/ fsynced before the removal passes', () => {
  assert.equal(clausesOf([rec('renameat2', `/q/tmp/${ID}`, { path2: `/q/jobs/${ID}`, mode: DIR }), rec('fsync', '/q/jobs')]), []);
  const grave = `/q/tmp/.gc-${ID}-0123abcd`;
  assert.equal(clausesOf([rec('rename', `/q/jobs/${ID}`, { path2: grave, mode: DIR }), rec('fsync', '/q/jobs'), rec('fsync', '/q/tmp'), rec('unlinkat', `${grave}/spec.json`), rec('rmdir', grave)]), []);
});

moves('a directory renamed anywhere else is PUB-9; from outside the queue LAYOUT-3 first', () => {
  assert.equal(clausesOf([rec('renameat2', `/q/jobs/.tmp-${ID}`, { path2: `/q/jobs/${ID}`, mode: DIR })]), [['PUB-9']]);
  assert.equal(clausesOf([rec('renameat2', `/q/tmp/.stage-${ID}`, { path2: `/q/jobs/${ID}`, mode: DIR })]), [['PUB-9']]);
  assert.equal(clausesOf([rec('rename', `/q/jobs/${ID}`, { path2: `/q/archive/${ID}`, mode: DIR })]), [['PUB-9']]);
  assert.equal(clausesOf([rec('rename', `/q/jobs/${ID}`, { path2: `/q/tmp/${ID}`, mode: DIR })]), [['PUB-9']], 'a retired job is named .gc-<id>-<random>');
  assert.equal(clausesOf([rec('rename', `/q/tmp/${ID}`, { path2: `/q/tmp/.old-${ID}`, mode: DIR })]), [['PUB-9']]);
  assert.equal(clausesOf([rec('rename', `/q/jobs/${ID}`, { path2: `/elsewhere/${ID}`, mode: DIR })]), [['PUB-9']]);
  assert.equal(clausesOf([rec('renameat2', `/elsewhere/${ID}`, { path2: `/q/jobs/${ID}`, mode: DIR })]), [['LAYOUT-3', 'PUB-9']]);
});

moves('files and failed renames are not moves', () => {
  assert.equal(clausesOf([rec('rename', `/q/jobs/${ID}/.state.1.json.x`, { path2: `/q/jobs/${ID}/state.1.json`, mode: FILE })]), []);
  assert.equal(clausesOf([rec('renameat2', `/q/tmp/.stage-${ID}`, { path2: `/q/jobs/${ID}`, mode: DIR, ret: -1, errno: 39 })]), []);
});

moves('no fsync of the target parent after the move returned is ENQ-4 for a publication, PUB-9 for a retirement', () => {
  assert.equal(clausesOf([rec('renameat2', `/q/tmp/${ID}`, { path2: `/q/jobs/${ID}`, mode: DIR }), rec('fsync', '/q/tmp')]), [['ENQ-4', 'PUB-9']]);
  // An fsync of jobs/ that started before the rename returned (k <= done) does not count.
  k = 0;
  assert.equal(clausesOf([rec('renameat2', `/q/tmp/${ID}`, { path2: `/q/jobs/${ID}`, mode: DIR, done: 2 }), rec('fsync', '/q/jobs')]), [['ENQ-4', 'PUB-9']]);
  assert.equal(clausesOf([rec('renameat2', `/q/tmp/${ID}`, { path2: `/q/jobs/${ID}`, mode: DIR }), rec('syncfs', '/q')]), []);
  const grave = `/q/tmp/.gc-${ID}-9`;
  assert.equal(clausesOf([rec('rename', `/q/jobs/${ID}`, { path2: grave, mode: DIR }), rec('fsync', '/q/jobs')]), [['PUB-9']]);
});

moves('a retired tree removed before jobs/ is fsynced is GC-1', () => {
  const grave = `/q/tmp/.gc-${ID}-9`;
  assert.equal(clausesOf([rec('rename', `/q/jobs/${ID}`, { path2: grave, mode: DIR }), rec('fsync', '/q/tmp'), rec('unlinkat', `${grave}/spec.json`), rec('fsync', '/q/jobs')]), [['GC-1', 'PUB-9']]);
  assert.equal(clausesOf([rec('rename', `/q/jobs/${ID}`, { path2: grave, mode: DIR }), rec('fsync', '/q/tmp')]), [['GC-1', 'PUB-9']]);
});

moves('classifyMove names the two moves', () => {
  assert.equal(classifyMove(`tmp/${ID}`, `jobs/${ID}`), { kind: 'publish', id: ID });
  assert.equal(classifyMove(`jobs/${ID}`, `tmp/.gc-${ID}-ab`), { kind: 'retire', id: ID });
  assert.equal(classifyMove(`jobs/${ID}`, `tmp/.gc-${ID}-`).kind, 'other');
  assert.equal(classifyMove(`tmp/${ID}`, `jobs/1764476044123456789-0000000000000000`).kind, 'other');
});

moves.run();

const real = suite('a real gc run, traced');
const scratch = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fsjob-moves-test-')));
real.after(() => rmSync(scratch, { recursive: true, force: true }));
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

real('fsjob gc retires a finished job by one rename into tmp/.gc-<id>-<r>, fsyncs jobs/ and tmp/, then removes the tree', async () => {
  const root = path.join(scratch, 'q');
  const queue = await createQueue(root);
  const job = await stageJob(queue, { argv: ['/bin/true'], cwd: scratch });
  await plantRecord(queue, job.dir, 'receipt.json', 'receipt', receiptRecord(job.id, 1, await deadOwner()));
  const result = await runWithCrash({ argv: [process.execPath, path.join(REPO, 'bin/fsjob.js'), 'gc', '--queue', root, '--all'], cwd: REPO, root, trace: true, timeoutMs: 60_000 });
  assert.is(result.exitCode, 0, result.stderr);
  const trace = result.trace ?? [];
  const retired = trace.filter((r) => r.family === 'rename' && r.path2 !== undefined && classifyMove(path.relative(root, r.path), path.relative(root, r.path2)).kind === 'retire');
  assert.is(retired.length, 1, trace.map((r) => `${r.op} ${r.path} ${r.path2 ?? ''}`).join('\n'));
  assert.equal(auditMoves(trace, root, 'gc'), []);
  assert.equal(readdirSync(path.join(root, 'jobs')), []);
});

real.run();
