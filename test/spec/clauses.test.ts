import { readFileSync, readdirSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { FINDING_CODES } from '../../src/records/findings.ts';
import { schemaDocuments } from '../../src/records/schemas.ts';
import { clauseTexts, readSpec, specDocuments, strongestKeyword } from '../support/spec-clauses.ts';

const DOCUMENTS = specDocuments();
const texts = new Map(DOCUMENTS.map((name) => [name, readSpec(name)] as const));
const prose = [...texts.values()].join('\n');

interface Clause {
  id: string;
  keyword: string;
  levels: string[];
  feature?: string;
  since: string;
  document: string;
  summary: string;
}
const clauses = JSON.parse(readFileSync(new URL('../../spec/clauses.json', import.meta.url), 'utf8')) as Clause[];
const known = new Set(clauses.map((clause) => clause.id));

const segments = DOCUMENTS.flatMap((name) => clauseTexts(name, texts.get(name) ?? ''));
const defined = segments.map((segment) => segment.id);

// Citations are words like CLAIM-6 whose prefix is a clause family (not SHA-256, UTF-8).
const families = new Set(defined.map((id) => id.split('-')[0]));
const citationsIn = (text: string): string[] =>
  [...text.matchAll(/\b([A-Z]{2,})-([0-9]+)\b/g)].filter((match) => families.has(match[1])).map((match) => `${match[1]}-${match[2]}`);

const ids = suite('spec/clauses.json');

ids('lists exactly the clause ids the prose defines, in document order (the files of spec/README.md, protocol then tools)', () => {
  assert.equal(
    clauses.map((clause) => clause.id),
    defined,
  );
});

ids('names the document that defines each clause', () => {
  for (const [index, clause] of clauses.entries()) assert.is(clause.document, segments[index]?.document, clause.id);
});

ids('no clause id is defined twice', () => {
  assert.is(new Set(defined).size, defined.length);
});

ids('every clause states its requirement with an RFC 2119 key word', () => {
  const without = segments.filter((segment) => strongestKeyword(segment.text) === undefined).map((segment) => segment.id);
  assert.equal(without, [], `clauses without MUST, SHOULD or MAY: ${without.join(' ')}`);
});

ids('each clause has the key word level of its text (the strongest key word it uses)', () => {
  for (const [index, clause] of clauses.entries()) {
    assert.ok(['MUST', 'SHOULD', 'MAY'].includes(clause.keyword), clause.id);
    assert.is(clause.keyword, strongestKeyword(segments[index]?.text ?? ''), clause.id);
  }
});

ids('every clause has conformance levels, a known feature, a version and a one-line summary', () => {
  const features = new Set(['dedupe', 'lanes', 'slots', 'preemption', 'gates', 'payload', 'workers', 'policy']);
  for (const clause of clauses) {
    assert.ok(clause.levels.length > 0, clause.id);
    for (const level of clause.levels) assert.ok(['producer', 'consumer', 'validator', 'tool'].includes(level), `${clause.id}: ${level}`);
    assert.is(clause.levels.includes('tool'), clause.document === 'tools.md' && clause.id.startsWith('MANIFEST-'), clause.id);
    if (clause.feature !== undefined) assert.ok(features.has(clause.feature), `${clause.id}: ${clause.feature}`);
    assert.ok(['1.0', '1.1', '1.2'].includes(clause.since), clause.id);
    assert.ok(clause.summary.length > 10 && !clause.summary.includes('\n'), clause.id);
  }
});

ids('the clauses added in 1.1 and 1.2 are the ones spec/CHANGES.md lists, and the rules carry no history', () => {
  const changes = readSpec('CHANGES.md').replace(/\s+/g, ' ');
  for (const version of ['1.1', '1.2']) {
    const listed = new RegExp(`Clauses added in ${version.replace('.', '\\.')} \\(clauses\\.json \`since\`\\): ([^.]*)\\.`).exec(changes)?.[1]?.split(', ') ?? [];
    assert.equal(listed, clauses.filter((clause) => clause.since === version).map((clause) => clause.id), `CHANGES.md lists the clauses of ${version} in document order`);
  }
  for (const segment of segments) assert.not.match(segment.text, /\(1\.[0-9]+[):]|\b1\.0 said\b|\bin 1\.0\b/, `${segment.id} carries a history note: it belongs in spec/CHANGES.md`);
});

ids('every feature of clauses.json is a feature of the conformance section of spec/README.md', () => {
  const section = (texts.get('README.md') ?? '').split('## Conformance levels and profiles')[1] ?? '';
  for (const clause of clauses.filter((c) => c.feature !== undefined)) {
    assert.ok(section.includes(`\`${clause.feature}\``), `${clause.id}: feature ${clause.feature} is not in spec/README.md's conformance section`);
  }
});

ids('every clause the prose cites exists', () => {
  const cited = new Set(citationsIn(prose));
  // Ranges and wildcards (PUB-1..PUB-5, DEDUPE-1..4, INIT-*) name existing ids too.
  for (const id of cited) assert.ok(known.has(id), `${id} is cited but not defined`);
});

ids.run();

const cites = suite('clause citations');

cites('every finding code cites a clause that exists', () => {
  for (const [code, spec] of Object.entries(FINDING_CODES)) assert.ok(known.has(spec.clause), `${code} cites ${spec.clause}`);
});

cites('every schema rule that names a clause names one that exists', () => {
  for (const [name, document] of schemaDocuments()) {
    for (const id of citationsIn(JSON.stringify(document))) assert.ok(known.has(id), `${name}.schema.json cites ${id}`);
  }
});

cites('every vector case cites a clause that exists', () => {
  const dir = new URL('../../conformance/vectors/', import.meta.url);
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.json'))) {
    const { tests } = JSON.parse(readFileSync(new URL(file, dir), 'utf8')) as { tests: { clause: string }[] };
    for (const test of tests) assert.ok(known.has(test.clause), `${file}: ${test.clause}`);
  }
});

cites.run();

const described = suite('spec describes the schemas');

/** Every member name a schema defines through `properties`, at any depth. */
function memberNames(node: unknown, out: Set<string>): Set<string> {
  if (Array.isArray(node)) for (const item of node) memberNames(item, out);
  else if (typeof node === 'object' && node !== null) {
    for (const [key, value] of Object.entries(node)) {
      if (key === 'properties' && typeof value === 'object' && value !== null) for (const name of Object.keys(value)) out.add(name);
      memberNames(value, out);
    }
  }
  return out;
}

described('every member of the record, request, manifest and report schemas appears in the spec text', () => {
  for (const [name, document] of schemaDocuments()) {
    if (name === 'vector-case') continue; // described by conformance/vectors/README.md
    for (const member of memberNames(document, new Set())) {
      assert.ok(prose.includes(`\`${member}\``) || prose.includes(`"${member}"`), `${name}.schema.json: member ${member} is not in the spec's text (spec/README.md's files)`);
    }
  }
});

described('every member of the vector case schema appears in conformance/vectors/README.md', () => {
  const readme = readFileSync(new URL('../../conformance/vectors/README.md', import.meta.url), 'utf8');
  const document = schemaDocuments().get('vector-case');
  for (const member of memberNames(document, new Set())) assert.ok(readme.includes(`\`${member}\``), member);
});

described.run();
