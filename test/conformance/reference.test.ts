import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { runConformance } from '../../conformance/runner/run.ts';
import { explain, mustFailures } from '../support/conformance.ts';

const reference = suite('fsjob conformance: the reference implementation');

reference('passes every MUST case, with a quick crash sweep and the quick power-loss sample', async () => {
  const { results, report } = await runConformance({ crash: 'quick', power: 'quick' });
  const failed = mustFailures(results);
  assert.is(failed.length, 0, `MUST failures:\n${explain(failed)}`);
  assert.ok(report.summary.crash_points > 0, 'crash points were checked');
  assert.equal(results.filter((r) => r.name.startsWith('power/') && r.status === 'ok').map((r) => r.name).sort(), ['power/cancel', 'power/consume', 'power/gates', 'power/produce', 'power/release', 'power/slots'], 'the power-loss cases ran and passed');
  assert.ok(report.summary.passed > 30, `${report.summary.passed} cases passed`);
});

reference.run();
