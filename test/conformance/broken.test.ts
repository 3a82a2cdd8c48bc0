/**
 * The suite must catch what it claims to catch: each deliberately broken
 * variant of fsjob-sh (test/broken-impls/) fails, and the failure names the
 * clause the variant breaks. Only the relevant cases run, to keep this fast.
 */
import { fileURLToPath } from 'node:url';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { runConformance } from '../../conformance/runner/run.ts';
import { explain } from '../support/conformance.ts';

const manifest = (variant: string): string => fileURLToPath(new URL(`../broken-impls/${variant}/manifest.json`, import.meta.url));

interface Expectation {
  variant: string;
  what: string;
  only: string[];
  cases?: string[];
  /** Every one of these must appear together in one failure. */
  names: string[];
  root?: boolean;
}

const EXPECTED: Expectation[] = [
  { variant: '1-publish-in-place', what: 'records written in place, without temp file and link', only: ['PUB-3'], cases: ['audit/publication'], names: ['PUB-3', 'I1'] },
  { variant: '2-kill-zero-liveness', what: 'owners judged by kill -0, not by their start time', only: ['ID-6'], cases: ['identity/reused-pid'], names: ['ID-6', 'I5'], root: true },
  { variant: '3-follow-symlinks', what: 'a symlinked record read through', only: ['SEC-2'], cases: ['hostile/job-entries'], names: ['SEC-2', 'I6'] },
  { variant: '4-receipt-before-outputs', what: 'the receipt published before its outputs are written and fsynced', only: ['RCPT-2'], cases: ['audit/publication'], names: ['RCPT-2', 'I4'] },
  { variant: '5-check-then-claim', what: 'claims taken by check-then-create instead of an exclusive link', only: ['CLAIM-5'], cases: ['audit/publication'], names: ['CLAIM-5', 'I2'] },
];

const broken = suite('fsjob conformance catches broken implementations');

for (const expectation of EXPECTED) {
  broken(`${expectation.variant} (${expectation.what}) fails naming ${expectation.names.join(' and ')}`, async () => {
    if (expectation.root === true && process.geteuid?.() !== 0) return; // the case needs root (ns_last_pid)
    const { results, report } = await runConformance({ impl: manifest(expectation.variant), only: expectation.only, ...(expectation.cases === undefined ? {} : { cases: expectation.cases }) });
    assert.ok(report.summary.must_failed > 0, `the suite passed a broken implementation:\n${explain(results)}`);
    const failures = results.flatMap((result) => result.failures);
    const named = failures.some((failure) => expectation.names.every((clause) => failure.clauses.includes(clause)));
    assert.ok(named, `no failure names ${expectation.names.join(' and ')}:\n${explain(results.filter((r) => r.status === 'fail'))}`);
  });
}

broken.run();
