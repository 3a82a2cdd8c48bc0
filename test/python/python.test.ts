/**
 * fsjob for Python (python/, conformance/impls/python) in npm test:
 *
 * - its own unit tests (standard library unittest), again under the oldest
 *   Python it supports (3.9) when one is installed, and, when the interpreter
 *   has mypy, `mypy --strict` over the package, its tests and tools;
 * - the conformance suite against its manifest: every case of the profile it
 *   claims, the quick crash sweep, the quick power-loss sample and every
 *   record vector;
 * - interoperability with the reference both ways, and a mixed pool of one
 *   reference and one Python worker draining POOL_JOBS jobs.
 *
 * The unit tests, the type check and the conformance run spend most of their
 * time waiting (for kill points, leases, child processes), so they start
 * together before the interop scenarios and are awaited after them: the file
 * costs about as long as its longest part (the conformance run), not the sum.
 * Every part has a watchdog; none asserts a time.
 */
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { runConformance } from '../../conformance/runner/run.ts';
import { explain, mustFailures } from '../support/conformance.ts';
import { mixedPool, pythonProducesReferenceConsumes, referenceProducesPythonConsumes } from './interop.ts';
import { PY_MANIFEST, PYTHON, PYTHON_DIR, run, type Run } from './support.ts';

/** The number (issue 17): 500 jobs, one start and one receipt each. */
const POOL_JOBS = 500;
const WATCHDOG_MS = 900_000;

const python = suite('fsjob for Python');

/** A Python 3.9 interpreter: FSJOB_PYTHON39, else python3.9 on a system path, else one a version manager installed. */
function python39(): string | undefined {
  const named = process.env['FSJOB_PYTHON39'];
  if (named !== undefined && named !== '') return named;
  for (const candidate of ['/usr/bin/python3.9', '/usr/local/bin/python3.9']) if (existsSync(candidate)) return candidate;
  const versions = path.join(homedir(), '.pyenv', 'versions');
  const found = existsSync(versions) ? readdirSync(versions).filter((name) => /^3\.9\.[0-9]+$/.test(name)).sort() : [];
  const last = found.at(-1);
  return last === undefined ? undefined : path.join(versions, last, 'bin', 'python3');
}

let background: {
  unit: Promise<Run>;
  unit39: Promise<Run | { skipped: string }>;
  mypy: Promise<Run | { skipped: string }>;
  conformance: ReturnType<typeof runConformance>;
} | undefined;

python.before(() => {
  const unit = run(PYTHON, ['-m', 'unittest', 'discover', '-s', 'tests', '-t', '.'], { cwd: PYTHON_DIR, watchdogMs: WATCHDOG_MS });
  const old = python39();
  const unit39 = old === undefined || !existsSync(old)
    ? Promise.resolve({ skipped: 'no Python 3.9 found (FSJOB_PYTHON39, /usr/bin/python3.9, ~/.pyenv/versions/3.9.*)' })
    : run(old, ['-m', 'unittest', 'discover', '-s', 'tests', '-t', '.'], { cwd: PYTHON_DIR, watchdogMs: WATCHDOG_MS });
  const mypy = run(PYTHON, ['-m', 'mypy', '--version'], { cwd: PYTHON_DIR, watchdogMs: 120_000 }).then((probe): Run | { skipped: string } | Promise<Run> =>
    probe.status !== 0
      ? { skipped: `${PYTHON} has no mypy (Debian: apt-get install python3-mypy): ${probe.stderr.trim().split('\n').pop() ?? ''}` }
      : run(PYTHON, ['-m', 'mypy', '--strict', '--python-version', '3.9', '--cache-dir', path.join(tmpdir(), 'fsjob-py-mypy-cache'), 'fsjob', 'tests', 'tools'], { cwd: PYTHON_DIR, watchdogMs: 600_000 }),
  );
  const conformance = runConformance({ impl: PY_MANIFEST, crash: 'quick', power: 'quick', allVectors: true });
  // Awaited by their own tests below; an early rejection must not be reported as unhandled first.
  for (const part of [unit, unit39, mypy, conformance]) part.catch(() => undefined);
  background = { unit, unit39, mypy, conformance };
});

async function inBase(scenario: (base: string) => Promise<void>): Promise<void> {
  const base = mkdtempSync(path.join(tmpdir(), 'fsjob-py-interop-'));
  chmodSync(base, 0o700);
  try {
    await scenario(base);
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

python('interop: Python produces and the reference worker consumes', () => inBase(pythonProducesReferenceConsumes));

python('interop: the reference produces and a Python worker consumes', () => inBase(referenceProducesPythonConsumes));

python(`interop: a pool of one reference and one Python worker drains ${POOL_JOBS} jobs, one start and one receipt each`, () =>
  inBase(async (base) => {
    const by = await mixedPool(base, POOL_JOBS);
    console.log(`  ${POOL_JOBS} jobs: ${POOL_JOBS} starts, ${POOL_JOBS} receipts (reference worker ${by.reference}, Python worker ${by.python})`);
  }),
);

python('python3 -m unittest passes', async () => {
  const result = await (background as NonNullable<typeof background>).unit;
  const summary = result.stderr.trim().split('\n').slice(-3).join(' / ');
  assert.is(result.status, 0, `unittest failed (${summary}):\n${result.stderr.slice(-6000)}`);
  assert.match(result.stderr, /Ran [1-9][0-9]* tests/);
});

python('the unit tests pass under Python 3.9, the oldest it supports (skipped, saying why, without one)', async () => {
  const result = await (background as NonNullable<typeof background>).unit39;
  if ('skipped' in result) {
    console.log(`  skipped: ${result.skipped}`);
    return;
  }
  assert.is(result.status, 0, `unittest under Python 3.9 failed:\n${result.stderr.slice(-6000)}`);
  assert.match(result.stderr, /Ran [1-9][0-9]* tests/);
});

python('mypy --strict finds nothing (skipped, saying why, when mypy is not installed)', async () => {
  const result = await (background as NonNullable<typeof background>).mypy;
  if ('skipped' in result) {
    console.log(`  skipped: ${result.skipped}`);
    return;
  }
  assert.is(result.status, 0, `mypy --strict:\n${result.stdout}${result.stderr}`);
});

python('conformance: every case of its profile, a quick crash sweep, the quick power-loss sample and every vector', async () => {
  const { results, report } = await (background as NonNullable<typeof background>).conformance;
  const failed = mustFailures(results);
  assert.is(failed.length, 0, `MUST failures:\n${explain(failed)}`);
  assert.ok(report.summary.crash_points > 0, 'crash points were checked');
  assert.equal(results.filter((r) => r.name.startsWith('power/') && r.status === 'ok').map((r) => r.name).sort(), ['power/cancel', 'power/consume', 'power/gates', 'power/produce', 'power/release', 'power/slots'], 'the power-loss cases ran and passed');
  assert.ok(results.some((r) => r.name.startsWith('interop/') && r.status === 'ok'), 'interoperability with the reference was checked');
  assert.ok(results.some((r) => r.name.startsWith('vectors/') && r.status === 'ok'), 'the vectors ran');
});

python.run();
