/**
 * The schema compiler: ajv with every schema of schemas/ and fsjob's own
 * keywords. Only gen-validators.ts (which writes the compiled validators out
 * as src/records/generated/validators.js) and the tests compile schemas; fsjob itself
 * loads the generated code (schemas.ts), so a start never loads ajv's
 * compiler (~75 ms).
 */
import ajv2020 from 'ajv/dist/2020.js';
import { type KeywordCxt, _ } from 'ajv/dist/2020.js';
import { and, not, type Code } from 'ajv/dist/compile/codegen/index.js';
import { propertyInData } from 'ajv/dist/vocabularies/code.js';
import { readSchemaDocuments } from './schema-files.ts';

// CommonJS interop: the default import is module.exports, whose `default` is the class.
const Ajv2020 = ajv2020.default;
type Ajv2020 = InstanceType<typeof Ajv2020>;

/** A fresh ajv instance with every schema and fsjob's keywords (tests use it directly). */
export function createAjv(options: { source?: boolean; ajvOneOf?: boolean } = {}): Ajv2020 {
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
  // ajvOneOf: ajv's own oneOf code alone (the test holding quietOneOf's verdicts and errors to it).
  if (options.ajvOneOf !== true) quietOneOf(ajv);
  for (const document of readSchemaDocuments().values()) ajv.addSchema(document);
  return ajv;
}

/** A `oneOf` whose branches say only `required` (SPEC-1's argv or handler): each branch's names, else undefined. */
function requiredBranches(schema: unknown): string[][] | undefined {
  if (!Array.isArray(schema) || schema.length < 2) return undefined;
  const branches: string[][] = [];
  for (const branch of schema as unknown[]) {
    if (branch === null || typeof branch !== 'object' || Array.isArray(branch)) return undefined;
    const { required, ...rest } = branch as { required?: unknown };
    if (Object.keys(rest).some((key) => key !== 'description' && key !== '$comment')) return undefined;
    if (!Array.isArray(required) || required.length === 0 || !required.every((name) => typeof name === 'string')) return undefined;
    branches.push(required as string[]);
  }
  return branches;
}

/**
 * ajv's `oneOf` runs every branch with its errors on (allErrors), so a valid
 * spec built an error object, with its message, schema path and data, for the
 * branch it does not take (argv's, on every payload job) and then dropped it.
 * For a `oneOf` of `required` branches the generated code now first tests
 * the members themselves: an object with exactly one branch's members passes
 * there, making nothing (a `required` branch marks no member evaluated, so
 * unevaluatedProperties sees the same); anything else runs ajv's own code,
 * which reports exactly what it reported before, in the same order (the
 * keyword keeps its place among the rules).
 */
function quietOneOf(ajv: Ajv2020): void {
  type Rule = { definition: { code: (cxt: KeywordCxt) => void } };
  const rule = (ajv as unknown as { RULES: { all: Record<string, Rule | undefined> } }).RULES.all['oneOf'];
  if (rule === undefined) throw new Error('ajv has no oneOf rule: tools/gen/schema-compiler.ts must learn the new form');
  const full = rule.definition.code;
  rule.definition.code = (cxt: KeywordCxt): void => {
    const branches = requiredBranches(cxt.schema);
    if (branches === undefined || cxt.it.opts.ownProperties === true) {
      full(cxt);
      return;
    }
    const { gen, data } = cxt;
    const held = branches.map((names) => and(...names.map((name) => propertyInData(gen, data, name, false))));
    const count = held.map((code): Code => _`(${code} ? 1 : 0)`).reduce((sum, term) => _`${sum} + ${term}`);
    const quiet = and(_`${data} && typeof ${data} == "object" && !Array.isArray(${data})`, _`${count} === 1`);
    gen.if(not(quiet), () => full(cxt));
  };
}
