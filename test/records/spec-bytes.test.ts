/**
 * src/records/spec-bytes.ts builtSpecBytes: where it answers, its bytes are
 * serializeRecord's, byte for byte; where serializeRecord refuses (REC-1,
 * REC-2), it does not answer. Over the spec a producer writes for a payload
 * job, payloads kept as written, and mutations aimed at each guard (each
 * guard has one here that only it turns away: without it the comparison
 * fails). It must take the common spec, or it saves nothing.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { serializeRecord } from '../../src/records/json-write.ts';
import { builtSpecBytes } from '../../src/records/spec-bytes.ts';
import { RawJson } from '../../src/records/raw-json.ts';
import { normalizeRequest, specFromRequest } from '../../src/producer/request.ts';
import { RECORD_MAX } from '../../src/base/constants.ts';
import type { Identity, JobRequest } from '../../src/records/codec.ts';

const test = suite('records/spec-bytes');

const PRODUCER: Identity = { host: 'vm', boot_id: '06bb2271-88ff-4a65-b1c7-075270ddc195', pid_ns: 'pid:[4026531836]', pid: 17884, start: '2274540', uid: 1000 };
const ID = '1796438421045000000-d1d59aa3fa26aeb7';

/** A spec as enqueue builds it from `request`. */
function built(request: JobRequest): Record<string, unknown> {
  return specFromRequest(ID, 1796438421045, normalizeRequest(request, { cwd: '/srv' }), PRODUCER) as unknown as Record<string, unknown>;
}

/** builtSpecBytes answers only with serializeRecord's bytes; true when it answered. */
function compare(spec: Record<string, unknown>, what: string): boolean {
  const fast = builtSpecBytes(spec);
  if (fast === undefined) return false;
  let slow: Buffer;
  try {
    slow = serializeRecord(spec);
  } catch (error) {
    assert.unreachable(`${what}: builtSpecBytes wrote a spec serializeRecord refuses (${error instanceof Error ? error.message : String(error)})`);
    return true;
  }
  assert.is(fast.toString('utf8'), slow.toString('utf8'), what);
  return true;
}

const BASE = built({ handler: 'bench', payload: { i: 0, pad: 'x'.repeat(400) } });

test('the specs a producer writes for payload jobs are taken, with serializeRecord\'s bytes', () => {
  assert.ok(compare(BASE, 'the bench\'s spec'));
  const requests: JobRequest[] = [
    { handler: 'h', payload: null },
    { handler: 'h' },
    { handler: 'h', payload: 'text "quoted" \\ and é' },
    { handler: 'h', payload: [1, 2.5, -0, 1e21, { a: [null, true] }] },
    { handler: 'h', payload: { 'with,"payload":0,': 1 }, env: { LANG: 'C' }, labels: { team: 'web' }, queue_deadline_ms: 60_000, priority: -5, output_keep: 'tail' },
  ];
  for (const request of requests) assert.ok(compare(built(request), JSON.stringify(request)), JSON.stringify(request));
});

test('a payload kept as written is written as written (REQ-2), numbers and all', () => {
  for (const text of ['1e400', '1.50', '12345678901234567890123', '{"a":[1e5,-0.0]}', '"\\u00e9"']) {
    const spec = { ...BASE, payload: new RawJson(text, JSON.parse(text)) };
    assert.ok(compare(spec, text), text);
    assert.ok(builtSpecBytes(spec)?.toString('utf8').includes(`"payload":${text},`), text);
  }
});

test('what it does not answer: each guard turns away a spec only it sees', () => {
  const mutations: [string, Record<string, unknown>][] = [
    // the payload kept as written (a plain value would be walked: -0, NaN, a toJSON)
    ['a payload that is not a RawJson', { ...BASE, payload: { n: Number.NaN } }],
    // flatPlain: plain members at most two deep, numbers safe integers
    ['created_ms NaN', { ...BASE, created_ms: Number.NaN }],
    ['timeout_ms 1.5', { ...BASE, timeout_ms: 1.5 }],
    ['the producer\'s pid past 2^53', { ...BASE, producer: { ...PRODUCER, pid: 2 ** 53 } }],
    ['an env value that is a Date', { ...BASE, env: { A: new Date(0) } }],
    ['a spec member that is a Map', { ...BASE, labels: new Map([['team', 'web']]) }],
    ['a label that is an object with toJSON', { ...BASE, labels: { team: { toJSON: () => 'web' } } }],
    ['a label holding an empty object under "payload"', { ...BASE, labels: { payload: {} } }],
    ['a command job', built({ argv: ['true'] })],
    // the escaped lone surrogate (plainSpec's tokens do not look for one)
    ['a lone surrogate in the producer\'s host', { ...BASE, producer: { ...PRODUCER, host: 'vm\ud800' } }],
    ['a lone surrogate in the lane', { ...BASE, lane: 'a\udc00' }],
    // REC-2
    ['a spec over RECORD_MAX', { ...BASE, payload: new RawJson(JSON.stringify('x'.repeat(RECORD_MAX)), 'x'.repeat(RECORD_MAX)) }],
  ];
  for (const [what, spec] of mutations) {
    assert.is(builtSpecBytes(spec), undefined, what);
    compare(spec, what);
  }
  let refused = 0;
  for (const [, spec] of mutations) {
    try {
      serializeRecord(spec);
    } catch {
      refused++;
    }
  }
  assert.ok(refused >= 8, `${refused} of the mutations are refused by serializeRecord: the guards stand between a write and a refusal`);
});

test('a false alarm only costs the walk: a text holding a backslash and "ud800" is written by serializeRecord', () => {
  const spec = { ...BASE, lane: 'a\\ud800' };
  assert.is(builtSpecBytes(spec), undefined);
  assert.ok(serializeRecord(spec).toString('utf8').includes('"lane":"a\\\\ud800"'));
});

test.run();
