/**
 * The two engines of src/records/schemas.ts give the same answer: ajv's
 * compiled code and the interpreter that reads the documents, over every
 * conformance vector and over records changed at random from the valid
 * ones (a member set to another value, removed, or added), compared as the
 * findings a reader reports (code, field, clause and message, in order).
 */
import { readFileSync, readdirSync } from 'node:fs';
import fc from 'fast-check';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { validators } from '../../src/records/generated/validators.js';
import { interpretedErrors } from '../../src/records/interpret.ts';
import { parseRecordBytes } from '../../src/records/json.ts';
import { type CompiledValidator, schemaDocuments, schemaFindings } from '../../src/records/schemas.ts';
import type { VectorFile } from '../../src/records/codec.ts';

const DIR = new URL('../../conformance/vectors/', import.meta.url);
const files = readdirSync(DIR)
  .filter((name) => name.endsWith('.json'))
  .map((name) => JSON.parse(readFileSync(new URL(name, DIR), 'utf8')) as VectorFile);

/** What each engine reports for `value` against `type`: validity and findings. */
function both(type: string, value: unknown): { compiled: string; interpreted: string } {
  const validate = (validators as Readonly<Record<string, CompiledValidator>>)[type] as CompiledValidator;
  const valid = validate(value);
  const compiled = valid ? [] : [...(validate.errors ?? [])];
  const interpreted = interpretedErrors(schemaDocuments(), type, value);
  const findings = (errors: typeof compiled): string => JSON.stringify({ valid: errors.length === 0, findings: schemaFindings(errors, type, { path: '-' }) });
  return { compiled: findings(compiled), interpreted: findings(interpreted) };
}

/** A case's value, as a reader would have it after REC-1 (cases whose bytes do not parse never reach the schema). */
function valueOf(test: VectorFile['tests'][number], type: string): { value: unknown } | undefined {
  if (test.raw === undefined && test.raw_base64 === undefined) return { value: test.data };
  const bytes = test.raw !== undefined ? Buffer.from(test.raw, 'utf8') : Buffer.from(test.raw_base64 as string, 'base64');
  const parsed = parseRecordBytes(bytes, type === 'request' ? 'request' : 'record');
  return parsed.ok ? { value: parsed.value } : undefined;
}

const vectors = suite('interpreted schemas: conformance vectors');

for (const file of files) {
  vectors(`${file.record_type}: every vector gets the findings ajv's compiled code gives`, () => {
    let compared = 0;
    for (const test of file.tests) {
      const value = valueOf(test, file.record_type);
      if (value === undefined) continue;
      const { compiled, interpreted } = both(file.record_type, value.value);
      assert.is(interpreted, compiled, test.description);
      compared += 1;
    }
    assert.ok(compared >= 10, `${file.record_type}: ${compared} cases compared`);
  });
}

vectors.run();

const mutated = suite('interpreted schemas: changed records');

/** Every member path of a JSON value (the root is []). */
function paths(value: unknown, at: string[] = [], out: string[][] = []): string[][] {
  out.push(at);
  if (typeof value === 'object' && value !== null) for (const key of Object.keys(value)) paths((value as Record<string, unknown>)[key], [...at, key], out);
  return out;
}

const valid: [string, unknown][] = files.flatMap((file) => file.tests.filter((test) => test.valid && test.data !== undefined).map((test): [string, unknown] => [file.record_type, test.data]));

/** Values near the schemas' edges: bounds (SLOTS_MAX, AFTER_MAX among them), patterns, types, the versions VER-2/VER-3 turn on and 1.2's dependency members. */
const edgeValue = fc.oneof(
  fc.constantFrom(null, true, false, 0, 1, -1, 1.5, 2 ** 53, 4096, 1e10, '', '1.0', '1.1', '1.2', '1.7', '2.0', 'SIGKILL', 'a\u0001', 'x'.repeat(300), 'head', '0123456789abcdef', 'succeeded', 'finished', 64, 65, 256),
  fc.integer({ min: -5, max: 5 }),
  fc.string({ maxLength: 4 }),
  fc.array(fc.oneof(fc.string({ maxLength: 3 }), fc.integer()), { maxLength: 3 }),
  fc.dictionary(fc.constantFrom('a', 'A', 'x-y', '1', 'exit', 'signal', 'pgid', 'host', 'job_id', 'when'), fc.oneof(fc.string({ maxLength: 2 }), fc.integer(), fc.constant(null)), { maxKeys: 3 }),
);

mutated('a member set, removed or added anywhere gets the same findings from both engines', () => {
  fc.assert(
    fc.property(fc.nat(valid.length - 1), fc.nat(1000), edgeValue, fc.constantFrom('set', 'delete', 'add'), fc.constantFrom('x-z', 'bogus', 'fsjob'), (which, where, value, change, name) => {
      const [type, base] = valid[which] as [string, unknown];
      const record = structuredClone(base) as Record<string, unknown>;
      const all = paths(record);
      const path = all[where % all.length] as string[];
      if (path.length === 0) {
        if (change === 'add') record[name] = value;
      } else {
        let parent = record as Record<string, unknown>;
        for (const key of path.slice(0, -1)) parent = parent[key] as Record<string, unknown>;
        const last = path[path.length - 1] as string;
        const member = parent[last];
        if (change === 'set') parent[last] = value;
        else if (change === 'delete') {
          if (Array.isArray(parent)) parent.splice(Number(last), 1);
          else delete parent[last];
        } else if (typeof member === 'object' && member !== null && !Array.isArray(member)) (member as Record<string, unknown>)[name] = value;
        else parent[last] = value;
      }
      const { compiled, interpreted } = both(type, record);
      assert.is(interpreted, compiled, `${type}: ${JSON.stringify(record).slice(0, 400)}`);
    }),
    { numRuns: 4000, seed: 20261204 },
  );
});

mutated.run();
