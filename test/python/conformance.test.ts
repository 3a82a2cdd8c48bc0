/**
 * The Python implementation (conformance/impls/python) against the whole
 * suite, in one run with every mode of npm test combined: every case, the
 * quick crash sweep, the quick power-loss sample and every record vector.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { runConformance } from '../../conformance/runner/run.ts';
import { explain, mustFailures } from '../support/conformance.ts';
import { PY_MANIFEST } from './support.ts';

const conformance = suite('fsjob conformance: the Python implementation');

conformance('passes every MUST case, with a quick crash sweep, the quick power-loss sample and every vector', async () => {
  const { results, report } = await runConformance({ impl: PY_MANIFEST, crash: 'quick', power: 'quick', allVectors: true });
  const failed = mustFailures(results);
  assert.is(failed.length, 0, `MUST failures:\n${explain(failed)}`);
  assert.ok(report.summary.crash_points > 0, 'crash points were checked');
  assert.equal(results.filter((r) => r.name.startsWith('power/') && r.status === 'ok').map((r) => r.name).sort(), ['power/cancel', 'power/consume', 'power/produce'], 'the power-loss cases ran and passed');
  assert.ok(results.some((r) => r.name.startsWith('interop/') && r.status === 'ok'), 'interoperability with the reference was checked');
  assert.ok(results.some((r) => r.name.startsWith('vectors/') && r.status === 'ok'), 'the vectors ran');
});

conformance.run();
