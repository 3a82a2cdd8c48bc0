/**
 * The suite must catch what it claims to catch: a sample of the broken
 * variants of test/broken-impls/ (the cheapest of every clause family, by
 * their last mutant run) runs here, and each must be killed: every case it
 * names fails, its first failure naming the variant's clause first.
 * `npm run conformance:mutants` runs every variant, three times in a row.
 *
 * The sample runs through one shared pool, so several variants' cases
 * overlap; each test awaits its own variant.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Pool } from '../../conformance/runner/pool.ts';
import { DEFAULT_PARALLEL } from '../../conformance/runner/run.ts';
import { explain } from '../support/conformance.ts';
import { familyOf, loadKills, loadVariants, runVariant, sampleVariants, type VariantRun } from '../broken-impls/variants.ts';

const sample = sampleVariants(loadVariants(), loadKills());
const pool = new Pool(DEFAULT_PARALLEL);
const root = process.geteuid?.() === 0;
// Started together, awaited one by one: the pool bounds the work.
const runs = new Map<string, Promise<VariantRun>>();
for (const variant of sample) {
  const run = runVariant(variant, { pool });
  run.catch(() => undefined); // reported by its own test, not as an unhandled rejection before it
  runs.set(variant.name, run);
}

const broken = suite('fsjob conformance kills broken implementations (one per clause family)');

for (const variant of sample) {
  broken(`${familyOf(variant.clause)}: ${variant.name} (${variant.bug}) fails naming ${variant.clause} first`, async () => {
    const run = await (runs.get(variant.name) as Promise<VariantRun>);
    const skippedForRoot = !root && run.results.some((r) => r.status === 'skip' && (r.note ?? '').includes('root'));
    if (skippedForRoot) {
      console.log(`  ${variant.name}: its case needs root; not checked`);
      return;
    }
    assert.ok(run.killed, `${variant.name} was not killed:\n${run.problems.join('\n')}\n${explain(run.results.filter((r) => r.status !== 'ok'))}`);
  });
}

broken.run();
