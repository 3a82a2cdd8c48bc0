/**
 * The clause coverage table and the broken variants that back it
 * (conformance/COVERAGE.md, test/broken-impls/): no drift, no clause of the
 * producer or consumer level without a killing variant or a stated reason,
 * and no variant whose kill was not proved three times in a row for its
 * current files. Running the variants is test/conformance/broken.test.ts's job
 * (a sample) and `npm run conformance:mutants`'s (all of them).
 */
import { readFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ALL_CASES } from '../../conformance/cases/index.ts';
import { loadManifest } from '../../conformance/runner/manifest.ts';
import { COVERAGE_FILE, coverageRows, isCovered, loadClauses, loadReasons, renderCoverage } from '../broken-impls/coverage.ts';
import { loadKills, loadVariants, shManifest, variantDigest } from '../broken-impls/variants.ts';

const clauses = loadClauses();
const variants = loadVariants();
const reasons = loadReasons();
const kills = loadKills();
const known = new Set(clauses.map((c) => c.id));
const covered = new Set(clauses.filter(isCovered).map((c) => c.id));
const REGENERATE = 'run npm run gen:coverage';

const table = suite('conformance/COVERAGE.md');

table('is what npm run gen:coverage writes', () => {
  assert.ok(readFileSync(COVERAGE_FILE, 'utf8') === renderCoverage(clauses, variants, reasons, kills), `conformance/COVERAGE.md drifted: ${REGENERATE}`);
});

table('every clause of the producer and consumer levels has a killing variant or a stated reason', () => {
  const missing = coverageRows(clauses, variants, reasons).filter((row) => row.coverage === 'missing' && reasons.pending[row.clause.id] === undefined);
  assert.equal(missing.map((row) => row.clause.id), [], 'add a variant (test/broken-impls/README.md) or a reason to conformance/coverage-reasons.json');
});

table('a reason or a pending note names a covered clause that has no variant', () => {
  for (const [kind, map] of [['reasons', reasons.reasons], ['pending', reasons.pending]] as const) {
    for (const id of Object.keys(map)) {
      assert.ok(covered.has(id), `coverage-reasons.json ${kind}: ${id} is not a clause of the producer or consumer level`);
      const killing = variants.filter((v) => v.clause === id).map((v) => v.name);
      assert.equal(killing, [], `coverage-reasons.json ${kind}: ${id} is killed by ${killing.join(', ')}; remove the entry`);
    }
    if (kind === 'pending') for (const id of Object.keys(map)) assert.ok(reasons.reasons[id] === undefined, `${id} is both reasoned and pending`);
  }
});

table.run();

const broken = suite('test/broken-impls');

broken('each variant breaks one known clause and names cases that check it', () => {
  const byName = new Map(ALL_CASES.map((c) => [c.name, c]));
  for (const variant of variants) {
    assert.ok(known.has(variant.clause), `${variant.name}: ${variant.clause} is not a clause of the spec`);
    for (const name of variant.cases) {
      const c = byName.get(name);
      assert.ok(c !== undefined, `${variant.name}: no case ${name}`);
      assert.ok(c.clauses.includes(variant.clause), `${variant.name}: ${name} does not list ${variant.clause} among its clauses [${c.clauses.join(' ')}]`);
    }
  }
});

broken('each sh variant has the generated manifest, which the runner accepts', () => {
  for (const variant of variants.filter((v) => v.base === 'sh')) {
    let text = '';
    try {
      text = readFileSync(variant.manifest, 'utf8');
    } catch {
      assert.unreachable(`${variant.name}: no manifest.json: ${REGENERATE}`);
    }
    assert.ok(text === shManifest(variant), `${variant.name}/manifest.json drifted: ${REGENERATE}`);
    const manifest = loadManifest(variant.manifest);
    for (const name of variant.cases) {
      const c = ALL_CASES.find((k) => k.name === name);
      const lacking = (c?.roles ?? []).filter((role) => manifest.roles[role] === undefined);
      assert.equal(lacking, [], `${variant.name}: ${name} needs roles the sh implementation lacks`);
    }
  }
});

broken('each variant was killed three times in a row with its current files', () => {
  for (const variant of variants) {
    const record = kills[variant.name];
    const rerun = `run npm run conformance:mutants -- ${variant.name}`;
    assert.ok(record !== undefined, `${variant.name}: no kill recorded in kills.json: ${rerun}`);
    assert.is(record.digest, variantDigest(variant), `${variant.name} changed since its kill was recorded: ${rerun}`);
    assert.ok(record.runs >= 3 && record.killed === record.runs, `${variant.name}: killed in ${record.killed} of ${record.runs} runs; it must be killed in 3 of 3`);
  }
  for (const name of Object.keys(kills)) assert.ok(variants.some((v) => v.name === name), `kills.json names ${name}, which is not a variant`);
});

broken.run();

const edits = suite('test/broken-impls edits.sed');

edits('every line of every edits.sed changes the sh library (a stale edit would leave the variant unbroken)', async () => {
  const { execFileSync } = await import('node:child_process');
  const { existsSync } = await import('node:fs');
  const path = await import('node:path');
  const lib = ['json', 'fs', 'ident', 'records', 'holds', 'jobs', 'gates', 'producer', 'runner', 'consumer', 'control'].map((m) => new URL(`../../conformance/impls/sh/lib/${m}.sh`, import.meta.url).pathname);
  const text = lib.map((file) => readFileSync(file, 'utf8')).join('');
  for (const variant of variants) {
    const file = path.join(variant.dir, 'edits.sed');
    if (!existsSync(file)) continue;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (line.trim() === '' || line.startsWith('#')) continue;
      const out = execFileSync('sed', ['-e', line], { input: text, maxBuffer: 64 * 1024 * 1024 }).toString('utf8');
      assert.ok(out !== text, `${variant.name}/edits.sed: this line changes nothing in conformance/impls/sh/lib: ${line}`);
    }
  }
});

edits.run();
