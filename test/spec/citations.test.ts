import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';

const known = new Set((JSON.parse(readFileSync(new URL('../../spec/clauses.json', import.meta.url), 'utf8')) as { id: string }[]).map((clause) => clause.id));
const families = new Set([...known].map((id) => id.split('-')[0]));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
}

const citations = suite('clause citations in the producer and the CLI');

citations('every clause id cited in src/producer and src/cli exists in spec/clauses.json', () => {
  const root = fileURLToPath(new URL('../../src/', import.meta.url));
  for (const file of [...sources(join(root, 'producer')), ...sources(join(root, 'cli'))]) {
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(/\b([A-Z]{2,})-([0-9]+)\b/g)) {
      if (!families.has(match[1])) continue;
      assert.ok(known.has(`${match[1]}-${match[2]}`), `${file} cites ${match[0]}, which the spec does not define`);
    }
  }
});

citations.run();
