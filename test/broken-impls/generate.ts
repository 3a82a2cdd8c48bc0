/**
 * `npm run gen:coverage`: writes the manifest of every sh variant and
 * conformance/COVERAGE.md. test/conformance/coverage.test.ts fails when either drifts.
 */
import { writeFileSync } from 'node:fs';
import { COVERAGE_FILE, loadClauses, loadReasons, renderCoverage } from './coverage.ts';
import { loadKills, loadVariants, shManifest } from './variants.ts';

const variants = loadVariants();
for (const variant of variants) if (variant.base === 'sh') writeFileSync(variant.manifest, shManifest(variant));
writeFileSync(COVERAGE_FILE, renderCoverage(loadClauses(), variants, loadReasons(), loadKills()));
console.log(`wrote ${variants.filter((v) => v.base === 'sh').length} manifests and ${COVERAGE_FILE}`);
