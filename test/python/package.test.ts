/**
 * fsjob for Python as a package: `pip install ./python` (python/README.md's
 * command, from the repository root) into a fresh virtual environment, with
 * no package index (PIP_NO_INDEX) and no pip configuration: the in-tree build
 * backend (python/tools/build_backend.py) needs nothing, so the wheel builds
 * and installs offline, with no warning. The installed `fsjob` on the venv's
 * PATH is `python3 -m fsjob`, and it runs a job end to end from a directory
 * outside the repository; the wheel holds the package and nothing else.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { PYTHON, PYTHON_DIR, REPO, run, type Run } from './support.ts';

const WATCHDOG_MS = 180_000;
const pkg = suite('pip install ./python');
pkg.after(cleanupAll);

function ok(ran: Run, what: string): Run {
  assert.is(ran.status, 0, `${what}: ${ran.stdout}${ran.stderr}`);
  return ran;
}

pkg('into a fresh venv, offline and without a warning: fsjob on PATH is python3 -m fsjob and runs a job', async () => {
  const dir = await freshDir('fsjob-py-package');
  const venv = join(dir, 'venv');
  ok(await run(PYTHON, ['-m', 'venv', venv], { cwd: dir, watchdogMs: WATCHDOG_MS }), 'python3 -m venv');
  const offline = { ...process.env, PIP_NO_INDEX: '1', PIP_CONFIG_FILE: '/dev/null', PIP_DISABLE_PIP_VERSION_CHECK: '1', PIP_FIND_LINKS: '', PIP_NO_INPUT: '1' };
  const installed = ok(await run(join(venv, 'bin', 'pip'), ['install', './python'], { cwd: REPO, env: offline, watchdogMs: WATCHDOG_MS }), 'pip install ./python');
  assert.match(installed.stdout, /Successfully installed fsjob-\d+\.\d+\.\d+/);
  assert.not.match(`${installed.stdout}${installed.stderr}`, /warning|deprecat|error/i);

  // What the wheel put in site-packages: the package, its data, the command; no tests, tools or caches from the tree.
  const site = join(venv, 'lib', readdirSync(join(venv, 'lib')).find((name) => name.startsWith('python')) ?? '', 'site-packages');
  const distInfo = readdirSync(site).find((name) => /^fsjob-.*\.dist-info$/.test(name)) ?? '';
  const record = readFileSync(join(site, distInfo, 'RECORD'), 'utf8').split('\n').filter((line) => line !== '').map((line) => line.split(',')[0] as string);
  const shipped = record.filter((file) => file.startsWith('fsjob/'));
  const sources = readdirSync(join(PYTHON_DIR, 'fsjob')).filter((name) => name.endsWith('.py') || name.endsWith('.json')).map((name) => `fsjob/${name}`);
  assert.equal(shipped.filter((file) => !file.includes('__pycache__')).sort(), sources.sort());
  assert.ok(record.some((file) => file.endsWith('/bin/fsjob')), 'the console script');
  assert.equal(record.filter((file) => /tests\/|tools\//.test(file)), []);

  // From a directory outside the repository, with only the venv on PATH.
  const env = { ...process.env, PATH: `${join(venv, 'bin')}:/usr/bin:/bin`, FSJOB_QUEUE: join(dir, 'q'), PYTHONPATH: '' };
  const [asCommand, asModule] = await Promise.all([
    run('fsjob', ['enqueue', '--help'], { cwd: dir, env, watchdogMs: WATCHDOG_MS }),
    run(join(venv, 'bin', 'python3'), ['-m', 'fsjob', 'enqueue', '--help'], { cwd: dir, env, watchdogMs: WATCHDOG_MS }),
  ]);
  ok(asCommand, 'fsjob enqueue --help');
  // The same parser: the same help after the usage lines (which argparse wraps by the program's name).
  const body = (text: string): string => text.slice(text.indexOf('\n\n'));
  assert.match(asCommand.stdout, /^usage: fsjob enqueue /);
  assert.is(body(asCommand.stdout), body(asModule.stdout));
  ok(await run('fsjob', ['init'], { cwd: dir, env, watchdogMs: WATCHDOG_MS }), 'fsjob init');
  const id = ok(await run('fsjob', ['enqueue', '--timeout', '1m', '--', 'sh', '-c', 'echo from the wheel'], { cwd: dir, env, watchdogMs: WATCHDOG_MS }), 'fsjob enqueue').stdout.trim();
  ok(await run('fsjob', ['work', '--drain'], { cwd: dir, env, watchdogMs: WATCHDOG_MS }), 'fsjob work --drain');
  assert.is(ok(await run('fsjob', ['wait', id], { cwd: dir, env, watchdogMs: WATCHDOG_MS }), 'fsjob wait').stdout, `${id} succeeded (exit code 0)\n`);
  assert.is(ok(await run('fsjob', ['logs', id], { cwd: dir, env, watchdogMs: WATCHDOG_MS }), 'fsjob logs').stdout, 'from the wheel\n');
});

pkg.run();
