/**
 * The power-loss mode (`--crash power`) sees a missing fsync that no kill
 * can: each durability variant of fsjob-sh (test/broken-impls/) is failed
 * by the quick sample, its clause named first, on every run (the states
 * come from one trace, deterministically). Each runs its cheapest killing
 * case here; `npm run conformance:mutants` runs all of them, three times.
 * The reference and fsjob-sh pass the mode in reference.test.ts and
 * sh.test.ts.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Pool } from '../../conformance/runner/pool.ts';
import { DEFAULT_PARALLEL } from '../../conformance/runner/run.ts';
import { explain } from '../support/conformance.ts';
import { loadVariants, runVariant, type VariantRun } from '../broken-impls/variants.ts';

const CHEAPEST: Record<string, string> = {
  'pub-2-link-without-file-fsync': 'power/cancel',
  'pub-5-link-without-dir-fsync': 'power/cancel',
  'enq-4-rename-without-jobs-fsync': 'power/produce',
};

const variants = loadVariants().filter((v) => v.name in CHEAPEST);
const pool = new Pool(DEFAULT_PARALLEL);
const runs = new Map<string, Promise<VariantRun>>();
for (const variant of variants) {
  const cheapest = CHEAPEST[variant.name] as string;
  const run = runVariant({ ...variant, cases: [cheapest] }, { pool });
  run.catch(() => undefined); // reported by its own test
  runs.set(variant.name, run);
}

const power = suite('--crash power kills the durability variants');

power('the three durability variants exist and each names the power-loss case that kills it', () => {
  assert.equal(variants.map((v) => v.name).sort(), Object.keys(CHEAPEST).sort());
  for (const variant of variants) {
    assert.is(variant.crash, 'power', `${variant.name} is killed by --crash power`);
    assert.ok(variant.cases.includes(CHEAPEST[variant.name] as string), `${variant.name} lists ${CHEAPEST[variant.name]}`);
  }
});

for (const variant of variants) {
  power(`${variant.name} (${variant.clause}) fails ${CHEAPEST[variant.name]} naming ${variant.clause} first`, async () => {
    const run = await (runs.get(variant.name) as Promise<VariantRun>);
    assert.ok(run.killed, `${variant.name} was not killed:\n${run.problems.join('\n')}\n${explain(run.results.filter((r) => r.status !== 'ok'))}`);
  });
}

power.run();

// ---------------------------------------------------------------------------
const cli = suite('--crash on the command line');

cli('takes a kill mode, a power-loss mode, or one of each', async () => {
  const { crashModes } = await import('../../conformance/runner/command-run.ts');
  assert.equal(crashModes(['none']), { crash: 'none', power: 'none' });
  assert.equal(crashModes(['quick']), { crash: 'quick', power: 'none' });
  assert.equal(crashModes(['power']), { crash: 'none', power: 'quick' });
  assert.equal(crashModes(['full', 'power-full']), { crash: 'full', power: 'full' });
  for (const bad of [['quick', 'full'], ['power', 'power-full'], ['none', 'power']]) {
    assert.throws(() => crashModes(bad), (error: Error & { code?: string }) => error.code === 'USAGE', bad.join(' '));
  }
});

cli.run();
