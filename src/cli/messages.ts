/**
 * Operator messages without spec clause ids.
 *
 * The library cites the clause a refusal enforces ("... (EXEC-5)"), which is
 * what a test, a validator report or an implementer wants. An operator who
 * typed `fsjob enqueue --cwd /tmp` wants the sentence; `--verbose` (or the
 * commands about the spec itself: validate, conformance) keeps the ids.
 */
import type { CliIo } from './command.ts';

const ID = String.raw`[A-Z][A-Z0-9]*-[0-9]+(?:\.[0-9]+)?`;
const IDS = String.raw`${ID}(?:(?:,\s*|\s+and\s+|\s*/\s*)${ID})*`;
/** " (EXEC-5)", " (ENQ-1, REC-5)": a parenthesis that holds only clause ids. */
const ONLY_IDS = new RegExp(String.raw`\s*\(${IDS}\)`, 'g');
/** "(LAYOUT-4: 19 digits ...)", "(ENQ-1, REC-5, ...": ids leading a parenthesis that says more. */
const LEADING_IDS = new RegExp(String.raw`\(${IDS}(?::\s*|,\s*)`, 'g');
/** ", LEASE-3)" or " and RECOV-1)": ids trailing a parenthesis that said something first. */
const TRAILING_IDS = new RegExp(String.raw`(?:,\s*|;\s*)${IDS}\)`, 'g');

/** The message with clause ids removed; everything else unchanged. */
export function withoutClauseIds(text: string): string {
  return text.replace(ONLY_IDS, '').replace(LEADING_IDS, '(').replace(TRAILING_IDS, ')');
}

/**
 * An io whose standard error (messages) loses its clause ids. Standard output
 * is data (tables, JSON, a job's bytes) and is left alone: a command strips
 * the ids from the sentences it prints there itself.
 */
export function plainIo(io: CliIo): CliIo {
  return { ...io, stderr: (text) => io.stderr(withoutClauseIds(text)) };
}
