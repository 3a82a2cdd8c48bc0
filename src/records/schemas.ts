/**
 * The JSON Schemas of schemas/ (REC-5), compiled ahead of time and loaded
 * with this module. Validation problems come back from the validators as
 * data; this module turns them into findings (src/records/findings.ts) that
 * name the member, the rule and the clause.
 *
 * Three keywords are fsjob's own (see schemas/common.schema.json): maxBytes
 * bounds a string's UTF-8 length, maxJsonBytes a value's compact
 * serialization, and nonUtf8Base64 checks the base64 form of bytes that are
 * not UTF-8 (SPEC-3, bytes.ts). JSON Schema's maxLength counts code points,
 * not the bytes the spec bounds.
 *
 * Nothing here reads a file: the schema documents are a generated module
 * (generated/documents.js, from tools/gen/validators.ts), imported like any
 * other, so the library works the same from the sources, from dist/ and
 * from a bundle. Two engines check a value against them, with the same
 * verdicts and errors: ajv's code compiled ahead of time
 * (generated/validators.js, 715 KB), which src/records/compiled.ts
 * registers where many records are checked, and src/records/interpret.ts,
 * which reads the documents and answers wherever the compiled code was not
 * registered (a producer that only enqueues loads 60 KB instead).
 */
import { documents as generatedDocuments } from './generated/documents.js';
import { type Finding, type FindingContext, jsonPointer, makeFinding } from './findings.ts';
import { interpretedErrors, interpretedPartErrors, type SchemaError } from './interpret.ts';
import { nonUtf8Base64Problem } from './bytes.ts';
import type { RecordType } from './record-types.ts';

export { RECORD_TYPES, DOCUMENT_TYPES, isRecordType, isDocumentType, type RecordType, type DocumentType } from './record-types.ts';

/** The base of every schema's `$id`: `${SCHEMA_BASE}spec.schema.json`. */
export const SCHEMA_BASE = 'https://fsjob.dev/schemas/v1/';

/** A JSON Schema document of schemas/ (2020-12), as parsed JSON. */
export type SchemaDocument = Record<string, unknown> & { $id: string };

/** One problem a schema check found (ajv's error object; the interpreter gives the same). */
export type { SchemaError } from './interpret.ts';

/** A compiled schema: true when the value is valid; otherwise `errors` says why. */
export interface CompiledValidator {
  (value: unknown): boolean;
  errors?: SchemaError[] | null;
}

let documents: Map<string, SchemaDocument> | undefined;

/** Every schema of schemas/, by file name without ".schema.json". */
export function schemaDocuments(): ReadonlyMap<string, SchemaDocument> {
  documents ??= new Map(Object.entries(generatedDocuments));
  return documents;
}

/** The schema document of schemas/<name>.schema.json; throws for an unknown name. */
export function schemaDocument(name: string): SchemaDocument {
  const document = schemaDocuments().get(name);
  if (document === undefined) throw new Error(`no schema ${name}.schema.json`);
  return document;
}

function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
}

let compiled: Readonly<Record<string, CompiledValidator>> | undefined;

/**
 * Check with ajv's compiled code from now on (src/records/compiled.ts calls
 * this when it is imported). Faster per record than the interpreter, and
 * the same verdicts and errors (test/records/interpret.test.ts).
 */
export function useCompiledValidators(validators: Readonly<Record<string, CompiledValidator>>): void {
  compiled = validators;
}

const interpreted = new Map<string, CompiledValidator>();

/** A validator that reads the document (src/records/interpret.ts), in the compiled ones' shape. */
function interpretedValidator(name: string): CompiledValidator {
  let validate = interpreted.get(name);
  if (validate === undefined) {
    schemaDocument(name); // an unknown name throws here, as validatorFor promises
    const check: CompiledValidator = (value: unknown): boolean => {
      const errors = interpretedErrors(schemaDocuments(), name, value);
      check.errors = errors.length === 0 ? null : errors;
      return errors.length === 0;
    };
    validate = check;
    interpreted.set(name, validate);
  }
  return validate;
}

/**
 * The validator of schemas/<name>.schema.json: ajv's compiled code when
 * src/records/compiled.ts is loaded, else one that reads the document.
 * Throws for an unknown name.
 */
export function validatorFor(name: string): CompiledValidator {
  return compiledValidator(name) ?? interpretedValidator(name);
}

/** ajv's compiled validator of schemas/<name>.schema.json where this process loaded them (compiled.ts), else undefined: for a check whose interpreted form would cost more than the one it replaces. */
export function compiledValidator(name: string): CompiledValidator | undefined {
  return compiled !== undefined && Object.hasOwn(compiled, name) ? compiled[name] : undefined;
}

/** Validate a value against schemas/<name>.schema.json; ajv's errors, or [] when valid. */
export function schemaErrors(name: string, value: unknown): SchemaError[] {
  const own = compiledValidator(name);
  if (own === undefined) return interpretedErrors(schemaDocuments(), name, value);
  return own(value) ? [] : [...(own.errors ?? [])];
}

// ---------------------------------------------------------------------------
// From ajv errors to findings.

const CLAUSE_PREFIX = /^([A-Z]+-[0-9]+(?:, [A-Z]+-[0-9]+)*): /;

interface Rule {
  clause: string | undefined;
  text: string;
}

function ruleOf(description: unknown): Rule | undefined {
  if (typeof description !== 'string') return undefined;
  const text = description.replace(/\.$/, '');
  const match = CLAUSE_PREFIX.exec(text);
  if (match === null) return { clause: undefined, text };
  const clauses = (match[1] ?? '').split(', ');
  return { clause: clauses[0], text: text.slice(match[0].length) };
}

type SchemaObject = Record<string, unknown>;

/** The subschema a "$ref" names, read from schemaDocuments(); `from` is the referring document. */
function resolveRef(ref: string, from: string): [string, SchemaObject] | undefined {
  const [file = '', fragment = ''] = ref.split('#');
  const doc = file === '' ? from : file.replace(/\.schema\.json$/, '');
  let node: unknown = schemaDocuments().get(doc);
  for (const part of fragment.split('/').slice(1)) {
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as SchemaObject)[part.replaceAll('~1', '/').replaceAll('~0', '~')];
  }
  return typeof node === 'object' && node !== null ? [doc, node as SchemaObject] : undefined;
}

/** Member names a schema defines through `properties`, its own or its `$ref`'s. */
function definedMembers(schema: SchemaObject | undefined, from: string): Set<string> {
  const names = new Set<string>();
  for (let depth = 0, node = schema, doc = from; node !== undefined && depth < 4; depth++) {
    for (const name of Object.keys((node['properties'] ?? {}) as SchemaObject)) names.add(name);
    const ref = node['$ref'];
    const target = typeof ref === 'string' ? resolveRef(ref, doc) : undefined;
    [doc, node] = target ?? [doc, undefined];
  }
  return names;
}

function label(field: string, schemaName: string): string {
  if (field !== '') return `member ${field}`;
  return schemaName === 'request' ? 'the request' : 'the record';
}

function child(pointer: string, name: unknown): string {
  return `${pointer}${jsonPointer([String(name)])}`;
}

function quoteAll(values: unknown): string {
  return Array.isArray(values) ? values.map((value) => JSON.stringify(value)).join(', ') : JSON.stringify(values);
}

function describeKeyword(error: SchemaError): string {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'type':
      return `must be ${Array.isArray(error.schema) ? error.schema.join(' or ') : String(error.schema)}`;
    case 'enum':
      return `must be one of ${quoteAll(params['allowedValues'])}`;
    case 'const':
      return `must be ${JSON.stringify(params['allowedValue'])}`;
    case 'pattern': {
      const description = error.parentSchema?.['description'];
      return `must match ${String(params['pattern'])}${typeof description === 'string' ? ` (${description})` : ''}`;
    }
    case 'maxBytes':
      return `is ${typeof error.data === 'string' ? Buffer.byteLength(error.data, 'utf8') : '?'} bytes of UTF-8, over the bound of ${String(error.schema)}`;
    case 'maxJsonBytes':
      return `is ${jsonBytes(error.data)} bytes serialized, over the bound of ${String(error.schema)}`;
    case 'nonUtf8Base64':
      return `${typeof error.data === 'string' ? (nonUtf8Base64Problem(error.data, Number(error.schema)) ?? 'is not what SPEC-3 allows') : 'is not a string'} (SPEC-3: the base64 form is for bytes that are not UTF-8, at most ${String(error.schema)}, without NUL)`;
    default:
      return error.message ?? `fails ${error.keyword}`;
  }
}

/** What a record's schema says of one member, for a record of a minor this reader knows: its property, and the `then` branch that closes it (VER-2). */
const memberSchemas = new Map<string, Record<string, unknown>>();

function memberSchema(type: RecordType, member: string): Record<string, unknown> {
  const key = `${type}/${member}`;
  let schema = memberSchemas.get(key);
  if (schema === undefined) {
    const document = schemaDocument(type);
    const own = (document['properties'] as Record<string, unknown> | undefined)?.[member];
    const closed = ((document['then'] as Record<string, unknown> | undefined)?.['properties'] as Record<string, unknown> | undefined)?.[member];
    schema = { allOf: [own ?? false, ...(closed === undefined ? [] : [closed])] };
    memberSchemas.set(key, schema);
  }
  return schema;
}

/**
 * The findings of one member of a record of `type`, of a minor this reader
 * knows: what the record's whole schema says of that member (its property,
 * closed to unknown members by VER-2), for a writer that built every other
 * member itself (codec.ts encodeBuilt checks the identity it took from the
 * operating system so). A member the schema does not define is refused.
 */
export function memberFindings(type: RecordType, member: string, value: unknown, context: Omit<FindingContext, 'field' | 'clause'>): Finding[] {
  return schemaFindings(interpretedPartErrors(schemaDocuments(), type, memberSchema(type, member), value, `/${member}`), type, context);
}

/**
 * Turn ajv's errors for one document into findings. Unknown members become
 * RECORD_UNKNOWN_MEMBER (VER-2); everything else RECORD_SCHEMA, citing the
 * clause of the rule that failed when the schema names one in its
 * description ("SPEC-1: exactly one of ...").
 */
export function schemaFindings(
  errors: readonly SchemaError[],
  schemaName: string,
  context: Omit<FindingContext, 'field' | 'clause'>,
): Finding[] {
  // Rules written as if/then/else: ajv reports the failing branch's errors and
  // an "if" error whose parent schema carries the rule's description.
  const branchRules = new Map<string, Rule | undefined>();
  // Combinators report their failing branches too; the combinator's own
  // description says more than "must have required property 'argv'".
  const combinators: string[] = [];
  for (const error of errors) {
    if (error.keyword === 'if') {
      const base = error.schemaPath.slice(0, -'if'.length);
      const rule = ruleOf(error.parentSchema?.['description']);
      branchRules.set(`${base}then/`, rule);
      branchRules.set(`${base}else/`, rule);
    } else if (error.keyword === 'oneOf' || error.keyword === 'anyOf' || error.keyword === 'propertyNames') {
      combinators.push(`${error.schemaPath}/`);
    }
  }

  const findings: Finding[] = [];
  const seen = new Set<string>();
  const add = (finding: Finding): void => {
    const key = `${finding.code}\0${finding.field ?? ''}\0${finding.message}`;
    if (seen.has(key)) return;
    seen.add(key);
    findings.push(finding);
  };

  for (const error of errors) {
    if (error.keyword === 'if') continue;
    if (combinators.some((prefix) => error.schemaPath.startsWith(prefix))) continue;
    const params = error.params as Record<string, unknown>;

    if (error.keyword === 'unevaluatedProperties' || error.keyword === 'additionalProperties') {
      const name = params['unevaluatedProperty'] ?? params['additionalProperty'];
      // A subschema that fails yields no annotations, so the members of a
      // nested object with a bad member all look unevaluated. They are
      // defined: the other error is the finding.
      const from = error.schemaPath.includes('.schema.json#') ? (error.schemaPath.split('.schema.json#')[0] ?? schemaName) : schemaName;
      if (definedMembers(error.parentSchema, from).has(String(name))) continue;
      const field = child(error.instancePath, name);
      const where = error.instancePath === '' ? '' : ` in ${error.instancePath}`;
      add(makeFinding('RECORD_UNKNOWN_MEMBER', `member ${JSON.stringify(name)}${where} is not defined by fsjob 1.0`, { ...context, field }));
      continue;
    }

    let field = error.instancePath;
    let what: string;
    // The innermost rule whose branch holds the failing keyword.
    let rule: Rule | undefined;
    let ruleDepth = -1;
    for (const [prefix, branchRule] of branchRules) {
      if (error.schemaPath.startsWith(prefix) && prefix.length > ruleDepth) [rule, ruleDepth] = [branchRule, prefix.length];
    }

    if (error.keyword === 'required') {
      field = child(error.instancePath, params['missingProperty']);
      what = `required member ${JSON.stringify(params['missingProperty'])} is missing`;
      if (error.instancePath !== '') what += ` in ${error.instancePath}`;
    } else if (error.keyword === 'propertyNames') {
      field = child(error.instancePath, params['propertyName']);
      const description = error.parentSchema?.['description'];
      what = `member name ${JSON.stringify(params['propertyName'])} is not allowed in ${label(error.instancePath, schemaName)}`;
      if (typeof description === 'string') what += ` (${description})`;
    } else if (error.keyword === 'oneOf' || error.keyword === 'anyOf' || error.keyword === 'not') {
      const own = ruleOf(error.parentSchema?.['description']);
      rule = own ?? rule;
      what = `${label(field, schemaName)} breaks a rule: ${rule?.text ?? error.message ?? error.keyword}`;
      rule = rule === undefined ? undefined : { clause: rule.clause, text: '' };
    } else {
      what = `${label(field, schemaName)} ${describeKeyword(error)}`;
    }
    if (rule !== undefined && rule.text !== '') what += ` (rule: ${rule.text})`;
    add(makeFinding('RECORD_SCHEMA', what, { ...context, field, clause: rule?.clause }));
  }
  return findings;
}
