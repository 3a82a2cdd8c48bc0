import { readFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { GENERATED_PATH, generateTypes } from '../../tools/gen/types.ts';
import { DOCUMENTS_PATH, DOCUMENTS_TYPES_PATH, VALIDATORS_PATH, VALIDATORS_TYPES_PATH, generateDocumentTypes, generateDocuments, generateValidatorTypes, generateValidators } from '../../tools/gen/validators.ts';

const drift = suite('gen:types');

/** Fails naming the first line where the committed file and a fresh generation differ. */
function assertCurrent(file: string, fresh: string): void {
  const committed = readFileSync(file, 'utf8');
  if (committed === fresh) return;
  const a = committed.split('\n');
  const b = fresh.split('\n');
  const line = a.findIndex((text, index) => text !== b[index]);
  assert.unreachable(`${file} is stale from line ${line + 1}: committed ${JSON.stringify(a[line]?.slice(0, 200))}, generated ${JSON.stringify(b[line]?.slice(0, 200))}`);
}

drift('src/records/generated/types.ts is exactly what the schemas generate (run npm run gen:types)', () => {
  assertCurrent(GENERATED_PATH, generateTypes());
});

drift('every record type has an interface with its type as a literal', () => {
  const text = readFileSync(GENERATED_PATH, 'utf8');
  for (const [type, name] of [['queue', 'QueueRecord'], ['spec', 'SpecRecord'], ['receipt', 'ReceiptRecord'], ['hold', 'HoldRecord']] as const) {
    assert.match(text, new RegExp(`export interface ${name} \\{[^}]*type: "${type}";`, 's'));
  }
});

drift('src/records/generated/validators.js and its .d.ts are exactly what the schemas compile to (run npm run gen:validators)', () => {
  assertCurrent(VALIDATORS_PATH, generateValidators());
  assertCurrent(VALIDATORS_TYPES_PATH, generateValidatorTypes());
});

drift('src/records/generated/documents.js and its .d.ts hold exactly the schemas of schemas/ (run npm run gen:validators)', () => {
  assertCurrent(DOCUMENTS_PATH, generateDocuments());
  assertCurrent(DOCUMENTS_TYPES_PATH, generateDocumentTypes());
});

drift.run();
