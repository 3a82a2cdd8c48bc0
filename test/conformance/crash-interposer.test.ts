import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { interposerPath } from '../../conformance/crash/interposer.ts';
import { callFamily, runWithCrash, type CountedCall } from '../../conformance/crash/run.ts';

// Real processes, real files: everything lives under one scratch directory.
const scratch = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fsjob-crash-test-')));
process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));

let dirs = 0;
function freshDir(label: string): string {
  const dir = path.join(scratch, `${label}-${++dirs}`);
  mkdirSync(dir);
  return dir;
}

// "family relpath[ -> relpath]" keeps expectations independent of which libc
// variant (renameat2, open64, ...) a given tool happens to call.
function describe(calls: CountedCall[], root: string): string[] {
  const rel = (p: string): string => path.relative(root, p) || '.';
  return calls.map((c) => `${callFamily(c.op)} ${rel(c.path)}${c.path2 ? ` -> ${rel(c.path2)}` : ''}`);
}

function withoutWrites(lines: string[]): string[] {
  return lines.filter((line) => !line.startsWith('write '));
}

/** Directory tree as sorted [relpath, content | null-for-directory] pairs. */
function snapshot(root: string): Array<[string, string | null]> {
  const out: Array<[string, string | null]> = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const full = path.join(dir, name);
      const rel = path.relative(root, full);
      if (statSync(full).isDirectory()) {
        out.push([rel, null]);
        walk(full);
      } else {
        out.push([rel, readFileSync(full, 'utf8')]);
      }
    }
  };
  walk(root);
  return out;
}

function processGone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z'); // unreaped zombie: no longer runs
  } catch {
    return true;
  }
}

// The protocol-shaped sequence every shell test uses: create, fill, flush,
// publish by rename, hard-link, unlink, flush the directory.
const SCRIPT = 'mkdir d; printf x > d/f; sync d/f; mv d/f d/g; ln d/g d/h; rm d/g; sync d';
const SCRIPT_CALLS = [
  'mkdir d',
  'open d/f',
  'fsync d/f',
  'rename d/f -> d/g',
  'link d/g -> d/h',
  'unlink d/g',
  'fsync d',
];

// ---------------------------------------------------------------------------
const interposer = suite('interposer build');

interposer('compiles once into a content-addressed cache shared by concurrent callers', async () => {
  const [a, b] = await Promise.all([interposerPath(), interposerPath()]);
  assert.is(a, b);
  assert.ok(path.isAbsolute(a));
  assert.match(path.basename(a), /^interpose-[0-9a-f]{32}\.so$/);
  assert.ok(statSync(a).size > 0);
  assert.is(await interposerPath(), a);
});

interposer('is a transparent no-op when the FSJOB_CRASH_* variables are unset', async () => {
  const library = await interposerPath();
  const dir = freshDir('noop');
  const env: NodeJS.ProcessEnv = { ...process.env, LD_PRELOAD: library, FSJOB_CRASH_KILL_AT: '1' };
  delete env.FSJOB_CRASH_ROOT;
  const run = spawnSync('bash', ['-c', SCRIPT], { cwd: dir, env, encoding: 'utf8' });
  assert.is(run.status, 0, run.stderr);
  assert.equal(snapshot(dir), [['d', null], ['d/h', 'x']]);
});

interposer.run();

// ---------------------------------------------------------------------------
const bash = suite('bash and coreutils');

bash('counts every mutating call of the shell and its children, in program order', async () => {
  const root = freshDir('bash');
  const result = await runWithCrash({ argv: ['bash', '-c', SCRIPT], cwd: root, root });
  assert.is(result.exitCode, 0, result.stderr);
  assert.not.ok(result.crashed);
  const seen = describe(result.calls, root);
  assert.equal(withoutWrites(seen), SCRIPT_CALLS);
  // bash's builtin printf writes through stdio, whose internal write(2) is not
  // interposable; its explicit fflush (no newline, so still buffered) is.
  assert.equal(seen.slice(0, 3), ['mkdir d', 'open d/f', 'write d/f']);
  assert.equal(result.calls.map((c) => c.k), result.calls.map((_, i) => i + 1));
  // mkdir, sync, mv, ln, rm, sync each ran as a separate child of bash.
  assert.ok(new Set(result.calls.map((c) => c.pid)).size >= 6);
});

bash('sees stdio output of coreutils at its explicit flush or close', async () => {
  const root = freshDir('stdio');
  const result = await runWithCrash({ argv: ['bash', '-c', '/usr/bin/printf z > out; cat out > copy'], cwd: root, root });
  assert.is(result.exitCode, 0, result.stderr);
  assert.equal(result.calls.map((c) => callFamily(c.op)).filter((f, i, all) => all.indexOf(f) === i), ['open', 'write']);
  assert.equal(describe(result.calls, root).filter((line) => line.startsWith('write')).slice(0, 2), ['write out', 'write copy']);
});

bash.run();

// ---------------------------------------------------------------------------
const dash = suite('sh (dash)');

dash('counts the same sequence under /bin/sh, including its builtin printf write', async () => {
  const root = freshDir('sh');
  const result = await runWithCrash({ argv: ['sh', '-c', SCRIPT], cwd: root, root });
  assert.is(result.exitCode, 0, result.stderr);
  const seen = describe(result.calls, root);
  assert.equal(withoutWrites(seen), SCRIPT_CALLS);
  assert.ok(seen.includes('write d/f'), `dash writes through write(2): ${seen.join(', ')}`);
});

dash.run();

// ---------------------------------------------------------------------------
const python = suite('python3');

python('counts os.open/write/fsync/rename/link of a python process', async () => {
  const root = freshDir('python');
  const program = [
    'import os',
    "fd = os.open('a', os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)",
    "os.write(fd, b'x')",
    'os.fsync(fd)',
    'os.close(fd)',
    "os.rename('a', 'b')",
    "os.link('b', 'c')",
  ].join('\n');
  const result = await runWithCrash({ argv: ['python3', '-'], stdin: program, cwd: root, root });
  assert.is(result.exitCode, 0, result.stderr);
  assert.equal(describe(result.calls, root), ['open a', 'write a', 'fsync a', 'rename a -> b', 'link b -> c']);
  assert.equal(snapshot(root), [['b', 'x'], ['c', 'x']]);
});

python.run();

// ---------------------------------------------------------------------------
const node = suite('node');

const NODE_PROGRAM = `
import fs from 'node:fs';
const { O_CREAT, O_EXCL, O_WRONLY } = fs.constants;
const fd = fs.openSync('a', O_CREAT | O_EXCL | O_WRONLY, 0o644);
fs.writeSync(fd, 'x');
fs.writeSync(fd, 'y', 1);
fs.fsyncSync(fd);
fs.closeSync(fd);
fs.renameSync('a', 'b');
fs.linkSync('b', 'c');
const handle = await fs.promises.open('p', 'wx');
await handle.write('x');
await handle.sync();
await handle.close();
await fs.promises.rename('p', 'q');
await fs.promises.link('q', 'r');
await fs.promises.unlink('q');
`;
const NODE_CALLS = [
  'open a',
  'write a',
  'write a',
  'fsync a',
  'rename a -> b',
  'link b -> c',
  'open p',
  'write p',
  'fsync p',
  'rename p -> q',
  'link q -> r',
  'unlink q',
];

function nodeScript(): string {
  const file = path.join(freshDir('node-src'), 'program.mjs');
  writeFileSync(file, NODE_PROGRAM);
  return file;
}

node('counts sync fs calls and fs.promises calls run on the libuv threadpool', async () => {
  const root = freshDir('node');
  const result = await runWithCrash({ argv: [process.execPath, nodeScript()], cwd: root, root });
  assert.is(result.exitCode, 0, result.stderr);
  assert.equal(describe(result.calls, root), NODE_CALLS);
  assert.equal(snapshot(root), [['b', 'xy'], ['c', 'xy'], ['r', 'x']]);
});

node('a kill point on a threadpool rename stops node before the rename happens', async () => {
  const root = freshDir('node-kill');
  const k = NODE_CALLS.indexOf('rename p -> q') + 1;
  const result = await runWithCrash({ argv: [process.execPath, nodeScript()], cwd: root, root, killAt: k });
  assert.ok(result.crashed);
  assert.is(result.signal, 'SIGKILL');
  assert.equal(describe(result.calls, root), NODE_CALLS.slice(0, k));
  assert.equal(snapshot(root), [['b', 'xy'], ['c', 'xy'], ['p', 'x']]);
});

node.run();

// ---------------------------------------------------------------------------
const scope = suite('scope of counting');

scope('ignores calls outside the root and writes to stdout, stderr and /dev/null', async () => {
  const root = freshDir('scope-root');
  const outside = freshDir('scope-outside');
  const script = [
    'echo out; echo err >&2; echo z > /dev/null',
    `mkdir ${outside}/m; printf y > ${outside}/y; mv ${outside}/y ${outside}/z`,
    `mkdir ../escaped-${path.basename(root)}`,
    `ln -s ${outside} link; : > link/through`,
    `: > ${root}/inside`,
  ].join('\n');
  const result = await runWithCrash({ argv: ['bash', '-c', script], cwd: root, root });
  assert.is(result.exitCode, 0, result.stderr);
  assert.is(result.stdout, 'out\n');
  assert.is(result.stderr, 'err\n');
  // The symlink itself lives in the root; the file created through it does not.
  assert.equal(
    result.calls.map((c) => [callFamily(c.op), c.path, c.path2]),
    [
      ['symlink', path.join(root, 'link'), outside],
      ['open', path.join(root, 'inside'), undefined],
    ],
  );
  assert.ok(existsSync(path.join(outside, 'z')) && existsSync(path.join(outside, 'through')));
});

scope('a symlinked root is matched by its real path, whatever the cwd', async () => {
  const real = freshDir('scope-real');
  const alias = path.join(freshDir('scope-alias'), 'queue');
  symlinkSync(real, alias);
  const result = await runWithCrash({ argv: ['bash', '-c', `mkdir ${alias}/j`], cwd: scratch, root: alias });
  assert.is(result.exitCode, 0, result.stderr);
  assert.equal(result.calls.map((c) => [callFamily(c.op), c.path]), [['mkdir', path.join(real, 'j')]]);
});

scope.run();

// ---------------------------------------------------------------------------
const kill = suite('kill point');

kill('the k-th call is not performed and the whole group, grandchildren included, is gone on return', async () => {
  const root = freshDir('kill');
  const outside = freshDir('kill-pid');
  const countRoot = freshDir('kill-count');
  const count = await runWithCrash({ argv: ['bash', '-c', SCRIPT], cwd: countRoot, root: countRoot });
  const k = describe(count.calls, countRoot).indexOf('rename d/f -> d/g') + 1;
  assert.ok(k > 1);
  // The backgrounded sleep keeps running (and holds our stdout pipe) unless
  // the group kill reaches it.
  const script = `sleep 30 & echo $! > ${outside}/pid; ${SCRIPT}`;
  const started = Date.now();
  const result = await runWithCrash({ argv: ['bash', '-c', script], cwd: root, root, killAt: k });
  assert.ok(Date.now() - started < 10_000);
  assert.ok(result.crashed);
  assert.not.ok(result.timedOut);
  assert.is(result.signal, 'SIGKILL');
  assert.is(result.calls.length, k);
  assert.equal(result.interrupted, result.calls[k - 1]);
  assert.is(callFamily(result.interrupted?.op ?? ''), 'rename');
  assert.is(result.interrupted?.path, path.join(root, 'd/f'));
  assert.is(result.interrupted?.path2, path.join(root, 'd/g'));
  assert.ok(existsSync(path.join(root, 'd/f')), 'rename source survives');
  assert.not.ok(existsSync(path.join(root, 'd/g')), 'rename destination never appears');
  const grandchild = Number(readFileSync(path.join(outside, 'pid'), 'utf8'));
  assert.ok(grandchild > 0 && processGone(grandchild), `sleep ${grandchild} still running`);
  for (const call of result.calls) assert.ok(processGone(call.pid), `pid ${call.pid} still running`);
});

kill('a kill point beyond the last call lets the program finish uncrashed', async () => {
  const root = freshDir('kill-beyond');
  const result = await runWithCrash({ argv: ['bash', '-c', SCRIPT], cwd: root, root, killAt: 50 });
  assert.is(result.exitCode, 0, result.stderr);
  assert.not.ok(result.crashed);
  assert.is(result.interrupted, undefined);
  assert.equal(withoutWrites(describe(result.calls, root)), SCRIPT_CALLS);
});

kill('a program outliving timeoutMs is killed with its group and reported as timedOut', async () => {
  const root = freshDir('kill-timeout');
  const started = Date.now();
  const result = await runWithCrash({ argv: ['bash', '-c', 'sleep 20 & sleep 20'], cwd: root, root, timeoutMs: 300 });
  assert.ok(result.timedOut);
  assert.not.ok(result.crashed);
  assert.is(result.signal, 'SIGKILL');
  assert.ok(Date.now() - started < 5_000);
});

kill.run();

// ---------------------------------------------------------------------------
const sweep = suite('crash sweep');

type Model = Map<string, string | null>; // relpath -> content, null = directory

/** Expected disk state after performing `calls` (the script writes only "x"). */
function model(calls: CountedCall[], root: string, writesVisible: boolean): Array<[string, string | null]> {
  const tree: Model = new Map();
  const rel = (p: string): string => path.relative(root, p);
  for (const call of calls) {
    const target = rel(call.path);
    const other = call.path2 === undefined ? '' : rel(call.path2);
    switch (callFamily(call.op)) {
      case 'mkdir':
        tree.set(target, null);
        break;
      case 'open':
        // Without a visible write, the uncounted write lands before the next
        // counted call, so any later crash point already sees the content.
        if (!tree.has(target)) tree.set(target, writesVisible ? '' : 'x');
        break;
      case 'write':
        tree.set(target, 'x');
        break;
      case 'rename':
        tree.set(other, tree.get(target) ?? null);
        tree.delete(target);
        break;
      case 'link':
        tree.set(other, tree.get(target) ?? null);
        break;
      case 'unlink':
        tree.delete(target);
        break;
      case 'fsync':
        break;
      default:
        throw new Error(`model has no rule for ${call.op}`);
    }
  }
  return [...tree.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

for (const shell of ['bash', 'sh']) {
  sweep(`${shell}: every crash point k leaves exactly the effects of calls 1..k-1 on disk`, async () => {
    const refRoot = freshDir(`${shell}-ref`);
    const reference = await runWithCrash({ argv: [shell, '-c', SCRIPT], cwd: refRoot, root: refRoot });
    assert.is(reference.exitCode, 0, reference.stderr);
    const expectedCalls = describe(reference.calls, refRoot);
    const writesVisible = expectedCalls.some((line) => line.startsWith('write '));
    const n = reference.calls.length;
    assert.ok(n >= SCRIPT_CALLS.length);

    for (let k = 1; k <= n + 1; k++) {
      const root = freshDir(`${shell}-k${k}`);
      const result = await runWithCrash({ argv: [shell, '-c', SCRIPT], cwd: root, root, killAt: k });
      const seen = describe(result.calls, root);
      if (k <= n) {
        assert.ok(result.crashed, `k=${k} crashed`);
        assert.is(result.interrupted?.k, k);
        assert.equal(seen, expectedCalls.slice(0, k), `k=${k} same calls as the reference run`);
      } else {
        assert.not.ok(result.crashed);
        assert.is(result.exitCode, 0);
        assert.equal(seen, expectedCalls);
      }
      const performed = result.calls.slice(0, Math.min(k - 1, n));
      assert.equal(snapshot(root), model(performed, root, writesVisible), `k=${k} disk state`);
    }
  });
}

sweep.run();
