/**
 * Generates src/records/generated/types.ts from schemas/*.schema.json, so that
 * the schemas are the one source of truth for the shape of every record.
 * Run: `npm run gen:types` (node --import tsx tools/gen/types.ts). A test
 * regenerates in memory and fails when the committed file differs.
 *
 * It understands the subset of JSON Schema the fsjob schemas use:
 * - `type` (a name or a list of names), `const`, `enum`;
 * - `properties` + `required`, `patternProperties` "^x-" (extension members),
 *   `additionalProperties` given as a schema (maps such as env);
 * - `items`, `prefixItems`;
 * - `$ref` to a definition: definitions with structure (members or items)
 *   become named types; definitions that only constrain a scalar take the
 *   type the referring schema states;
 * - a schema with none of these is any JSON value.
 * Keywords that constrain without changing the shape are ignored: bounds,
 * patterns, `if`/`then`/`else`, `allOf`, `oneOf`, `anyOf`, `not`,
 * `contains`, `propertyNames`, `unevaluatedProperties`. So a member that a
 * rule makes conditionally required (argv or handler) is optional here.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { SchemaDocument } from '../../src/records/schemas.ts';
import { readSchemaDocuments } from './schema-files.ts';

type Schema = Record<string, unknown>;

export const GENERATED_PATH = fileURLToPath(new URL('../../src/records/generated/types.ts', import.meta.url));

/** TypeScript names of the top-level schemas, in output order. */
const TOP_LEVEL: readonly (readonly [string, string])[] = [
  ['queue', 'QueueRecord'],
  ['spec', 'SpecRecord'],
  ['claim', 'ClaimRecord'],
  ['exec', 'ExecRecord'],
  ['state', 'StateRecord'],
  ['end', 'EndRecord'],
  ['cancel', 'CancelRecord'],
  ['receipt', 'ReceiptRecord'],
  ['worker', 'WorkerRecord'],
  ['hold', 'HoldRecord'],
  ['pause', 'PauseRecord'],
  ['release', 'ReleaseRecord'],
  ['request', 'JobRequest'],
  ['report', 'ValidateReport'],
  ['manifest', 'ConformanceManifest'],
  ['vector-case', 'VectorFile'],
];
const RECORD_COUNT = 12;
/** Definitions whose plain Pascal-case name would mislead. */
const DEF_NAMES: Record<string, string> = {
  'report#finding': 'ReportFinding',
  'vector-case#test': 'VectorCase',
  'common#payload': 'JsonValue',
  'common#extension': 'JsonValue',
};

/** Definitions used only as an `if` condition: not shapes of anything. */
const CONDITIONS = new Set(['common#reader_minor']);

const STRUCTURAL = ['properties', 'patternProperties', 'additionalProperties', 'items', 'prefixItems'];

function pascal(name: string): string {
  return name.replace(/(^|[_-])([a-z0-9])/g, (_match, _sep: string, letter: string) => letter.toUpperCase());
}

function isStructural(schema: Schema): boolean {
  return STRUCTURAL.some((keyword) => keyword in schema);
}

function hasShape(schema: Schema): boolean {
  return ['type', 'const', 'enum', '$ref'].some((keyword) => keyword in schema) || isStructural(schema);
}

function comment(text: unknown, indent: string): string {
  if (typeof text !== 'string') return '';
  return `${indent}/** ${text.replaceAll('*/', '*\\/')} */\n`;
}

function literal(value: unknown): string {
  return JSON.stringify(value);
}

function propertyKey(name: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : JSON.stringify(name);
}

class Generator {
  private readonly docs: ReadonlyMap<string, SchemaDocument>;

  constructor(docs: ReadonlyMap<string, SchemaDocument>) {
    this.docs = docs;
  }

  /** Resolve "$ref" relative to the document `from` into [document, definition]. */
  private resolve(ref: string, from: string): [string, string, Schema] {
    const [file, fragment] = ref.split('#');
    const doc = file === undefined || file === '' ? from : file.replace(/\.schema\.json$/, '');
    const match = /^\/\$defs\/([A-Za-z0-9_-]+)$/.exec(fragment ?? '');
    const schema = (this.docs.get(doc)?.['$defs'] as Record<string, Schema> | undefined)?.[match?.[1] ?? ''];
    if (match === null || schema === undefined) throw new Error(`gen-types: cannot resolve ${ref} in ${from}`);
    return [doc, match[1] ?? '', schema];
  }

  defName(doc: string, def: string): string {
    return DEF_NAMES[`${doc}#${def}`] ?? pascal(def);
  }

  private scalar(type: string, schema: Schema, doc: string, indent: string): string {
    switch (type) {
      case 'string':
        return 'string';
      case 'integer':
      case 'number':
        return 'number';
      case 'boolean':
        return 'boolean';
      case 'null':
        return 'null';
      case 'array':
        return this.arrayType(schema, doc, indent);
      case 'object':
        return this.objectType(schema, doc, indent);
      default:
        throw new Error(`gen-types: unsupported type ${type}`);
    }
  }

  /** The TypeScript type of a schema used in `doc`. */
  typeOf(schema: Schema | boolean, doc: string, indent: string): string {
    if (typeof schema === 'boolean' || !hasShape(schema)) return 'JsonValue';
    if ('const' in schema) return literal(schema['const']);
    if (Array.isArray(schema['enum'])) return schema['enum'].map(literal).join(' | ');
    const types = schema['type'] === undefined ? [] : Array.isArray(schema['type']) ? (schema['type'] as string[]) : [schema['type'] as string];
    const ref = schema['$ref'];
    if (typeof ref === 'string') {
      const [targetDoc, def, target] = this.resolve(ref, doc);
      const named = isStructural(target) || `${targetDoc}#${def}` in DEF_NAMES;
      if (named) {
        const name = this.defName(targetDoc, def);
        return types.includes('null') ? `${name} | null` : name;
      }
      if (types.length === 0) return this.typeOf(target, targetDoc, indent);
    }
    if (types.length === 0) return isStructural(schema) ? this.objectType(schema, doc, indent) : 'JsonValue';
    return types.map((type) => this.scalar(type, schema, doc, indent)).join(' | ');
  }

  private arrayType(schema: Schema, doc: string, indent: string): string {
    const items = schema['items'] as Schema | boolean | undefined;
    const rest = items === undefined ? 'JsonValue' : this.typeOf(items, doc, indent);
    const prefix = schema['prefixItems'] as Schema[] | undefined;
    if (prefix === undefined) return /^[A-Za-z]+$/.test(rest) ? `${rest}[]` : `(${rest})[]`;
    return `[${prefix.map((item) => this.typeOf(item, doc, indent)).join(', ')}, ...${/^[A-Za-z]+$/.test(rest) ? rest : `(${rest})`}[]]`;
  }

  /** The members of an object schema, one per line, at `indent`. */
  members(schema: Schema, doc: string, indent: string): string {
    const properties = (schema['properties'] ?? {}) as Record<string, Schema>;
    const required = new Set((schema['required'] ?? []) as string[]);
    let out = '';
    for (const [name, property] of Object.entries(properties)) {
      out += comment(property['description'], indent);
      out += `${indent}${propertyKey(name)}${required.has(name) ? '' : '?'}: ${this.typeOf(property, doc, indent)};\n`;
    }
    const patterns = (schema['patternProperties'] ?? {}) as Record<string, Schema>;
    for (const pattern of Object.keys(patterns)) {
      if (pattern !== '^x-') throw new Error(`gen-types: unsupported patternProperties ${pattern}`);
      out += `${indent}/** Extension members (VER-2). */\n${indent}[key: \`x-\${string}\`]: JsonValue;\n`;
    }
    const additional = schema['additionalProperties'];
    if (typeof additional === 'object' && additional !== null) {
      out += `${indent}[key: string]: ${this.typeOf(additional as Schema, doc, indent)};\n`;
    }
    return out;
  }

  private objectType(schema: Schema, doc: string, indent: string): string {
    const body = this.members(schema, doc, `${indent}  `);
    return body === '' ? 'Record<string, JsonValue>' : `{\n${body}${indent}}`;
  }

  /** A named declaration: an interface for object shapes, an alias otherwise. */
  declaration(name: string, schema: Schema, doc: string): string {
    const head = comment(schema['description'], '');
    const map = typeof schema['additionalProperties'] === 'object';
    if (('properties' in schema || 'patternProperties' in schema) && !map) {
      return `${head}export interface ${name} {\n${this.members(schema, doc, '  ')}}\n`;
    }
    // Definitions leave the type to their users; a structure implies it.
    const implied = 'items' in schema || 'prefixItems' in schema ? 'array' : 'object';
    const typed = 'type' in schema ? schema : { ...schema, type: implied };
    return `${head}export type ${name} = ${this.typeOf(typed, doc, '')};\n`;
  }

  /** Named types for the structural definitions of one document. */
  private definitions(doc: string): string {
    let out = '';
    const defs = (this.docs.get(doc)?.['$defs'] ?? {}) as Record<string, Schema>;
    for (const [def, schema] of Object.entries(defs)) {
      if (!isStructural(schema) || CONDITIONS.has(`${doc}#${def}`)) continue;
      out += `\n${this.declaration(this.defName(doc, def), schema, doc)}`;
    }
    return out;
  }

  generate(): string {
    let out =
      '// Generated by tools/gen/types.ts from schemas/*.schema.json. Do not edit:\n' +
      '// change the schema and run `npm run gen:types`.\n\n' +
      '/** Any JSON value. */\n' +
      'export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };\n';
    out += this.definitions('common');
    for (const [doc, name] of TOP_LEVEL) {
      const document = this.docs.get(doc);
      if (document === undefined) throw new Error(`gen-types: missing schemas/${doc}.schema.json`);
      out += this.definitions(doc);
      out += `\n${this.declaration(name, document, doc)}`;
    }
    const records = TOP_LEVEL.slice(0, RECORD_COUNT);
    out += '\n/** The record of each record type (REC-3). */\nexport interface RecordByType {\n';
    for (const [doc, name] of records) out += `  ${doc}: ${name};\n`;
    out += '}\n\n/** What checkRecord can check: every record type, and the request form. */\n';
    out += 'export interface DocumentByType extends RecordByType {\n  request: JobRequest;\n}\n';
    return out;
  }
}

/** The text of src/records/generated/types.ts for the schemas now in schemas/. */
export function generateTypes(docs: ReadonlyMap<string, SchemaDocument> = readSchemaDocuments()): string {
  return new Generator(docs).generate();
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(GENERATED_PATH, generateTypes());
  process.stdout.write(`wrote ${GENERATED_PATH}\n`);
}
