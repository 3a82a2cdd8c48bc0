/**
 * Shared by the conformance test files: run the suite in this process and
 * turn MUST failures into one readable assertion message.
 */
import { formatCase } from '../../conformance/runner/report.ts';
import type { CaseResult } from '../../conformance/runner/report.ts';
// The reference's manifest starts bin/fsjob.js: a current dist/ keeps that fast (see cli.ts).
import './cli.ts';

export function mustFailures(results: readonly CaseResult[]): CaseResult[] {
  return results.filter((result) => result.status === 'fail' && result.strength === 'MUST');
}

export function explain(results: readonly CaseResult[]): string {
  return results.flatMap((result) => formatCase(result)).join('\n');
}
