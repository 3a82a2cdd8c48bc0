/**
 * schemas/output/error.schema.json names every code a refusal can carry under
 * --json: each of ERROR_CODES (src/base/errors.ts) and INTERNAL, nothing else.
 * A code missing there makes a real refusal (release's NOT_HELD was one) an
 * output that fails its own published schema.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ERROR_CODES } from '../../src/base/errors.ts';
import { SCHEMAS_DIR } from '../../tools/gen/schema-files.ts';

const schema = suite('error.schema.json: the closed set of error codes');

schema('its code enum is ERROR_CODES and INTERNAL, in that order', () => {
  const parsed = JSON.parse(readFileSync(join(SCHEMAS_DIR, 'output', 'error.schema.json'), 'utf8')) as { $defs: { error: { properties: { code: { enum: string[] } } } } };
  assert.equal(parsed.$defs.error.properties.code.enum, [...ERROR_CODES, 'INTERNAL']);
});

schema.run();
