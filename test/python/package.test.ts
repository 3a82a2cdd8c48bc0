/**
 * fsjob for Python as a package: python/README.md's install block, run as it
 * is written (bash -e, from the repository's root, with a fresh HOME): a
 * virtual environment, `pip install ./python` with no package index
 * (PIP_NO_INDEX) and no pip configuration (the in-tree build backend,
 * python/tools/build_backend.py, needs nothing, so the wheel builds and
 * installs offline, with no warning), then the installed `fsjob` runs a job.
 * Also: that `fsjob` is `python3 -m fsjob`, and the wheel holds the package
 * and nothing else.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readmeBlock } from '../../tools/readme/blocks.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { PYTHON_DIR, REPO, run, type Run } from './support.ts';

const WATCHDOG_MS = 180_000;
const pkg = suite('pip install ./python');
pkg.after(cleanupAll);

function ok(ran: Run, what: string): Run {
  assert.is(ran.status, 0, `${what}: ${ran.stdout}${ran.stderr}`);
  return ran;
}

pkg('python/README.md\'s install block, offline and without a warning; fsjob on PATH is python3 -m fsjob; the wheel holds the package', async () => {
  const dir = await freshDir('fsjob-py-package');
  const home = join(dir, 'home');
  mkdirSync(home, { mode: 0o700 });
  const block = join(dir, 'install.sh');
  writeFileSync(block, readmeBlock(join(REPO, 'python', 'README.md'), 'pip-install').text);
  const offline = { PIP_NO_INDEX: '1', PIP_CONFIG_FILE: '/dev/null', PIP_DISABLE_PIP_VERSION_CHECK: '1', PIP_FIND_LINKS: '', PIP_NO_INPUT: '1' };
  const env: NodeJS.ProcessEnv = { ...process.env, ...offline, HOME: home };
  for (const name of ['FSJOB_QUEUE', 'XDG_STATE_HOME', 'PYTHONPATH']) delete env[name];
  const installed = ok(await run('bash', ['-e', block], { cwd: REPO, env, watchdogMs: WATCHDOG_MS }), 'the install block');
  assert.match(installed.stdout, /Successfully installed fsjob-\d+\.\d+\.\d+/);
  assert.match(installed.stdout, /^\d{19}-[0-9a-f]{16} succeeded \(exit code 0\)\n$/m);
  assert.not.match(`${installed.stdout}${installed.stderr}`, /warning|deprecat|error/i);

  // What the wheel put in site-packages: the package, its data, the command; no tests, tools or caches from the tree.
  const venv = join(home, '.venvs', 'fsjob');
  const site = join(venv, 'lib', readdirSync(join(venv, 'lib')).find((name) => name.startsWith('python')) ?? '', 'site-packages');
  const distInfo = readdirSync(site).find((name) => /^fsjob-.*\.dist-info$/.test(name)) ?? '';
  const record = readFileSync(join(site, distInfo, 'RECORD'), 'utf8').split('\n').filter((line) => line !== '').map((line) => line.split(',')[0] as string);
  const shipped = record.filter((file) => file.startsWith('fsjob/'));
  const sources = readdirSync(join(PYTHON_DIR, 'fsjob')).filter((name) => name.endsWith('.py') || name.endsWith('.json')).map((name) => `fsjob/${name}`);
  assert.equal(shipped.filter((file) => !file.includes('__pycache__')).sort(), sources.sort());
  assert.ok(record.some((file) => file.endsWith('/bin/fsjob')), 'the console script');
  assert.equal(record.filter((file) => /tests\/|tools\//.test(file)), []);

  // The same parser: the same help after the usage lines (which argparse wraps by the program's name), from outside the repository.
  const outside = { ...env, PATH: `${join(venv, 'bin')}:/usr/bin:/bin` };
  const [asCommand, asModule] = await Promise.all([
    run('fsjob', ['enqueue', '--help'], { cwd: dir, env: outside, watchdogMs: WATCHDOG_MS }),
    run(join(venv, 'bin', 'python3'), ['-m', 'fsjob', 'enqueue', '--help'], { cwd: dir, env: outside, watchdogMs: WATCHDOG_MS }),
  ]);
  ok(asCommand, 'fsjob enqueue --help');
  const body = (text: string): string => text.slice(text.indexOf('\n\n'));
  assert.match(asCommand.stdout, /^usage: fsjob enqueue /);
  assert.is(body(asCommand.stdout), body(asModule.stdout));
});

pkg.run();
