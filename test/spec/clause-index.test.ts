/**
 * test/CLAUSES.md is what tools/gen/clause-index.ts makes of the clauses,
 * the tests and the conformance cases now (run `npm run gen:clauses`), and
 * every MUST clause of protocol 1.0 is cited by a test or a case. The MUST
 * clauses 1.1 added are listed there until their implementation and cases
 * (issue 13) cite them.
 */
import { readFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { CLAUSE_INDEX_PATH, citations, renderClauseIndex, uncited } from '../../tools/gen/clause-index.ts';

const index = suite('the clause index');

index('test/CLAUSES.md is current (npm run gen:clauses)', () => {
  const rows = citations();
  assert.ok(rows.length > 100, `${rows.length} clauses`);
  assert.ok(readFileSync(CLAUSE_INDEX_PATH, 'utf8') === renderClauseIndex(rows), 'test/CLAUSES.md drifted: run npm run gen:clauses and commit it');
});

index('every MUST clause of 1.0 is cited by at least one test or conformance case', () => {
  assert.equal(uncited(citations()).since10, []);
});

index.run();
