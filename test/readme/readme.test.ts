/**
 * Every code block of README.md, python/README.md and the sh
 * implementation's README runs as it is written, so a README that hangs or
 * lies fails npm test. Each block carries a `<!-- readme-test: ID -->`
 * marker (tools/readme/blocks.ts) and BLOCKS below says how that block runs;
 * a block without a marker, or a marker this table does not know, fails. The
 * blocks that are not run here say why in the table (the commands that run
 * this test, minutes-long runs that other tests make), and the blocks another
 * test runs name that test, which must extract the block itself.
 *
 * A block runs as a user would paste it: bash -e for sh (every command must
 * succeed), python3 for python, node for JavaScript (a plain .mjs in an app
 * whose node_modules holds fsjob, as an install makes it), in a fresh
 * directory with a fresh HOME (so ~/jobs and the default queue are new), with
 * `fsjob` on PATH as `npm link` puts it there and python/ on PYTHONPATH. A
 * block that needs a worker gets a reference worker serving the queue it
 * names while it runs. Each runs in its own process group under a watchdog:
 * a hang fails the test with what it printed, and whatever the block left
 * running is stopped afterwards. Config (the systemd unit) is checked with
 * systemd-analyze verify where it exists.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readmeBlocks, type Block } from '../../tools/readme/blocks.ts';
import { REPO } from '../../tools/package/app.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { FSJOB_BIN } from '../support/cli.ts';
import { PYTHON } from '../python/support.ts';

const FILES = ['README.md', 'python/README.md', 'conformance/impls/sh/README.md'];

interface Run {
  run: 'bash' | 'python' | 'node';
  /** Where it runs: a fresh directory (default) or this directory of the repository (a block that says "from the repository's root"). */
  cwd?: string;
  /** A reference worker serves this queue (relative to the block's directory) while the block runs. */
  worker?: string;
  /** What the README presumes already exists, made first (bash). */
  setup?: string;
  /** What stdout must show. */
  expect?: RegExp;
  /** Commands the block uses that a machine may lack: without them it is skipped, saying so. */
  needs?: string[];
  watchdogMs?: number;
}
type How = Run | { systemd: true } | { notRun: string } | { runBy: string; why: string };

const BLOCKS: Record<string, How> = {
  // README.md
  setup: { notRun: 'the commands that run this test (CI: npm ci, then npm test); the demo is test/cli/demo.test.ts\'s, which also runs the lines it prints' },
  install: { notRun: 'installs the published package from the registry; test/package/install.test.ts installs the tarball of npm pack the same way, offline, and runs its demo' },
  'python-producer': { run: 'python', worker: 'jobs', expect: /^succeeded 0$/m },
  'sh-example': { run: 'bash', cwd: '.', expect: /^\d{19}-[0-9a-f]{16} succeeded \(exit code 0\)$/m },
  'operator-day': { run: 'bash', expect: /^deploying to staging$/m, watchdogMs: 240_000 },
  // ~/jobs: the block's HOME is ../home of its directory.
  dependencies: { run: 'bash', worker: '../home/jobs', expect: /^testing$/m },
  'systemd-unit': { systemd: true },
  // Also compiled as strict TypeScript by test/package/install.test.ts.
  'node-example': { run: 'node', expect: /^succeeded 0 \{ resized: \{ path: 'a\.png', width: 640 \}, aborted: false \}$/m },
  'node-service': { run: 'node', expect: /^succeeded 640 failed handler failed: disk full\nUSAGE \/concurrency\n1 1$/m },
  validate: { run: 'bash', setup: 'fsjob init -q ~/jobs', needs: ['jq'], expect: /^0 jobs, 0 errors, 0 warnings, 0 infos$/m },
  conformance: { notRun: 'minutes each: test/conformance/reference.test.ts, test/conformance/sh.test.ts and test/python/python.test.ts run the suite against the three implementations, test/cli/report-file.test.ts its --output' },
  'long-runs': { notRun: 'the long runs behind flags, minutes to hours each; npm test runs their short versions (test/battery/, test/conformance/)' },
  // python/README.md
  'pip-install': { runBy: 'test/python/package.test.ts', why: 'it builds a virtual environment and installs the wheel, and that test checks what was installed' },
  'py-enqueue': { run: 'python', worker: 'jobs', expect: /^succeeded 0 converted$/m },
  'py-worker': { run: 'python' },
  'py-errors': { run: 'python', expect: /^already queued as \d{19}-[0-9a-f]{16}$/m },
  'py-tests': { notRun: 'test/python/python.test.ts runs all three: the unit tests (also under Python 3.9), mypy when it is installed, the conformance run' },
  // conformance/impls/sh/README.md
  'sh-usage': { notRun: "a synopsis of the subcommands, not commands (README.md's sh-example runs init, produce, consume and wait)" },
  'sh-tests': { run: 'bash', cwd: 'conformance/impls/sh', expect: /^# \d+ checks, 0 failed[^]*^\d+ cases passed, 0 differ$/m, watchdogMs: 240_000 },
};

const WATCHDOG_MS = 120_000;
const PARALLEL = 3;

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
  hung: boolean;
}

/** Starts a program in its own process group; `done` once it ended (or the watchdog killed it) and whatever it left running was stopped. */
function startGroup(program: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv, watchdogMs: number): { stop: () => void; done: Promise<Ran> } {
  const child = spawn(program, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const stopGroup = (signal: NodeJS.Signals): void => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, signal);
    } catch {
      // the group is gone
    }
  };
  const done = new Promise<Ran>((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    let hung = false;
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const timer = setTimeout(() => {
      hung = true;
      stopGroup('SIGKILL');
    }, watchdogMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      stopGroup('SIGTERM'); // a background process the block started and did not stop
      resolve({ code, stdout, stderr, hung });
    });
  });
  return { stop: () => stopGroup('SIGTERM'), done };
}

function runGroup(program: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv, watchdogMs: number): Promise<Ran> {
  return startGroup(program, args, cwd, env, watchdogMs).done;
}

/** A fresh place to run a block: its directory (an app with fsjob in node_modules), HOME, and `fsjob` on PATH. */
async function sandbox(id: string): Promise<{ root: string; cwd: string; env: NodeJS.ProcessEnv }> {
  const root = await freshDir(`fsjob-readme-${id}`);
  const cwd = join(root, 'work');
  const home = join(root, 'home');
  const bin = join(root, 'bin');
  for (const dir of [cwd, home, bin, join(cwd, 'node_modules')]) mkdirSync(dir, { recursive: true, mode: 0o700 });
  symlinkSync(REPO, join(cwd, 'node_modules', 'fsjob'));
  writeFileSync(join(bin, 'fsjob'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(FSJOB_BIN)} "$@"\n`, { mode: 0o755 });
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, PATH: `${bin}:${process.env['PATH'] ?? '/usr/bin:/bin'}`, PYTHONPATH: join(REPO, 'python') };
  for (const name of ['FSJOB_QUEUE', 'XDG_STATE_HOME', 'NODE_OPTIONS', 'FORCE_COLOR']) delete env[name];
  return { root, cwd, env };
}

function onPath(command: string, env: NodeJS.ProcessEnv): boolean {
  return (env['PATH'] ?? '').split(':').some((dir) => dir !== '' && existsSync(join(dir, command)));
}

async function runBlock(block: Block, how: Run): Promise<string | undefined> {
  const where = `${block.file}:${block.line} (${block.id ?? ''})`;
  const box = await sandbox(block.id ?? 'block');
  const missing = (how.needs ?? []).filter((command) => !onPath(command, box.env));
  if (missing.length > 0) return `skipped ${where}: ${missing.join(', ')} not on PATH`;
  const cwd = how.cwd === undefined ? box.cwd : join(REPO, how.cwd);
  const file = join(how.run === 'node' ? box.cwd : box.root, { bash: 'block.sh', python: 'block.py', node: 'block.mjs' }[how.run]);
  writeFileSync(file, block.text);
  const shell = (script: string): Promise<Ran> => runGroup('bash', ['-e', '-c', script], cwd, box.env, WATCHDOG_MS);
  if (how.setup !== undefined) {
    const setup = await shell(how.setup);
    assert.is(setup.code, 0, `${where}: the setup failed: ${setup.stderr}`);
  }
  let worker: ReturnType<typeof startGroup> | undefined;
  if (how.worker !== undefined) {
    const queue = join(cwd, how.worker);
    assert.is((await shell(`fsjob init -q ${JSON.stringify(queue)}`)).code, 0);
    worker = startGroup('fsjob', ['work', '-q', queue], cwd, box.env, how.watchdogMs ?? WATCHDOG_MS);
  }
  const program = { bash: ['bash', '-e', file], python: [PYTHON, file], node: [process.execPath, file] }[how.run];
  const ran = await runGroup(program[0] as string, program.slice(1), cwd, box.env, how.watchdogMs ?? WATCHDOG_MS);
  worker?.stop(); // SIGTERM: it drains and exits
  const served = await worker?.done;
  const said = `${where} printed:\n${ran.stdout}${ran.stderr}${served === undefined ? '' : `\nits worker printed:\n${served.stderr}`}`;
  assert.not.ok(ran.hung, `${where} hung: still running after ${(how.watchdogMs ?? WATCHDOG_MS) / 1000} s; ${said}`);
  assert.is(ran.code, 0, `${where} exited ${ran.code}; ${said}`);
  if (how.expect !== undefined) assert.match(ran.stdout, how.expect, `${where} did not print what it should; ${said}`);
  return undefined;
}

const readme = suite('the code blocks of the READMEs');
readme.after(cleanupAll);

const blocks = FILES.flatMap((file) => readmeBlocks(join(REPO, file)).map((block) => ({ ...block, file })));

readme('every block carries a readme-test marker that this table knows, once; every entry of the table is used', () => {
  assert.equal(blocks.filter((block) => block.id === undefined || !(block.id in BLOCKS)).map((block) => `${block.file}:${block.line} ${block.id ?? '(no marker)'}`), []);
  const ids = blocks.map((block) => block.id as string);
  assert.equal(ids.filter((id, index) => ids.indexOf(id) !== index), [], 'each id once');
  assert.equal(Object.keys(BLOCKS).filter((id) => !ids.includes(id)), [], 'table entries without a block');
});

readme('a block another test runs is extracted by that test', () => {
  for (const [id, how] of Object.entries(BLOCKS)) {
    if (!('runBy' in how)) continue;
    assert.match(readFileSync(join(REPO, how.runBy), 'utf8'), `readmeBlock(`, `${how.runBy} extracts a block`);
    assert.match(readFileSync(join(REPO, how.runBy), 'utf8'), `'${id}'`, `${how.runBy} runs ${id}`);
  }
});

readme('the systemd unit is one systemd-analyze verify accepts, without a warning', async () => {
  for (const block of blocks.filter((candidate) => candidate.id !== undefined && 'systemd' in (BLOCKS[candidate.id] as How))) {
    const box = await sandbox('systemd');
    if (!onPath('systemd-analyze', box.env)) {
      console.log(`  skipped ${block.file}:${block.line}: no systemd-analyze here`);
      continue;
    }
    const unit = join(box.root, 'fsjob-work.service');
    writeFileSync(unit, block.text);
    const verified = await runGroup('systemd-analyze', ['verify', unit], box.root, box.env, WATCHDOG_MS);
    assert.is(verified.code, 0, verified.stderr);
    assert.is(verified.stderr.trim(), '', 'no warning');
  }
});

readme('every block that runs here runs as written, exits 0 and prints what it should', async () => {
  // The long ones (those with a longer watchdog) first, so that the others run beside them.
  const runs = blocks
    .filter((block) => block.id !== undefined && 'run' in (BLOCKS[block.id] as How))
    .sort((a, b) => ((BLOCKS[b.id as string] as Run).watchdogMs ?? 0) - ((BLOCKS[a.id as string] as Run).watchdogMs ?? 0));
  const notes: string[] = [];
  const failures: string[] = [];
  let next = 0;
  // A few at a time; every block runs to its end before the test says what failed.
  await Promise.all(
    Array.from({ length: PARALLEL }, async () => {
      while (next < runs.length) {
        const block = runs[next++] as Block;
        try {
          const note = await runBlock(block, BLOCKS[block.id as string] as Run);
          if (note !== undefined) notes.push(note);
        } catch (error) {
          failures.push(error instanceof Error ? error.message : String(error));
        }
      }
    }),
  );
  for (const note of notes) console.log(`  ${note}`);
  for (const [id, how] of Object.entries(BLOCKS)) if ('notRun' in how) console.log(`  not run: ${id}: ${how.notRun}`);
  assert.equal(failures, [], failures.join('\n\n'));
});

readme.run();
