import { readFileSync, readdirSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { FINDING_CODES } from '../../src/records/findings.ts';
import { schemaDocuments } from '../../src/records/schemas.ts';

const prose = readFileSync(new URL('../../spec/fsjob-v1.md', import.meta.url), 'utf8');
interface Clause {
  id: string;
  level: string;
  summary: string;
}
const clauses = JSON.parse(readFileSync(new URL('../../spec/clauses.json', import.meta.url), 'utf8')) as Clause[];
const known = new Set(clauses.map((clause) => clause.id));
const defined = [...prose.matchAll(/\*\*\[([A-Z]+-[0-9]+)\]\*\*/g)].map((match) => match[1] ?? '');
// Citations are words like CLAIM-6 whose prefix is a clause family (not SHA-256, UTF-8).
const families = new Set(defined.map((id) => id.split('-')[0]));
const citationsIn = (text: string): string[] =>
  [...text.matchAll(/\b([A-Z]{2,})-([0-9]+)\b/g)].filter((match) => families.has(match[1])).map((match) => `${match[1]}-${match[2]}`);

const ids = suite('spec/clauses.json');

ids('lists exactly the clause ids the prose defines, in document order', () => {
  assert.equal(clauses.map((clause) => clause.id), defined);
});

ids('no clause id is defined twice', () => {
  assert.is(new Set(defined).size, defined.length);
});

ids('every clause has a level of section 15 and a one-line summary', () => {
  for (const clause of clauses) {
    assert.ok(['producer', 'consumer', 'validator', 'all'].includes(clause.level), clause.id);
    assert.ok(clause.summary.length > 10 && !clause.summary.includes('\n'), clause.id);
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
      assert.ok(prose.includes(`\`${member}\``) || prose.includes(`"${member}"`), `${name}.schema.json: member ${member} is not in spec/fsjob-v1.md`);
    }
  }
});

described('every member of the vector case schema appears in conformance/vectors/README.md', () => {
  const readme = readFileSync(new URL('../../conformance/vectors/README.md', import.meta.url), 'utf8');
  const document = schemaDocuments().get('vector-case');
  for (const member of memberNames(document, new Set())) assert.ok(readme.includes(`\`${member}\``), member);
});

described.run();
