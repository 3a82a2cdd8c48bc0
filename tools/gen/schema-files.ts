/**
 * The schema files of schemas/, read from disk: the source the generators
 * (types.ts, validators.ts) and the schema compiler work from. fsjob itself
 * never reads schemas/ at run time: the documents travel inside the
 * generated validators module (src/records/generated/validators.js), so a
 * bundle of the library carries them.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { SchemaDocument } from '../../src/records/schemas.ts';

export const SCHEMAS_DIR = fileURLToPath(new URL('../../schemas/', import.meta.url));

/** Every schema of schemas/, by file name without ".schema.json", in file name order. */
export function readSchemaDocuments(dir: string = SCHEMAS_DIR): Map<string, SchemaDocument> {
  const loaded = new Map<string, SchemaDocument>();
  for (const file of readdirSync(dir).sort()) {
    if (!file.endsWith('.schema.json')) continue;
    loaded.set(file.slice(0, -'.schema.json'.length), JSON.parse(readFileSync(`${dir}${file}`, 'utf8')) as SchemaDocument);
  }
  return loaded;
}
