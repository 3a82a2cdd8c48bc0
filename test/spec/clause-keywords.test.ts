/**
 * Re-shaping the spec (1.1's one file into 1.2's files, issue 25) moved
 * every clause and tightened its wording; it must not lose a clause or
 * change what one requires. test/spec/clauses-1.1.json holds each clause of
 * 1.1 (spec/fsjob-v1.md and spec/tools.md at commit 688effc) with the RFC 2119
 * key words its text used (up to the next clause or heading, its unnumbered
 * steps included), read by test/support/spec-clauses.ts as this test reads
 * today's text: a clause that disappears, or whose MUST became a SHOULD, or
 * that lost its MAY or its MUST NOT, fails here by id.
 */
import { readFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { clauseSpans, keywordsOf, readSpec, specDocuments } from '../support/spec-clauses.ts';

const before = (JSON.parse(readFileSync(new URL('clauses-1.1.json', import.meta.url), 'utf8')) as { clauses: Record<string, string[]> }).clauses;
const now = new Map(specDocuments().flatMap((document) => clauseSpans(document, readSpec(document))).map((clause) => [clause.id, clause] as const));

/**
 * Key words 1.1's text used only in a history note, which moved to
 * spec/CHANGES.md: they were never a requirement of the clause.
 */
const HISTORY: Record<string, { word: string; note: string }> = {
  'LANE-4': { word: 'SHOULD', note: 'LANE-4 was a SHOULD in 1.0' },
};

const keywords = suite('clause ids and key words kept from 1.1');

keywords('the 1.1 snapshot is whole (168 clauses, each with a key word)', () => {
  assert.is(Object.keys(before).length, 168);
  for (const [id, words] of Object.entries(before)) assert.ok(words.length > 0, id);
});

keywords('every clause of 1.1 is still defined, exactly once', () => {
  const lost = Object.keys(before).filter((id) => !now.has(id));
  assert.equal(lost, [], `clauses lost: ${lost.join(' ')}`);
});

keywords('every clause of 1.1 keeps its RFC 2119 key words', () => {
  const changed = Object.entries(before)
    .map(([id, words]) => [id, words.filter((word) => HISTORY[id]?.word !== word)] as const)
    .filter(([id, words]) => JSON.stringify(keywordsOf(now.get(id)?.text ?? '')) !== JSON.stringify(words))
    .map(([id, words]) => `${id}: ${words.join('+')} -> ${keywordsOf(now.get(id)?.text ?? '').join('+')} (${now.get(id)?.document ?? 'gone'})`);
  assert.equal(changed, []);
});

keywords('each key word set aside as history is in spec/CHANGES.md, and gone from the rule', () => {
  const changes = readSpec('CHANGES.md').replace(/\s+/g, ' ');
  for (const [id, { word, note }] of Object.entries(HISTORY)) {
    assert.ok(changes.includes(note), `${id}: "${note}" is not in spec/CHANGES.md`);
    assert.not.ok(keywordsOf(now.get(id)?.text ?? '').includes(word), id);
  }
});

keywords.run();
