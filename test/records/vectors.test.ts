import { readFileSync, readdirSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { isFindingCode } from '../../src/records/findings.ts';
import { checkRecord, isValidRecord, recordNameOf, serializeRecord, type VectorCase, type VectorFile } from '../../src/records/codec.ts';
import { schemaErrors } from '../../src/records/schemas.ts';

const DIR = new URL('../../conformance/vectors/', import.meta.url);
const files = readdirSync(DIR).filter((name) => name.endsWith('.json')).sort();

/** The file bytes of a case, exactly as conformance/vectors/README.md says. */
export function caseBytes(test: VectorCase): Buffer {
  if (test.raw !== undefined) return Buffer.from(test.raw, 'utf8');
  if (test.raw_base64 !== undefined) return Buffer.from(test.raw_base64, 'base64');
  return Buffer.from(`${JSON.stringify(test.data)}\n`, 'utf8');
}

const shape = suite('vector files');

shape('every record type and the request form has a vector file', () => {
  assert.equal(files, ['cancel', 'claim', 'end', 'exec', 'hold', 'pause', 'queue', 'receipt', 'release', 'request', 'spec', 'state', 'worker'].map((t) => `${t}.json`));
});

shape('every vector file matches schemas/vector-case.schema.json', () => {
  for (const name of files) {
    const file: unknown = JSON.parse(readFileSync(new URL(name, DIR), 'utf8'));
    assert.equal(schemaErrors('vector-case', file), [], name);
  }
});

shape('counts: at least 15 valid and 25 invalid for spec, state, claim, receipt; 8 and 12 for the others', () => {
  for (const name of files) {
    const file = JSON.parse(readFileSync(new URL(name, DIR), 'utf8')) as VectorFile;
    const valid = file.tests.filter((test) => test.valid).length;
    const big = ['spec', 'state', 'claim', 'receipt'].includes(file.record_type);
    assert.ok(valid >= (big ? 15 : 8), `${name}: ${valid} valid`);
    assert.ok(file.tests.length - valid >= (big ? 25 : 12), `${name}: ${file.tests.length - valid} invalid`);
  }
});

shape('every expected finding is a registered code', () => {
  for (const name of files) {
    const file = JSON.parse(readFileSync(new URL(name, DIR), 'utf8')) as VectorFile;
    for (const test of file.tests) if (test.finding !== undefined) assert.ok(isFindingCode(test.finding), `${name}: ${test.finding}`);
  }
});

shape.run();

for (const name of files) {
  const file = JSON.parse(readFileSync(new URL(name, DIR), 'utf8')) as VectorFile;
  const cases = suite(`vectors: ${file.record_type}`);
  for (const test of file.tests) {
    cases(`${test.valid ? 'accepts' : 'rejects'}: ${test.description}`, () => {
      let options = {};
      if (test.file_name !== undefined) {
        const named = recordNameOf(test.file_name);
        assert.ok(named, `file_name ${test.file_name} names a record`);
        assert.is(named.type, file.record_type);
        options = named.expectations;
      }
      const findings = checkRecord(file.record_type, caseBytes(test), { path: test.file_name ?? name, ...options });
      assert.is(isValidRecord(findings), test.valid, JSON.stringify(findings));
      if (test.finding !== undefined) assert.is(findings[0]?.code, test.finding, JSON.stringify(findings));
      if (test.valid && test.data !== undefined) {
        // A valid data case serializes to the same bytes a writer would produce.
        assert.equal(serializeRecord(test.data), caseBytes(test));
      }
    });
  }
  cases.run();
}
