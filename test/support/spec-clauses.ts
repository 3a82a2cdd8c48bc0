/**
 * How the tests read clauses out of the spec's prose: a clause is the text
 * from its marker (`**[CLAIM-3]**`) to the next marker, heading or numbered
 * list item (a step without an id is not part of the clause before it), and
 * its key words are the RFC 2119 words it uses outside code spans.
 */
import { readFileSync } from 'node:fs';

export interface ClauseText {
  id: string;
  document: string;
  text: string;
}

const MARKER = /\*\*\[([A-Z]+-[0-9]+)\]\*\*/g;

export function clauseTexts(document: string, text: string): ClauseText[] {
  const marks = [...text.matchAll(MARKER)];
  return marks.map((mark, index) => {
    const from = (mark.index ?? 0) + mark[0].length;
    const next = marks[index + 1]?.index ?? text.length;
    const rest = text.slice(from, next);
    const stop = /^#{1,6} |^ {0,3}[0-9]+\. /m.exec(rest);
    return { id: mark[1] ?? '', document, text: stop === null ? rest : rest.slice(0, stop.index) };
  });
}

/**
 * A clause with everything that belongs to it: from its marker to the next
 * marker or heading, so that the unnumbered steps of a clause that opens a
 * list (RECOV-1's three, CLAIM-6's ten) and the explanation after it count.
 */
export function clauseSpans(document: string, text: string): ClauseText[] {
  const marks = [...text.matchAll(MARKER)];
  return marks.map((mark, index) => {
    const rest = text.slice((mark.index ?? 0) + mark[0].length, marks[index + 1]?.index ?? text.length);
    return { id: mark[1] ?? '', document, text: rest.split(/^#{1,6} /m)[0] ?? '' };
  });
}

/** The RFC 2119 key words a clause uses, normalised (SHALL and REQUIRED are MUST, RECOMMENDED is SHOULD, OPTIONAL is MAY), sorted. */
export function keywordsOf(text: string): string[] {
  const words = text.replace(/`[^`]*`/g, '');
  const found = new Set<string>();
  for (const match of words.matchAll(/\b(MUST NOT|MUST|SHALL NOT|SHALL|REQUIRED|SHOULD NOT|SHOULD|NOT RECOMMENDED|RECOMMENDED|MAY|OPTIONAL)\b/g)) {
    const word = match[1] ?? '';
    found.add(
      { SHALL: 'MUST', 'SHALL NOT': 'MUST NOT', REQUIRED: 'MUST', RECOMMENDED: 'SHOULD', 'NOT RECOMMENDED': 'SHOULD NOT', OPTIONAL: 'MAY' }[word] ?? word,
    );
  }
  return [...found].sort();
}

/** The strongest RFC 2119 key word of a clause's text. */
export function strongestKeyword(text: string): 'MUST' | 'SHOULD' | 'MAY' | undefined {
  const words = keywordsOf(text);
  if (words.some((word) => word.startsWith('MUST'))) return 'MUST';
  if (words.some((word) => word.startsWith('SHOULD'))) return 'SHOULD';
  if (words.includes('MAY')) return 'MAY';
  return undefined;
}

const SPEC = new URL('../../spec/', import.meta.url);

/**
 * The spec's documents in reading order: README.md, then every file a row
 * of its "Files" table names (protocol files, then tools.md), which is the
 * order of spec/clauses.json.
 */
export function specDocuments(): string[] {
  const readme = readFileSync(new URL('README.md', SPEC), 'utf8');
  const section = readme.split(/^## Files$/m)[1]?.split(/^## /m)[0] ?? '';
  const linked = [...section.matchAll(/^\| \[[^\]]+\]\(([a-z0-9-]+\.md)\) \|/gm)].map((match) => match[1] ?? '');
  return ['README.md', ...new Set(linked.filter((name) => name !== 'README.md'))];
}

export function readSpec(document: string): string {
  return readFileSync(new URL(document, SPEC), 'utf8');
}
