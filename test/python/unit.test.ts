/**
 * The Python package's own unit tests (python/tests, standard library
 * unittest) and its type check (mypy --strict, when the interpreter has it).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { PYTHON, PYTHON_DIR, run } from './support.ts';

const unit = suite('fsjob for Python: unit tests and type check');

unit('python3 -m unittest passes', async () => {
  const result = await run(PYTHON, ['-m', 'unittest', 'discover', '-s', 'tests', '-t', '.'], { cwd: PYTHON_DIR, watchdogMs: 900_000 });
  const summary = result.stderr.trim().split('\n').slice(-3).join(' / ');
  assert.is(result.status, 0, `unittest failed (${summary}):\n${result.stderr.slice(-6000)}`);
  assert.match(result.stderr, /Ran [1-9][0-9]* tests/);
});

unit('mypy --strict finds nothing (skipped, saying why, when mypy is not installed)', async () => {
  const probe = await run(PYTHON, ['-m', 'mypy', '--version'], { cwd: PYTHON_DIR, watchdogMs: 120_000 });
  if (probe.status !== 0) {
    console.log(`  skipped: ${PYTHON} has no mypy (Debian: apt-get install python3-mypy): ${probe.stderr.trim().split('\n').pop() ?? ''}`);
    return;
  }
  const result = await run(PYTHON, ['-m', 'mypy', '--strict', '--python-version', '3.9', '--cache-dir', '/tmp/fsjob-py-mypy-cache', 'fsjob', 'tests', 'tools'], { cwd: PYTHON_DIR, watchdogMs: 600_000 });
  assert.is(result.status, 0, `mypy --strict:\n${result.stdout}${result.stderr}`);
});

unit.run();
