import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { isFsjobError } from '../../src/base/errors.ts';
import { type ParseFailureCode, parseRecordBytes } from '../../src/records/json.ts';
import { serializeRecord } from '../../src/records/json-write.ts';
import { RawJson } from '../../src/records/raw-json.ts';
import { NEST_MAX } from '../../src/base/constants.ts';

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');
function failure(text: string | Buffer, form: 'record' | 'request' = 'record'): ParseFailureCode | undefined {
  const result = parseRecordBytes(typeof text === 'string' ? bytes(text) : text, form);
  return result.ok ? undefined : result.failure.code;
}
function throwsCode(fn: () => unknown, code: string): void {
  try {
    fn();
  } catch (error) {
    assert.ok(isFsjobError(error), String(error));
    assert.is(error.code, code);
    return;
  }
  assert.unreachable(`expected ${code}`);
}

const roundTrip = suite('serializeRecord and parseRecordBytes');

roundTrip('a serialized record parses back to an equal value', () => {
  const value = { fsjob: '1.0', type: 'x', n: 0, neg: -5, s: 'tab\there "q" \\ é 😀 \u0001 \u001f \u007f \u2028', a: [1, [2, {}], null, true, false], o: { nested: { deep: 'x' } } };
  const encoded = serializeRecord(value);
  assert.is(encoded.at(-1), 0x0a);
  const parsed = parseRecordBytes(encoded);
  assert.ok(parsed.ok);
  assert.equal(parsed.value, value);
});

roundTrip('the bytes are JSON.stringify output and one line feed', () => {
  const value = { b: 1, a: 'é', '2': 0, '1': 0 };
  assert.is(serializeRecord(value).toString('utf8'), `${JSON.stringify(value)}\n`);
});

roundTrip('integer-like member names in written order are compact, though a JSON.parse/JSON.stringify round trip reorders them', () => {
  const text = '{"2":0,"1":0}\n';
  const parsed = parseRecordBytes(bytes(text));
  assert.ok(parsed.ok);
  assert.is.not(`${JSON.stringify(parsed.value)}\n`, text);
});

roundTrip('a member named __proto__ is an own member, not a prototype', () => {
  const parsed = parseRecordBytes(bytes('{"__proto__":{"polluted":true}}\n'));
  assert.ok(parsed.ok);
  assert.ok(Object.hasOwn(parsed.value, '__proto__'));
  assert.is(({} as Record<string, unknown>)['polluted'], undefined);
  assert.is(Object.getPrototypeOf(parsed.value), Object.prototype);
});

roundTrip('payload and result may hold fractions and exponents; their bytes stay as written', () => {
  assert.ok(parseRecordBytes(bytes('{"payload":[1.5,2e3,-0]}\n')).ok);
  assert.ok(parseRecordBytes(bytes('{"result":{"r":0.25}}\n')).ok);
  assert.is(serializeRecord({ payload: 0.5, result: 1e21 }).toString(), '{"payload":0.5,"result":1e+21}\n');
});

roundTrip('undefined members are left out, as JSON.stringify does', () => {
  assert.is(serializeRecord({ a: 1, b: undefined }).toString(), '{"a":1}\n');
});

roundTrip.run();

const refuse = suite('serializeRecord refuses what has no compact form');

refuse('a lone surrogate in a string or a member name', () => {
  throwsCode(() => serializeRecord({ s: 'a\ud800' }), 'INVALID_RECORD');
  throwsCode(() => serializeRecord({ o: { ['\udc00']: 1 } }), 'INVALID_RECORD');
});

refuse('a non-integer number outside payload and result', () => {
  throwsCode(() => serializeRecord({ gen: 1.5 }), 'INVALID_RECORD');
  throwsCode(() => serializeRecord({ o: { n: 0.1 } }), 'INVALID_RECORD');
  throwsCode(() => serializeRecord({ big: 2 ** 53 }), 'INVALID_RECORD');
});

refuse('NaN and Infinity anywhere', () => {
  throwsCode(() => serializeRecord({ payload: Number.NaN }), 'INVALID_RECORD');
  throwsCode(() => serializeRecord({ result: [Number.POSITIVE_INFINITY] }), 'INVALID_RECORD');
});

refuse('values JSON cannot hold: bigint, functions, dates, undefined in arrays', () => {
  throwsCode(() => serializeRecord({ n: 1n }), 'INVALID_RECORD');
  throwsCode(() => serializeRecord({ f: () => 1 }), 'INVALID_RECORD');
  throwsCode(() => serializeRecord({ d: new Date(0) }), 'INVALID_RECORD');
  throwsCode(() => serializeRecord({ a: [undefined] }), 'INVALID_RECORD');
  throwsCode(() => serializeRecord([1]), 'INVALID_RECORD');
});

refuse('nesting deeper than NEST_MAX, and cycles', () => {
  let deep: unknown = {};
  for (let i = 1; i < NEST_MAX; i++) deep = { d: deep };
  serializeRecord(deep); // exactly NEST_MAX levels
  throwsCode(() => serializeRecord({ d: deep }), 'INVALID_RECORD');
  const cycle: Record<string, unknown> = {};
  cycle['self'] = cycle;
  throwsCode(() => serializeRecord(cycle), 'INVALID_RECORD');
});

refuse('a record over RECORD_MAX', () => {
  throwsCode(() => serializeRecord({ payload: 'x'.repeat(1_048_576) }), 'TOO_LARGE');
});

refuse.run();

const parse = suite('parseRecordBytes reports each REC-1 violation');

const cases: [string, string | Buffer, ParseFailureCode][] = [
  ['an empty file', '', 'RECORD_EMPTY'],
  ['bytes that are not UTF-8', Buffer.from([0x7b, 0xff, 0x7d, 0x0a]), 'RECORD_BAD_UTF8'],
  ['a UTF-8 encoded surrogate', Buffer.from([0x7b, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x3a, 0x31, 0x7d, 0x0a]), 'RECORD_BAD_UTF8'],
  ['a byte order mark', '\ufeff{}\n', 'RECORD_BOM'],
  ['no final line feed', '{}', 'RECORD_NO_FINAL_LF'],
  ['two line feeds', '{}\n\n', 'RECORD_TRAILING_DATA'],
  ['a second record', '{}\n{}\n', 'RECORD_TRAILING_DATA'],
  ['data before the line feed', '{}x\n', 'RECORD_TRAILING_DATA'],
  ['CRLF', '{}\r\n', 'RECORD_NOT_COMPACT'],
  ['a space before the line feed', '{} \n', 'RECORD_NOT_COMPACT'],
  ['a leading space', ' {}\n', 'RECORD_NOT_COMPACT'],
  ['a space after a colon', '{"a": 1}\n', 'RECORD_NOT_COMPACT'],
  ['a space after a comma', '{"a":1, "b":2}\n', 'RECORD_NOT_COMPACT'],
  ['a newline inside an array', '{"a":[1,\n2]}\n', 'RECORD_NOT_COMPACT'],
  ['the escape \\/', '{"a":"\\/"}\n', 'RECORD_NOT_COMPACT'],
  ['\\u0041 for a printable character', '{"a":"\\u0041"}\n', 'RECORD_NOT_COMPACT'],
  ['\\u escape of a surrogate pair', '{"a":"\\ud83d\\ude00"}\n', 'RECORD_NOT_COMPACT'],
  ['\\u000a where \\n exists', '{"a":"\\u000a"}\n', 'RECORD_NOT_COMPACT'],
  ['\\u0009 where \\t exists', '{"a":"\\u0009"}\n', 'RECORD_NOT_COMPACT'],
  ['uppercase hex in \\u001F', '{"a":"\\u001F"}\n', 'RECORD_NOT_COMPACT'],
  ['\\u007f for DEL', '{"a":"\\u007f"}\n', 'RECORD_NOT_COMPACT'],
  ['an integer written 1.0', '{"gen":1.0}\n', 'RECORD_NOT_COMPACT'],
  ['an integer written 1e3', '{"n":1e3}\n', 'RECORD_NOT_COMPACT'],
  ['-0', '{"n":-0}\n', 'RECORD_NOT_COMPACT'],
  ['a fraction in an extension member', '{"x-a":0.5}\n', 'RECORD_NOT_COMPACT'],
  ['a leading zero', '{"n":01}\n', 'RECORD_BAD_JSON'],
  ['a plus sign', '{"n":+1}\n', 'RECORD_BAD_JSON'],
  ['an escaped lone surrogate', '{"a":"\\udc00"}\n', 'RECORD_BAD_JSON'],
  ['a raw control character in a string', '{"a":"\u0001"}\n', 'RECORD_BAD_JSON'],
  ['an invalid escape', '{"a":"\\x"}\n', 'RECORD_BAD_JSON'],
  ['a truncated object', '{"a":\n', 'RECORD_BAD_JSON'],
  ['a trailing comma', '{"a":1,}\n', 'RECORD_BAD_JSON'],
  ['single quotes', "{'a':1}\n", 'RECORD_BAD_JSON'],
  ['an array', '[]\n', 'RECORD_NOT_OBJECT'],
  ['a string', '"{}"\n', 'RECORD_NOT_OBJECT'],
  ['a duplicate top-level member', '{"a":1,"a":1}\n', 'RECORD_DUPLICATE_KEY'],
  ['a duplicate nested member', '{"o":[{"k":1,"k":2}]}\n', 'RECORD_DUPLICATE_KEY'],
  ['a duplicate spelled with an escape', '{"a":1,"\\u0061":2}\n', 'RECORD_DUPLICATE_KEY'],
  ['nesting of 129', `{"a":${'['.repeat(128)}${']'.repeat(128)}}\n`, 'RECORD_TOO_DEEP'],
];
for (const [what, text, code] of cases) {
  parse(`${what}: ${code}`, () => assert.is(failure(text), code));
}

parse('nesting of exactly 128 is allowed', () => {
  assert.is(failure(`{"a":${'['.repeat(127)}${']'.repeat(127)}}\n`), undefined);
});

parse('a failure says where: byte offset and member pointer', () => {
  const result = parseRecordBytes(bytes('{"a":{"b":1,"b":2}}\n'));
  if (result.ok) return assert.unreachable('a duplicate was accepted');
  assert.is(result.failure.field, '/a/b');
  assert.is(result.failure.offset, 12);
});

parse('a million-deep array fails as too deep instead of overflowing the stack', () => {
  assert.is(failure(`{"a":${'['.repeat(1_000_000)}}\n`), 'RECORD_TOO_DEEP');
});

parse.run();

const request = suite('parseRecordBytes in request form (REQ-1)');

request('whitespace, CRLF and a missing final line feed are allowed', () => {
  assert.is(failure(' {\r\n  "argv" : [ "true" ]\r\n}\r\n', 'request'), undefined);
  assert.is(failure('{"argv":["true"]}', 'request'), undefined);
});

request('everything else of REC-1 still holds', () => {
  assert.is(failure('\ufeff{}', 'request'), 'RECORD_BOM');
  assert.is(failure('{"a":1,"a":2}', 'request'), 'RECORD_DUPLICATE_KEY');
  assert.is(failure('{} {}', 'request'), 'RECORD_TRAILING_DATA');
  assert.is(failure('[]', 'request'), 'RECORD_NOT_OBJECT');
});

request('a payload is kept as written, number for number and member for member (REQ-2)', () => {
  const parsed = parseRecordBytes(Buffer.from('{ "handler" : "h", "payload" : {"b":[1e400, 12345678901234567890123 ,1.50,-0,1E+2],"2":"\\u0041\\/"} }', 'utf8'), 'request');
  assert.ok(parsed.ok);
  const payload = parsed.value['payload'] as unknown;
  assert.instance(payload, RawJson);
  assert.is((payload as RawJson).text, '{"b":[1e400,12345678901234567890123,1.50,-0,1E+2],"2":"A/"}');
  assert.is(serializeRecord({ handler: 'h', payload }).toString('utf8'), '{"handler":"h","payload":{"b":[1e400,12345678901234567890123,1.50,-0,1E+2],"2":"A/"}}\n');
  // Outside payload and result nothing is kept as written.
  assert.throws(() => serializeRecord({ argv: payload }), /kept as written/);
  // A record read to be copied keeps its payload's text too (fsjob retry).
  const record = parseRecordBytes(Buffer.from('{"payload":[1e5,0.1]}\n', 'utf8'), 'record', { keepPayload: true });
  assert.ok(record.ok);
  assert.is((record.value['payload'] as unknown as RawJson).text, '[1e5,0.1]');
});

request('serializeRecord writes a RawJson as its text at the top and below it, and leaves out undefined members as JSON.stringify does', () => {
  const raw = new RawJson('[1e5,0.10]', [100000, 0.1]);
  // A member of the record: written member by member.
  assert.is(serializeRecord({ a: 1, payload: raw, gone: undefined, z: { s: 'é"' } }).toString('utf8'), '{"a":1,"payload":[1e5,0.10],"z":{"s":"é\\""}}\n');
  // Below a member (inside the payload, or the result): the whole text keeps it too.
  assert.is(serializeRecord({ payload: { inner: raw, n: [raw] }, result: raw }).toString('utf8'), '{"payload":{"inner":[1e5,0.10],"n":[[1e5,0.10]]},"result":[1e5,0.10]}\n');
  // A record after one with a RawJson below the top is written by members again (no state carried over).
  assert.is(serializeRecord({ payload: raw }).toString('utf8'), '{"payload":[1e5,0.10]}\n');
  assert.is(serializeRecord({ b: [1, 'x'], c: null }).toString('utf8'), '{"b":[1,"x"],"c":null}\n');
});

request.run();
