/**
 * The fast road to REC-1 (src/records/fast-json.ts: every reader's, the
 * audit's and the consumer's) gives exactly the scanner's answer
 * (parseRecordBytes): on every conformance vector, on
 * edge cases chosen to tempt JSON.stringify (exponents, -0, escapes, key
 * order, duplicates, __proto__, nesting at the limit), and on thousands of
 * random mutations of valid records.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { parseRecordBytes } from '../../src/records/json.ts';
import type { VectorFile } from '../../src/records/codec.ts';
import { fastParseRecordBytes, nativeParseRecordBytes } from '../../src/records/fast-json.ts';
import { mutateBytes, seededRandom, vectorCaseBytes } from '../support/mutations.ts';

const VECTORS = new URL('../../conformance/vectors/', import.meta.url);

function same(bytes: Buffer, label: string): void {
  const scanned = parseRecordBytes(bytes);
  assert.equal(fastParseRecordBytes(bytes), scanned, label);
  assert.equal(nativeParseRecordBytes(bytes), scanned, `${label} (native road)`);
}

const equivalence = suite('fast REC-1 parse answers as the scanner does');

equivalence('on every conformance vector', () => {
  let count = 0;
  for (const name of readdirSync(VECTORS).filter((file) => file.endsWith('.json'))) {
    const file = JSON.parse(readFileSync(new URL(name, VECTORS), 'utf8')) as VectorFile;
    if (file.record_type === 'request') continue;
    for (const test of file.tests) {
      same(vectorCaseBytes(test), `${name}: ${test.description}`);
      count += 1;
    }
  }
  assert.ok(count > 100, `${count} vectors`);
});

equivalence('on texts JSON.stringify would write differently or REC-1 forbids', () => {
  const nest = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;
  const texts = [
    '{"a":1}',
    '{"a":1e21}',
    '{"a":1e+21}',
    '{"a":100000000000000000000}',
    '{"a":1000000000000000000000}',
    '{"a":-0}',
    '{"a":0}',
    '{"a":1.5}',
    '{"payload":1.5,"result":[2.5e-7]}',
    '{"x":{"payload":1.5}}',
    '{"a":"\\u0001"}',
    '{"a":"\\ud800"}',
    '{"a":"\\/"}',
    '{"a":"\u2028"}',
    '{"a":"é😀"}',
    '{"2":0,"1":0}',
    '{"1":0,"2":0}',
    '{"a":1,"a":1}',
    '{"__proto__":{"x":1}}',
    '{"a":[1, 2]}',
    '[1]',
    '{}',
    `{"payload":${nest(127)}}`,
    `{"payload":${nest(128)}}`,
    `{"a":${nest(127)}}`,
    `{"a":${nest(128)}}`,
    // Deep enough to overflow JSON.stringify's recursion: the native road must bound the nesting before it.
    `{"payload":${nest(200_000)}}`,
    '{"a":12345678901234567890}',
    '{"a":9007199254740993}',
    '{"a":true,"b":null,"c":false}',
    // The one-pass road (plainValue): integer lengths around what reads back exactly, escapes, duplicates deeper down, signs.
    '{"a":123456789012345}',
    '{"a":1234567890123456}',
    '{"a":-123456789012345}',
    '{"a":-01}',
    '{"a":00}',
    '{"a":-}',
    '{"a":1,"b":{"c":1,"c":2}}',
    '{"a":[{"b":1},{"b":1,"b":1}]}',
    '{"a":"\\b\\f\\n\\r\\t\\"\\\\"}',
    '{"a":"\\x"}',
    '{"a":"x\ty"}',
    '{"a":"1:2","b":[1,2]}',
    '{"a":"{[","b":"]}"}',
  ];
  for (const text of texts) {
    for (const ending of ['\n', '', '\n\n', ' \n', '\r\n']) same(Buffer.from(`${text}${ending}`), JSON.stringify(text + ending));
  }
  same(Buffer.from([0xef, 0xbb, 0xbf, ...Buffer.from('{"a":1}\n')]), 'byte order mark');
  same(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d, 0x0a]), 'invalid UTF-8');
  same(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xf0, 0x90, 0x80, 0x22, 0x7d, 0x0a]), 'truncated UTF-8 sequence');
});

equivalence('on 5000 random byte mutations of valid records', () => {
  const random = seededRandom(0x5eed_f00d);
  const originals = [
    '{"fsjob":"1.0","type":"claim","job_id":"1764476044123456789-3fa2c1d09b8e7f64","gen":1,"owner":{"host":"h","boot_id":"b","pid_ns":"pid:[1]","pid":2,"start":"3","uid":0},"worker_id":null,"claimed_ms":1,"lease_ms":30000}\n',
    '{"fsjob":"1.0","type":"receipt","payload":[1.5,{"k":"v"}],"result":{"x":-2.5e-3},"message":"ré\\n😀","n":-12}\n',
  ].map((text) => Buffer.from(text));
  for (let i = 0; i < 5000; i++) {
    const bytes = mutateBytes(originals[i % originals.length] as Buffer, random);
    same(bytes, `mutation ${i}: ${JSON.stringify(bytes.toString('latin1'))}`);
  }
});

equivalence.run();
