/**
 * The schemas of schemas/ checked by reading the documents, without the
 * compiled validators: the same rules (REC-5), the same errors, none of the
 * 715 KB of code ajv compiles them to.
 *
 * A program that only enqueues (the producer, `fsjob enqueue`, an app
 * bundling `fsjob/producer`) checks a request, the queue record and a hold
 * now and then; loading the compiled code of every schema for that costs
 * more than the enqueue. The validator, the consumer and `fsjob/schemas`
 * register the compiled code (src/records/compiled.ts), which is faster per
 * record; wherever it is not registered, this module answers instead, and a
 * test holds both to the same verdicts over every conformance vector.
 *
 * It implements the part of JSON Schema 2020-12 that schemas/ uses, with
 * ajv's error objects (keyword, instancePath, schemaPath, params, message,
 * and the `verbose` members schema, parentSchema and data), in ajv's order
 * of keywords, so src/records/schemas.ts turns them into the same findings.
 * A keyword it does not know is an error at once (the generator's strict
 * mode refuses unknown keywords in schemas/ the same way), never ignored.
 */
import { nonUtf8Base64Problem } from './bytes.ts';

type Schema = Record<string, unknown>;

/**
 * One problem a schema check found, as ajv reports it with its `verbose`
 * option (the compiled validators' errors have this shape too): the rule
 * (`keyword`, `schemaPath`), where in the value (`instancePath`, a JSON
 * pointer) and the offending `data`.
 */
export interface SchemaError {
  keyword: string;
  instancePath: string;
  schemaPath: string;
  params: Record<string, unknown>;
  message?: string;
  /** The keyword's value in the schema. */
  schema?: unknown;
  /** The schema object holding the keyword. */
  parentSchema?: Record<string, unknown>;
  /** The value that failed the keyword. */
  data?: unknown;
}

/** Keywords that carry no rule. */
const ANNOTATIONS = new Set(['$schema', '$id', '$comment', '$defs', 'title', 'description', 'examples', 'default', 'then', 'else']);

/** ajv evaluates keywords in groups: those of any type first, then by the type they apply to, then unevaluated*. */
const UNTYPED = ['$ref', 'const', 'enum', 'not', 'anyOf', 'oneOf', 'allOf', 'if', 'maxJsonBytes'] as const;
const BY_TYPE = {
  number: ['maximum', 'minimum'],
  // fsjob's own keywords of strings come last, in the order the compiler adds them.
  string: ['maxLength', 'minLength', 'pattern', 'maxBytes', 'nonUtf8Base64'],
  // ajv's items and prefixItems go before uniqueItems (their definitions say `before: "uniqueItems"`).
  array: ['maxItems', 'minItems', 'prefixItems', 'items', 'uniqueItems', 'contains'],
  object: ['maxProperties', 'minProperties', 'required', 'propertyNames', 'additionalProperties', 'properties', 'patternProperties'],
} as const;
type TypeGroup = keyof typeof BY_TYPE;
const KNOWN = new Set<string>([...ANNOTATIONS, 'type', 'unevaluatedProperties', ...UNTYPED, ...Object.values(BY_TYPE).flat()]);

/** Members a subschema evaluated (for unevaluatedProperties): none, some names, or every member. */
type Evaluated = Set<string> | true | undefined;

interface Context {
  documents: ReadonlyMap<string, Schema>;
  /** The document being validated: paths inside it start with "#", others with "<name>.schema.json#". */
  root: string;
}

const patterns = new Map<string, RegExp>();


function regExp(source: string): RegExp {
  let compiled = patterns.get(source);
  if (compiled === undefined) {
    compiled = new RegExp(source, 'u');
    patterns.set(source, compiled);
  }
  return compiled;
}

function pointerSegment(name: string): string {
  return name.includes('~') || name.includes('/') ? name.replaceAll('~', '~0').replaceAll('/', '~1') : name;
}

/** A schema path segment as ajv writes it (a JSON pointer segment, URI-escaped). */
function fragmentSegment(plan: Plan, name: string): string {
  let segment = plan.segments.get(name);
  if (segment === undefined) {
    segment = encodeURIComponent(pointerSegment(name));
    plan.segments.set(name, segment);
  }
  return segment;
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function hasType(value: unknown, type: string): boolean {
  switch (type) {
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value);
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    default:
      return typeOf(value) === type;
  }
}

/** The group of keywords that applies to a value (ajv's type groups; integers are numbers). */
function groupOf(value: unknown): TypeGroup | undefined {
  const type = typeOf(value);
  return type === 'number' || type === 'string' || type === 'array' || type === 'object' ? type : undefined;
}

function groupOfType(type: string): TypeGroup | undefined {
  return type === 'integer' ? 'number' : type === 'number' || type === 'string' || type === 'array' || type === 'object' ? type : undefined;
}

/** Code points, as JSON Schema's maxLength counts them (ajv's ucs2length). */
function codePoints(text: string): number {
  let length = 0;
  for (let i = 0; i < text.length; i++) {
    length += 1;
    const code = text.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) i += 1;
  }
  return length;
}

function equal(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((item, index) => equal(item, other[index]));
  }
  const left = Object.keys(a);
  const right = b as Record<string, unknown>;
  return left.length === Object.keys(right).length && left.every((key) => Object.hasOwn(right, key) && equal((a as Record<string, unknown>)[key], right[key]));
}

function hasRef(schema: unknown): boolean {
  if (typeof schema !== 'object' || schema === null) return false;
  if (Array.isArray(schema)) return schema.some(hasRef);
  const known = plans.get(schema as Schema);
  if (known !== undefined) return known.hasRef;
  return Object.entries(schema).some(([key, value]) => key === '$ref' || hasRef(value));
}

/** A subschema that failed yields no annotations (JSON Schema 2020-12, section 7.7.1.2; ajv alike). */
function annotations(result: { valid: boolean; evaluated: Evaluated }): Evaluated {
  return result.valid ? result.evaluated : undefined;
}

/**
 * The pair ajv reports for repeated items: scanning from the last item back,
 * scalars by the later index already seen (i earlier, j later), anything
 * else against each item before it (i later, j earlier).
 */
function duplicateOf(items: readonly unknown[]): [number, number] | undefined {
  if (items.every((item) => item === null || typeof item !== 'object')) {
    const seen = new Map<string, number>();
    for (let i = items.length - 1; i >= 0; i--) {
      const key = `${typeof items[i]}:${String(items[i])}`;
      const j = seen.get(key);
      if (j !== undefined) return [i, j];
      seen.set(key, i);
    }
    return undefined;
  }
  for (let i = items.length - 1; i > 0; i--) {
    for (let j = i - 1; j >= 0; j--) if (equal(items[i], items[j])) return [i, j];
  }
  return undefined;
}

function merge(into: Evaluated, from: Evaluated): Evaluated {
  if (into === true || from === true) return true;
  if (from === undefined) return into;
  if (into === undefined) return new Set(from);
  for (const name of from) into.add(name);
  return into;
}

/** What validate needs to know about a schema object, worked out once per object. */
interface Plan {
  types: readonly string[];
  /** The lone type has keywords of its group here: ajv reports a type error at that group (not first). */
  typeWithGroup: boolean;
  untyped: readonly (typeof UNTYPED)[number][];
  byType: Readonly<Record<TypeGroup, readonly string[]>>;
  unevaluated: boolean;
  hasRef: boolean;
  /** The target of its $ref, once looked up. */
  target?: { schema: unknown; doc: string; path: string };
  /** Schema path segments of its properties and patternProperties, by name. */
  segments: Map<string, string>;
}

const plans = new WeakMap<Schema, Plan>();

function planOf(s: Schema, schemaPath: string): Plan {
  let plan = plans.get(s);
  if (plan !== undefined) return plan;
  for (const keyword of Object.keys(s)) {
    if (!KNOWN.has(keyword)) throw new Error(`schemas: keyword ${keyword} at ${schemaPath} is not implemented by src/records/interpret.ts`);
  }
  const types = s['type'] === undefined ? [] : Array.isArray(s['type']) ? (s['type'] as string[]) : [s['type'] as string];
  const present = (keywords: readonly string[]): string[] => keywords.filter((keyword) => keyword in s);
  const byType = { number: present(BY_TYPE.number), string: present(BY_TYPE.string), array: present(BY_TYPE.array), object: present(BY_TYPE.object) };
  const soleGroup = types.length === 1 ? groupOfType(types[0] as string) : undefined;
  plan = {
    types,
    typeWithGroup: soleGroup !== undefined && byType[soleGroup].length > 0,
    untyped: UNTYPED.filter((keyword) => keyword in s),
    byType,
    unevaluated: 'unevaluatedProperties' in s,
    hasRef: hasRef(s),
    segments: new Map(),
  };
  plans.set(s, plan);
  return plan;
}

class Run {
  readonly errors: SchemaError[] = [];
  constructor(readonly context: Context) {}

  private fail(keyword: string, instancePath: string, schemaPath: string, params: Record<string, unknown>, message: string, schema: unknown, parentSchema: Schema, data: unknown): void {
    this.errors.push({ instancePath, schemaPath: `${schemaPath}/${keyword}`, keyword, params, message, schema, parentSchema, data });
  }

  /** Validates `data` against `schema`; pushes errors; returns what it evaluated (for unevaluatedProperties) and whether it passed. */
  validate(schema: unknown, doc: string, data: unknown, instancePath: string, schemaPath: string): { valid: boolean; evaluated: Evaluated } {
    const before = this.errors.length;
    if (schema === true) return { valid: true, evaluated: undefined };
    if (schema === false || typeof schema !== 'object' || schema === null) {
      this.errors.push({ instancePath, schemaPath, keyword: 'false schema', params: {}, message: 'boolean schema is false', schema: false, parentSchema: {}, data });
      return { valid: false, evaluated: undefined };
    }
    const s = schema as Schema;
    const plan = planOf(s, schemaPath);
    let evaluated: Evaluated;
    const { types } = plan;
    let typeOk = types.length === 0;
    for (let i = 0; !typeOk && i < types.length; i++) typeOk = hasType(data, types[i] as string);
    if (!typeOk && !plan.typeWithGroup) this.typeError(s, types, data, instancePath, schemaPath);
    for (const keyword of plan.untyped) evaluated = merge(evaluated, this.untyped(keyword, s, doc, data, instancePath, schemaPath));
    if (!typeOk && plan.typeWithGroup) this.typeError(s, types, data, instancePath, schemaPath);
    const group = groupOf(data);
    if (group !== undefined && typeOk) {
      for (const keyword of plan.byType[group]) evaluated = merge(evaluated, this.typed(keyword, s, doc, data, instancePath, schemaPath));
    }
    if (plan.unevaluated && group === 'object') {
      const rest = s['unevaluatedProperties'];
      for (const name of Object.keys(data as Schema)) {
        if (evaluated === true || evaluated?.has(name) === true) continue;
        if (rest === false) {
          this.fail('unevaluatedProperties', instancePath, schemaPath, { unevaluatedProperty: name }, 'must NOT have unevaluated properties', false, s, data);
        } else {
          this.validate(rest, doc, (data as Schema)[name], `${instancePath}/${pointerSegment(name)}`, `${schemaPath}/unevaluatedProperties`);
        }
      }
      evaluated = true;
    }
    return { valid: this.errors.length === before, evaluated };
  }

  private typeError(s: Schema, types: readonly string[], data: unknown, instancePath: string, schemaPath: string): void {
    this.fail('type', instancePath, schemaPath, { type: types.join(',') }, `must be ${types.join(',')}`, s['type'], s, data);
  }

  /** Runs `schema` aside: its errors are returned, not reported. */
  private aside(schema: unknown, doc: string, data: unknown, instancePath: string, schemaPath: string): { valid: boolean; evaluated: Evaluated; errors: SchemaError[] } {
    const mark = this.errors.length;
    const result = this.validate(schema, doc, data, instancePath, schemaPath);
    return { ...result, errors: this.errors.splice(mark) };
  }

  private resolve(s: Schema, doc: string): { schema: unknown; doc: string; path: string } {
    const plan = planOf(s, doc);
    plan.target ??= this.lookUp(s['$ref'] as string, doc);
    return plan.target;
  }

  private lookUp(ref: string, doc: string): { schema: unknown; doc: string; path: string } {
    const [file = '', fragment = ''] = ref.split('#');
    const target = file === '' ? doc : file.replace(/\.schema\.json$/, '');
    let node: unknown = this.context.documents.get(target);
    for (const part of fragment.split('/').slice(1)) {
      node = typeof node === 'object' && node !== null ? (node as Schema)[decodeURIComponent(part).replaceAll('~1', '/').replaceAll('~0', '~')] : undefined;
    }
    if (node === undefined) throw new Error(`schemas: $ref ${ref} in ${doc} names nothing`);
    // ajv copies a target without references of its own into the referring
    // code (errors then name the path through the reference as written) and
    // compiles any other target on its own (paths from "#", its own root).
    return { schema: node, doc: target, path: hasRef(node) ? '#' : ref };
  }

  private untyped(keyword: (typeof UNTYPED)[number], s: Schema, doc: string, data: unknown, instancePath: string, schemaPath: string): Evaluated {
    const value = s[keyword];
    switch (keyword) {
      case '$ref': {
        const target = this.resolve(s, doc);
        return annotations(this.validate(target.schema, target.doc, data, instancePath, target.path));
      }
      case 'const':
        if (!equal(data, value)) this.fail(keyword, instancePath, schemaPath, { allowedValue: value }, 'must be equal to constant', value, s, data);
        return undefined;
      case 'enum':
        if (!(value as unknown[]).some((allowed) => equal(data, allowed))) {
          this.fail(keyword, instancePath, schemaPath, { allowedValues: value }, 'must be equal to one of the allowed values', value, s, data);
        }
        return undefined;
      case 'not':
        if (this.aside(value, doc, data, instancePath, `${schemaPath}/not`).valid) this.fail(keyword, instancePath, schemaPath, {}, 'must NOT be valid', value, s, data);
        return undefined;
      case 'anyOf':
      case 'oneOf': {
        const branches = (value as unknown[]).map((branch, index) => this.aside(branch, doc, data, instancePath, `${schemaPath}/${keyword}/${index}`));
        const passing = branches.flatMap((branch, index) => (branch.valid ? [index] : []));
        if (passing.length === 0) {
          for (const branch of branches) this.errors.push(...branch.errors);
          if (keyword === 'anyOf') this.fail(keyword, instancePath, schemaPath, {}, 'must match a schema in anyOf', value, s, data);
          else this.fail(keyword, instancePath, schemaPath, { passingSchemas: null }, 'must match exactly one schema in oneOf', value, s, data);
          return undefined;
        }
        if (keyword === 'oneOf' && passing.length > 1) {
          this.fail(keyword, instancePath, schemaPath, { passingSchemas: passing.slice(0, 2) }, 'must match exactly one schema in oneOf', value, s, data);
          return undefined;
        }
        return passing.reduce<Evaluated>((all, index) => merge(all, (branches[index] as { evaluated: Evaluated }).evaluated), undefined);
      }
      case 'allOf':
        return (value as unknown[]).reduce<Evaluated>((all, branch, index) => merge(all, annotations(this.validate(branch, doc, data, instancePath, `${schemaPath}/allOf/${index}`))), undefined);
      case 'if': {
        const test = this.aside(value, doc, data, instancePath, `${schemaPath}/if`);
        const branch = test.valid ? 'then' : 'else';
        if (!(branch in s)) return test.valid ? test.evaluated : undefined;
        const result = this.validate(s[branch], doc, data, instancePath, `${schemaPath}/${branch}`);
        if (!result.valid) this.fail(keyword, instancePath, schemaPath, { failingKeyword: branch }, `must match "${branch}" schema`, value, s, data);
        return test.valid ? merge(test.evaluated, annotations(result)) : annotations(result);
      }
      case 'maxJsonBytes':
        if (Buffer.byteLength(JSON.stringify(data) ?? '', 'utf8') > (value as number)) this.fail(keyword, instancePath, schemaPath, {}, 'must pass "maxJsonBytes" keyword validation', value, s, data);
        return undefined;
    }
  }

  private typed(keyword: string, s: Schema, doc: string, data: unknown, instancePath: string, schemaPath: string): Evaluated {
    const value = s[keyword];
    const limit = value as number;
    switch (keyword) {
      case 'maximum':
        if ((data as number) > limit) this.fail(keyword, instancePath, schemaPath, { comparison: '<=', limit }, `must be <= ${limit}`, value, s, data);
        break;
      case 'minimum':
        if ((data as number) < limit) this.fail(keyword, instancePath, schemaPath, { comparison: '>=', limit }, `must be >= ${limit}`, value, s, data);
        break;
      case 'maxLength':
        if (codePoints(data as string) > limit) this.fail(keyword, instancePath, schemaPath, { limit }, `must NOT have more than ${limit} characters`, value, s, data);
        break;
      case 'minLength':
        if (codePoints(data as string) < limit) this.fail(keyword, instancePath, schemaPath, { limit }, `must NOT have fewer than ${limit} characters`, value, s, data);
        break;
      case 'pattern':
        if (!regExp(value as string).test(data as string)) this.fail(keyword, instancePath, schemaPath, { pattern: value }, `must match pattern "${String(value)}"`, value, s, data);
        break;
      case 'maxBytes':
        if (Buffer.byteLength(data as string, 'utf8') > limit) this.fail(keyword, instancePath, schemaPath, {}, 'must pass "maxBytes" keyword validation', value, s, data);
        break;
      case 'nonUtf8Base64':
        if (nonUtf8Base64Problem(data as string, limit) !== undefined) this.fail(keyword, instancePath, schemaPath, {}, 'must pass "nonUtf8Base64" keyword validation', value, s, data);
        break;
      case 'maxItems':
        if ((data as unknown[]).length > limit) this.fail(keyword, instancePath, schemaPath, { limit }, `must NOT have more than ${limit} items`, value, s, data);
        break;
      case 'minItems':
        if ((data as unknown[]).length < limit) this.fail(keyword, instancePath, schemaPath, { limit }, `must NOT have fewer than ${limit} items`, value, s, data);
        break;
      case 'uniqueItems': {
        if (value !== true) break;
        const duplicate = duplicateOf(data as unknown[]);
        if (duplicate !== undefined) {
          const [i, j] = duplicate;
          this.fail(keyword, instancePath, schemaPath, { i, j }, `must NOT have duplicate items (items ## ${j} and ${i} are identical)`, value, s, data);
        }
        break;
      }
      case 'prefixItems':
        (value as unknown[]).forEach((item, index) => {
          if (index < (data as unknown[]).length) this.validate(item, doc, (data as unknown[])[index], `${instancePath}/${index}`, `${schemaPath}/prefixItems/${index}`);
        });
        break;
      case 'items': {
        const from = Array.isArray(s['prefixItems']) ? s['prefixItems'].length : 0;
        const items = data as unknown[];
        for (let index = from; index < items.length; index++) this.validate(value, doc, items[index], `${instancePath}/${index}`, `${schemaPath}/items`);
        break;
      }
      case 'contains':
        if (!(data as unknown[]).some((item, index) => this.aside(value, doc, item, `${instancePath}/${index}`, `${schemaPath}/contains`).valid)) {
          this.fail(keyword, instancePath, schemaPath, { minContains: 1 }, 'must contain at least 1 valid item(s)', value, s, data);
        }
        break;
      default:
        return this.objectKeyword(keyword, s, doc, data as Schema, instancePath, schemaPath);
    }
    return undefined;
  }

  private objectKeyword(keyword: string, s: Schema, doc: string, data: Schema, instancePath: string, schemaPath: string): Evaluated {
    const value = s[keyword];
    const names = Object.keys(data);
    const evaluated = new Set<string>();
    switch (keyword) {
      case 'maxProperties':
        if (names.length > (value as number)) this.fail(keyword, instancePath, schemaPath, { limit: value }, `must NOT have more than ${String(value)} properties`, value, s, data);
        break;
      case 'minProperties':
        if (names.length < (value as number)) this.fail(keyword, instancePath, schemaPath, { limit: value }, `must NOT have fewer than ${String(value)} properties`, value, s, data);
        break;
      case 'required':
        for (const name of value as string[]) {
          if (!Object.hasOwn(data, name)) this.fail(keyword, instancePath, schemaPath, { missingProperty: name }, `must have required property '${name}'`, value, s, data);
        }
        break;
      case 'propertyNames':
        for (const name of names) {
          if (!this.validate(value, doc, name, instancePath, `${schemaPath}/propertyNames`).valid) {
            this.fail(keyword, instancePath, schemaPath, { propertyName: name }, 'property name must be valid', value, s, data);
          }
        }
        break;
      case 'properties':
        for (const [name, member] of Object.entries(value as Schema)) {
          if (!Object.hasOwn(data, name)) continue;
          this.validate(member, doc, data[name], `${instancePath}/${pointerSegment(name)}`, `${schemaPath}/properties/${fragmentSegment(planOf(s, schemaPath), name)}`);
          evaluated.add(name);
        }
        break;
      case 'patternProperties':
        for (const [pattern, member] of Object.entries(value as Schema)) {
          for (const name of names) {
            if (!regExp(pattern).test(name)) continue;
            this.validate(member, doc, data[name], `${instancePath}/${pointerSegment(name)}`, `${schemaPath}/patternProperties/${fragmentSegment(planOf(s, schemaPath), pattern)}`);
            evaluated.add(name);
          }
        }
        break;
      case 'additionalProperties': {
        const defined = (s['properties'] ?? {}) as Schema;
        const patternsOf = Object.keys((s['patternProperties'] ?? {}) as Schema);
        for (const name of names) {
          if (Object.hasOwn(defined, name) || patternsOf.some((pattern) => regExp(pattern).test(name))) continue;
          if (value === false) this.fail(keyword, instancePath, schemaPath, { additionalProperty: name }, 'must NOT have additional properties', value, s, data);
          else if (value !== true) this.validate(value, doc, data[name], `${instancePath}/${pointerSegment(name)}`, `${schemaPath}/additionalProperties`);
        }
        return true;
      }
    }
    return evaluated;
  }
}

/** ajv's errors for `value` against the document `name` (validated with every other document of `documents` for its $refs); [] when valid. */
/** Errors of `value` against `schema`, a part of document `doc` (its references resolve there), found at `instancePath` of a record. */
export function interpretedPartErrors(documents: ReadonlyMap<string, Schema>, doc: string, schema: Schema, value: unknown, instancePath: string): SchemaError[] {
  const run = new Run({ documents, root: doc });
  run.validate(schema, doc, value, instancePath, '#');
  return run.errors;
}

export function interpretedErrors(documents: ReadonlyMap<string, Schema>, name: string, value: unknown): SchemaError[] {
  const schema = documents.get(name);
  if (schema === undefined) throw new Error(`no schema ${name}.schema.json`);
  const run = new Run({ documents, root: name });
  run.validate(schema, name, value, '', '#');
  return run.errors;
}
