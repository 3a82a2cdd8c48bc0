/**
 * The schema compiler: ajv with every schema of schemas/ and fsjob's own
 * keywords. Only gen-validators.ts (which writes the compiled validators out
 * as src/records/generated/validators.js) and the tests compile schemas; fsjob itself
 * loads the generated code (schemas.ts), so a start never loads ajv's
 * compiler (~75 ms).
 */
import ajv2020 from 'ajv/dist/2020.js';
import { type KeywordCxt, _ } from 'ajv/dist/2020.js';
import { readSchemaDocuments } from './schema-files.ts';

// CommonJS interop: the default import is module.exports, whose `default` is the class.
const Ajv2020 = ajv2020.default;
type Ajv2020 = InstanceType<typeof Ajv2020>;

/** A fresh ajv instance with every schema and fsjob's keywords (tests use it directly). */
export function createAjv(options: { source?: boolean } = {}): Ajv2020 {
  const ajv = new Ajv2020({
    // For gen-validators.ts: keep each validator's source so it can be written out.
    code: { source: options.source === true, lines: options.source === true },
    strict: true,
    // Definitions in common.schema.json carry no type; each use states it.
    strictTypes: false,
    // Rules such as SPEC-1 say `oneOf: [{required: ["argv"]}, ...]`, naming members defined beside them.
    strictRequired: false,
    // argv is a first item with its own bounds followed by 0 to 4095 others: not a fixed tuple.
    strictTuples: false,
    allowUnionTypes: true,
    allErrors: true,
    verbose: true,
  });
  // The keywords generate code (rather than calling a function) so that the
  // compiled validators can be written out as standalone code (gen-validators.ts).
  ajv.addKeyword({
    keyword: 'maxBytes',
    type: 'string',
    schemaType: 'number',
    metaSchema: { type: 'integer', minimum: 0 },
    code: (cxt: KeywordCxt) => cxt.fail(_`Buffer.byteLength(${cxt.data}, "utf8") > ${cxt.schema as number}`),
  });
  ajv.addKeyword({
    keyword: 'maxJsonBytes',
    schemaType: 'number',
    metaSchema: { type: 'integer', minimum: 0 },
    code: (cxt: KeywordCxt) => cxt.fail(_`Buffer.byteLength(JSON.stringify(${cxt.data}) ?? "", "utf8") > ${cxt.schema as number}`),
  });
  // SPEC-3, as src/records/bytes.ts nonUtf8Base64Problem states it: canonical padded base64 (the bytes
  // re-encode to the same text), at most N bytes, no NUL, not valid UTF-8 (a fatal decoder refuses them).
  ajv.addKeyword({
    keyword: 'nonUtf8Base64',
    type: 'string',
    schemaType: 'number',
    metaSchema: { type: 'integer', minimum: 1 },
    code: (cxt: KeywordCxt) =>
      cxt.fail(
        _`((s) => { const b = Buffer.from(s, "base64"); if (b.toString("base64") !== s || b.length > ${cxt.schema as number} || b.includes(0)) return true; try { new TextDecoder("utf-8", { fatal: true }).decode(b); return true; } catch { return false; } })(${cxt.data})`,
      ),
  });
  for (const document of readSchemaDocuments().values()) ajv.addSchema(document);
  return ajv;
}
