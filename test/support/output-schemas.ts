/**
 * The schemas of the CLI's --json output (schemas/output/), compiled once,
 * for tests that check a real output against its published shape.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import { SCHEMA_BASE } from '../../src/records/schemas.ts';
import { createAjv } from '../../tools/gen/schema-compiler.ts';
import { SCHEMAS_DIR } from '../../tools/gen/schema-files.ts';

const OUTPUT_DIR = join(SCHEMAS_DIR, 'output');
const ajv = createAjv();
for (const file of readdirSync(OUTPUT_DIR).sort()) ajv.addSchema(JSON.parse(readFileSync(join(OUTPUT_DIR, file), 'utf8')) as object);

/** Asserts that `value` matches schemas/output/<name>.schema.json. */
export function assertOutputSchema(name: string, value: unknown): void {
  const validate = ajv.getSchema(`${SCHEMA_BASE}output/${name}.schema.json`);
  if (validate === undefined) throw new Error(`no schema ${name}`);
  assert.ok(validate(value), `${name}: ${JSON.stringify(validate.errors?.slice(0, 3))}\n${JSON.stringify(value).slice(0, 1500)}`);
}
