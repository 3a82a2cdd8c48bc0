/**
 * Small modules (the project's standard): no source file of src/, tools/,
 * bin/ or bench/ over 500 lines, generated code excepted (it is written by
 * tools/gen/ from schemas/ and read by nobody). The spec's files are short
 * too (issue 25): none over 2,500 words as `wc -w` counts them, and the
 * protocol's files together no longer than 1.1's one file (17,409 words).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { clauseSpans, readSpec, specDocuments } from '../support/spec-clauses.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const LIMIT = 500;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'generated' || entry.name === 'node_modules' || entry.name === 'results' ? [] : sources(path);
    return /\.(ts|mts|js|mjs|cjs|sh|c)$/.test(entry.name) ? [path] : [];
  });
}

const sizes = suite('module sizes');

sizes(`no source file of src/, tools/, bin/ or bench/ is over ${LIMIT} lines (generated code excepted)`, () => {
  const files = ['src', 'tools', 'bin', 'bench'].flatMap((dir) => sources(join(ROOT, dir)));
  assert.ok(files.length > 50, `found ${files.length} files`);
  const long = files
    .map((file) => ({ file: relative(ROOT, file), lines: readFileSync(file, 'utf8').split('\n').length - 1 }))
    .filter(({ lines }) => lines > LIMIT)
    .map(({ file, lines }) => `${file}: ${lines} lines`);
  assert.equal(long, []);
});

const words = (text: string): number => text.split(/\s+/).filter((word) => word !== '').length;

function markdown(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? markdown(join(dir, entry.name)) : entry.name.endsWith('.md') ? [join(dir, entry.name)] : [],
  );
}

sizes('no file of spec/ is over 2,500 words (wc -w)', () => {
  const files = markdown(join(ROOT, 'spec'));
  assert.ok(files.length > 15, `found ${files.length} files`);
  const long = files
    .map((file) => ({ file: relative(ROOT, file), words: words(readFileSync(file, 'utf8')) }))
    .filter((file) => file.words > 2500)
    .map(({ file, words }) => `${file}: ${words} words`);
  assert.equal(long, []);
});

/** The clauses a minor added after the re-shape (clauses.json `since`), and the files of a concern it added. */
const ADDED_SINCE = new Set(['1.2']);
const ADDED_FILES = new Set(['gates.md']);

sizes("the protocol's files together are no longer than 1.1's 17,409 words, what 1.2 added aside", () => {
  const protocol = specDocuments().filter((name) => name !== 'tools.md');
  assert.ok(protocol.length > 10, protocol.join(' '));
  const added = new Set((JSON.parse(readSpec('clauses.json')) as { id: string; since: string }[]).filter((clause) => ADDED_SINCE.has(clause.since)).map((clause) => clause.id));
  // A new feature's own text (its file, its clauses with their explanations, a table row that cites one of them) is not the re-shape's to pay for.
  const citesAdded = (line: string): boolean => line.startsWith('|') && [...line.matchAll(/\b[A-Z]+-[0-9]+\b/g)].some((match) => added.has(match[0]));
  const total = protocol
    .filter((name) => !ADDED_FILES.has(name))
    .reduce((sum, name) => {
      const text = readSpec(name);
      const spans = clauseSpans(name, text).filter((span) => added.has(span.id));
      const rows = text.split('\n').filter(citesAdded);
      return sum + words(text) - spans.reduce((n, span) => n + words(span.text), 0) - rows.reduce((n, row) => n + words(row), 0);
    }, 0);
  assert.ok(total <= 17409, `${total} words`);
});

sizes.run();
