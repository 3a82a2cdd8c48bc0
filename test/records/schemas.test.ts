import { readFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createAjv } from '../../tools/gen/schema-compiler.ts';
import { DOCUMENT_TYPES, SCHEMA_BASE, schemaDocuments, validatorFor } from '../../src/records/schemas.ts';

const identity = { host: 'h', boot_id: 'b', pid_ns: 'pid:[1]', pid: 1, start: '1', uid: 0 };
const claim = { fsjob: '1.0', type: 'claim', job_id: '1764476044123456789-3fa2c1d09b8e7f64', gen: 1, owner: identity, worker_id: null, claimed_ms: 1, lease_ms: 30000 };

const documents = suite('schemas/');

documents('one schema per record type (pause is 1.1, release 1.2), plus common, request, report, manifest, vector-case and conformance-report', () => {
  const names = [...schemaDocuments().keys()].sort();
  assert.equal(names, ['cancel', 'claim', 'common', 'conformance-report', 'end', 'exec', 'hold', 'manifest', 'pause', 'queue', 'receipt', 'release', 'report', 'request', 'spec', 'state', 'vector-case', 'worker']);
});

documents('every schema is 2020-12 with a versioned $id of its own file name', () => {
  for (const [name, document] of schemaDocuments()) {
    assert.is(document['$schema'], 'https://json-schema.org/draft/2020-12/schema', name);
    assert.is(document.$id, `${SCHEMA_BASE}${name}.schema.json`, name);
  }
});

documents('every schema compiles in strict mode and every $ref resolves', () => {
  const ajv = createAjv();
  for (const name of schemaDocuments().keys()) assert.ok(ajv.getSchema(`${SCHEMA_BASE}${name}.schema.json`), name);
});

/** Every `properties` member of the shape of a schema: not of if/then/else/not/allOf rules. */
function* properties(node: unknown, path: string): Generator<[string, Record<string, unknown>]> {
  if (Array.isArray(node)) {
    for (const [index, item] of node.entries()) yield* properties(item, `${path}/${index}`);
    return;
  }
  if (typeof node !== 'object' || node === null) return;
  for (const [key, value] of Object.entries(node)) {
    if (['if', 'then', 'else', 'not', 'allOf', 'oneOf', 'contains', 'propertyNames'].includes(key)) continue;
    if (key === 'properties' && typeof value === 'object' && value !== null) {
      for (const [name, schema] of Object.entries(value)) yield [`${path}/properties/${name}`, schema as Record<string, unknown>];
    }
    yield* properties(value, `${path}/${key}`);
  }
}

documents('every property has a description', () => {
  for (const [name, document] of schemaDocuments()) {
    for (const [where, schema] of properties(document, name)) assert.type(schema['description'], 'string', where);
  }
});

documents('every record requires fsjob and type, closes itself and bounds its member count', () => {
  for (const type of DOCUMENT_TYPES) {
    const document: Record<string, unknown> = schemaDocuments().get(type) ?? {};
    const required = document['required'] as string[] | undefined;
    if (type !== 'request') assert.ok(required?.includes('fsjob') && required.includes('type'), type);
    assert.is(document['unevaluatedProperties'], false, type);
    assert.is(document['maxProperties'], 64, type);
  }
});

documents.run();

const versions = suite('VER-2 and VER-3 as ajv implements them');

versions('an unknown member is invalid at minor 0', () => {
  const validate = validatorFor('claim');
  assert.not.ok(validate({ ...claim, surprise: 1 }));
  assert.ok(validate.errors?.some((error) => error.keyword === 'unevaluatedProperties' && error.params['unevaluatedProperty'] === 'surprise'));
});

versions('an unknown member is ignored at a higher minor', () => {
  assert.ok(validatorFor('claim')({ ...claim, fsjob: '1.5', surprise: 1 }));
  assert.ok(validatorFor('claim')({ ...claim, fsjob: '1.999999', surprise: { any: ['thing'] } }));
});

versions('an x- member is allowed at every minor', () => {
  assert.ok(validatorFor('claim')({ ...claim, 'x-vendor': { a: 1 } }));
  assert.ok(validatorFor('claim')({ ...claim, fsjob: '1.3', 'x-vendor': 1 }));
});

versions('nested objects follow the record version too', () => {
  const validate = validatorFor('claim');
  assert.not.ok(validate({ ...claim, owner: { ...identity, surprise: 1 } }));
  assert.ok(validate({ ...claim, fsjob: '1.3', owner: { ...identity, surprise: 1 } }));
  assert.not.ok(validate({ ...claim, fsjob: '1.1', owner: { ...identity, surprise: 1 } }), 'this reader knows 1.1 completely');
  assert.ok(validate({ ...claim, owner: { ...identity, 'x-note': 1 } }));
});

versions('nullable nested objects are closed when present and accepted when null', () => {
  const validate = validatorFor('exec');
  const exec = { fsjob: '1.0', type: 'exec', job_id: claim.job_id, gen: 1, attempt: 1, recorded_ms: 1 };
  const group = { pgid: 5, start: '1', boot_id: 'b', pid_ns: 'p' };
  assert.ok(validate({ ...exec, group: null }));
  assert.ok(validate({ ...exec, group }));
  assert.not.ok(validate({ ...exec, group: { ...group, surprise: 1 } }));
});

versions('another major fails the schema (the record layer reports it as VER-1 first)', () => {
  assert.not.ok(validatorFor('claim')({ ...claim, fsjob: '2.0' }));
});

versions('maps and free JSON have no unknown members: their names are data', () => {
  assert.ok(validatorFor('request')({ handler: 'h', payload: { whatever: { deep: 1 } }, env: { ANY_NAME: 'x' }, labels: { 'any.name': 'x' } }));
});

versions.run();

const keywords = suite("fsjob's schema keywords");

keywords('maxBytes counts UTF-8 bytes, not characters', () => {
  const validate = validatorFor('claim');
  assert.ok(validate({ ...claim, owner: { ...identity, start: 'é'.repeat(64) } })); // 128 bytes
  assert.not.ok(validate({ ...claim, owner: { ...identity, start: 'é'.repeat(65) } })); // 130 bytes, 65 characters
  assert.ok(validate.errors?.some((error) => error.keyword === 'maxBytes'));
});

keywords('maxJsonBytes bounds the serialized result', () => {
  const validate = validatorFor('receipt');
  const receipt = { fsjob: '1.0', type: 'receipt', job_id: claim.job_id, gen: 1, outcome: 'succeeded', exit_code: 0, reason: null, message: null, attempts: 1, status: null, started_ms: null, finished_ms: 1, stdout: null, stderr: null, by: identity };
  assert.ok(validate({ ...receipt, result: 'r'.repeat(262142) })); // 262144 bytes with quotes
  assert.not.ok(validate({ ...receipt, result: 'r'.repeat(262143) }));
});

keywords('validators are compiled once and reused', () => {
  assert.is(validatorFor('spec'), validatorFor('spec'));
});

keywords("oneOf of required branches (SPEC-1's argv or handler): the quiet test gives ajv's own verdict and errors", () => {
  const quiet = createAjv();
  const full = createAjv({ ajvOneOf: true });
  const vectors = JSON.parse(readFileSync(new URL('../../conformance/vectors/spec.json', import.meta.url), 'utf8')) as { tests: { data?: unknown }[] };
  const specs = vectors.tests.flatMap((test) => (test.data === undefined ? [] : [test.data]));
  const payload = specs.find((spec) => typeof spec === 'object' && spec !== null && 'handler' in spec) as Record<string, unknown>;
  const command = specs.find((spec) => typeof spec === 'object' && spec !== null && 'argv' in spec) as Record<string, unknown>;
  assert.ok(payload !== undefined && command !== undefined);
  const { handler: _h, payload: _p, ...neither } = payload;
  // Each branch alone, both, neither, a member present as undefined, and what is not an object.
  const cases = [...specs, { ...payload, argv: command['argv'] }, neither, { ...payload, argv: undefined }, { ...command, handler: undefined }, [], Object.assign([], { handler: 'h' }), null, 'spec', 1];
  const test = (members: object): object => ({ description: 'd', record_type: 'spec', tests: [{ description: 'c', clause: 'SPEC-1', valid: true, ...members }] });
  const vectorCases = [{ data: 1 }, { raw: 'x' }, { raw_base64: 'AA==' }, { data: 1, raw: 'x' }, { data: null, raw: 'x', raw_base64: 'AA==' }, {}, { data: undefined }].map(test);
  for (const [id, inputs] of [['spec', cases], ['vector-case', vectorCases]] as const) {
    const a = quiet.getSchema(`${SCHEMA_BASE}${id}.schema.json`);
    const b = full.getSchema(`${SCHEMA_BASE}${id}.schema.json`);
    assert.ok(a !== undefined && b !== undefined);
    for (const [index, input] of inputs.entries()) {
      assert.is(a(input), b(input), `${id} case ${index}`);
      assert.equal(a.errors ?? null, b.errors ?? null, `${id} case ${index}`);
    }
  }
});

keywords.run();
