import { readFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { GENERATED_PATH, generateTypes } from '../src/core/gen-types.ts';
import { VALIDATORS_PATH, generateValidators } from '../src/core/gen-validators.ts';

const drift = suite('gen:types');

drift('src/core/records.generated.ts is exactly what the schemas generate (run npm run gen:types)', () => {
  const committed = readFileSync(GENERATED_PATH, 'utf8');
  const fresh = generateTypes();
  if (committed !== fresh) {
    const a = committed.split('\n');
    const b = fresh.split('\n');
    const line = a.findIndex((text, index) => text !== b[index]);
    assert.unreachable(`records.generated.ts is stale from line ${line + 1}: committed ${JSON.stringify(a[line])}, generated ${JSON.stringify(b[line])}`);
  }
});

drift('every record type has an interface with its type as a literal', () => {
  const text = readFileSync(GENERATED_PATH, 'utf8');
  for (const [type, name] of [['queue', 'QueueRecord'], ['spec', 'SpecRecord'], ['receipt', 'ReceiptRecord'], ['hold', 'HoldRecord']] as const) {
    assert.match(text, new RegExp(`export interface ${name} \\{[^}]*type: "${type}";`, 's'));
  }
});

drift('src/core/validators.generated.cjs is exactly what the schemas compile to (run npm run gen:validators)', () => {
  const committed = readFileSync(VALIDATORS_PATH, 'utf8');
  const fresh = generateValidators();
  if (committed !== fresh) {
    const a = committed.split('\n');
    const b = fresh.split('\n');
    const line = a.findIndex((text, index) => text !== b[index]);
    assert.unreachable(`validators.generated.cjs is stale from line ${line + 1}: committed ${JSON.stringify(a[line]?.slice(0, 200))}, generated ${JSON.stringify(b[line]?.slice(0, 200))}`);
  }
});

drift.run();
