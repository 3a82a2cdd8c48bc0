/**
 * The power-loss mode's persistence model (spec/writing.md, DUR-1..DUR-4) on real
 * traces of small shell programs: what each state keeps, that a moved
 * directory is never under both names, that written bytes match the file,
 * that states are deterministic, and that a state on disk is the state.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runWithCrash } from '../../conformance/crash/run.ts';
import { buildModel, buildState, listState, pendingAt, readInitial, type Model, type Snapshot } from '../../conformance/crash/power-model.ts';
import { materialize, planStates } from '../../conformance/crash/power-states.ts';

const scratch = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fsjob-power-model-')));
process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));

let dirs = 0;
async function traced(script: string, setup = ''): Promise<{ root: string; model: Model }> {
  const root = path.join(scratch, `t${++dirs}`);
  mkdirSync(root);
  if (setup !== '') {
    const made = spawnSync('sh', ['-c', setup], { cwd: root, encoding: 'utf8' });
    assert.is(made.status, 0, made.stderr);
  }
  const initial = readInitial(root);
  const result = await runWithCrash({ argv: ['sh', '-c', script], cwd: root, root, trace: true });
  assert.is(result.exitCode, 0, result.stderr);
  return { root, model: buildModel(root, initial.snapshot, initial.inos, result.trace ?? []) };
}

/** path -> content (null for a directory) of a state. */
function files(state: Snapshot): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (const item of listState(state)) if (item.rel !== '') out[item.rel] = item.kind === 'dir' ? null : item.data.toString('utf8');
  return out;
}

const lostAll = (model: Model, c = model.last): Snapshot => buildState(model, c, () => false);
const keepNames = (model: Model, c = model.last): Snapshot => buildState(model, c, (ch) => ch.type === 'add' || ch.type === 'remove' || ch.type === 'move' || ch.type === 'chmod');
const keepAll = (model: Model, c = model.last): Snapshot => buildState(model, c, () => true);

const model = suite('persistence model');

model('a record linked after its fsync and followed by a directory fsync survives whole', async () => {
  const { model: m } = await traced('printf abc > .t; sync .t; ln .t r; sync .');
  assert.equal(files(lostAll(m)), { '.t': 'abc', r: 'abc' });
  assert.is(pendingAt(m, m.last).length, 0);
});

model('bytes never fsynced are lost under a durable name (DUR-1): the name shows an empty file', async () => {
  const { model: m } = await traced('printf abc > .t; ln .t r; sync .');
  assert.equal(files(lostAll(m)), { '.t': '', r: '' });
  assert.equal(files(keepAll(m)), { '.t': 'abc', r: 'abc' });
});

model('a link without a directory fsync may be lost (DUR-2); with names kept it shows, bytes and all once fsynced', async () => {
  const { model: m } = await traced('printf abc > .t; sync .t; ln .t r');
  assert.equal(files(lostAll(m)), {});
  assert.equal(files(keepNames(m)), { '.t': 'abc', r: 'abc' });
});

model('a rename within one directory is one change: the old state or the new, never both names', async () => {
  const { model: m } = await traced('printf 2 > .t; sync .t; mv .t s', 'printf 1 > s; sync s .');
  const lost = files(lostAll(m));
  const kept = files(keepNames(m));
  assert.equal(kept, { s: '2' });
  assert.equal(lost, { s: '1' }, 'the rename (and the creation of .t) lost: the old record');
});

model('a directory moved across directories is never under both names (DUR-3), and may be lost from both', async () => {
  const { model: m } = await traced('mv a/x b/x; sync a', 'mkdir -p a/x b; printf y > a/x/f; sync a/x/f a/x a b .');
  for (const state of planStates(m, { lost: [m.last], names: [m.last], alone: [m.last], omitted: [m.last] })) {
    const seen = files(state.state);
    assert.not.ok('a/x' in seen && 'b/x' in seen, `${state.family}: both names in ${JSON.stringify(seen)}`);
  }
  // sync a made the removal durable; b was not synced: the directory is in neither.
  assert.equal(files(lostAll(m)), { a: null, b: null });
  assert.equal(files(keepNames(m)), { a: null, b: null, 'b/x': null, 'b/x/f': 'y' });
});

model('a file renamed across directories may keep both names, as one file (DUR-3)', async () => {
  const { model: m } = await traced('mv a/f b/f', 'mkdir -p a b; printf z > a/f; sync a/f a b .');
  const alone = planStates(m, { lost: [], names: [], alone: [m.last], omitted: [] });
  assert.ok(alone.length > 0);
  const both = files(alone[0]?.state as Snapshot);
  assert.equal(both, { a: null, 'a/f': 'z', b: null, 'b/f': 'z' });
  const target = path.join(scratch, `m${dirs}`);
  materialize(alone[0]?.state as Snapshot, target);
  assert.is(statSync(path.join(target, 'a/f')).ino, statSync(path.join(target, 'b/f')).ino, 'one file, two names');
});

model('the traced bytes are the file: plain, O_APPEND and positioned writes, and copies that never pass through memory', async () => {
  const script = [
    'printf hello > a',
    'printf " world" >> a',
    'cat a > b',
    "python3 -c \"import os; fd=os.open('c', os.O_CREAT|os.O_WRONLY, 0o600); os.pwrite(fd, b'xyz', 5); os.close(fd)\"",
  ].join('; ');
  const { root, model: m } = await traced(script);
  const real = files(keepAll(m));
  for (const name of ['a', 'b', 'c']) assert.is(real[name], readFileSync(path.join(root, name), 'latin1'), name);
});

model('the same trace gives the same states, and a state put on disk reads back as itself', async () => {
  const { model: m } = await traced('mkdir d; printf 1 > d/.t; sync d/.t; ln d/.t d/r; rm d/.t; printf 2 > d/o; sync d');
  const all = Array.from({ length: m.last }, (_, i) => i + 1);
  const plan = { lost: all, names: all, alone: all, omitted: all };
  const first = planStates(m, plan).map((s) => s.digest);
  assert.equal(planStates(m, plan).map((s) => s.digest), first);
  assert.equal(new Set(first).size, first.length, 'each state once');
  for (const [i, state] of planStates(m, plan).entries()) {
    const target = path.join(scratch, `state${dirs}-${i}`);
    materialize(state.state, target);
    const expected = files(state.state);
    const onDisk: Record<string, string | null> = {};
    const walk = (dir: string, rel: string): void => {
      for (const name of readdirSync(dir).sort()) {
        const full = path.join(dir, name);
        const key = rel === '' ? name : `${rel}/${name}`;
        if (statSync(full).isDirectory()) {
          onDisk[key] = null;
          walk(full, key);
        } else onDisk[key] = readFileSync(full, 'utf8');
      }
    };
    walk(target, '');
    assert.equal(onDisk, expected, `state ${i} (${state.family} at ${state.c})`);
  }
});

model.run();
