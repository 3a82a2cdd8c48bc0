/**
 * src/producer/request.ts plainRequest: the requests it accepts without the
 * full check (ENQ-1) are exactly ones the full check accepts, and it makes
 * of them the spec the full check's value makes, byte for byte. Every
 * request of conformance/vectors/request.json, and mutations of the
 * accepted ones aimed at each guard (each mutation here is one the guard it
 * names turns away; without that guard the comparison below fails).
 */
import { readFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { NEST_MAX } from '../../src/base/constants.ts';
import { checkRequestValue, normalizeChecked, plainRequest, specFromRequest } from '../../src/producer/request.ts';
import { serializeRecord, type VectorFile } from '../../src/records/codec.ts';
import { RawJson } from '../../src/records/raw-json.ts';

const PRODUCER = { host: 'h', boot_id: '00000000-0000-0000-0000-000000000000', pid_ns: 'pid:[1]', pid: 1, start: '1', uid: 0 };
const ID = '1796438421045000000-d1d59aa3fa26aeb7';

/** The spec bytes a request becomes, or the code the full check refuses it with. */
function fullVerdict(request: unknown): { ok: true; spec: string } | { ok: false; code: string } {
  try {
    return { ok: true, spec: specText(checkRequestValue(request, 'the request')) };
  } catch (error) {
    return { ok: false, code: (error as { code?: string }).code ?? String(error) };
  }
}

function specText(request: ReturnType<typeof checkRequestValue>): string {
  return serializeRecord(specFromRequest(ID, 1796438421045, normalizeChecked(request, { cwd: '/' }), PRODUCER)).toString('utf8');
}

let accepted = 0;
let declined = 0;
/** plainRequest's verdict against the full check's: never accepts what it refuses, and makes the same spec. */
function compare(request: unknown, what: string): void {
  const fast = plainRequest(request);
  const full = fullVerdict(request);
  if (fast === undefined) {
    declined++;
    return;
  }
  accepted++;
  assert.ok(full.ok, `${what}: plainRequest accepted what the full check refuses (${full.ok ? '' : full.code})`);
  if (full.ok) assert.is(specText(fast), full.spec, `${what}: the spec differs`);
  const payload = (fast as { payload?: unknown }).payload;
  if (payload instanceof RawJson) assert.equal(payload.value, JSON.parse(payload.text), `${what}: the payload's value is its text read back`);
}

const file = JSON.parse(readFileSync(new URL('../../conformance/vectors/request.json', import.meta.url), 'utf8')) as VectorFile;
const objects = file.tests.filter((test) => test.data !== undefined).map((test) => ({ what: test.description, data: test.data as Record<string, unknown> }));

function nest(depth: number, inner: unknown = 1): unknown {
  let value = inner;
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { k: value };
  return value;
}

class Point {
  constructor(readonly x: number) {}
}

/** Members and values that probe each guard of plainRequest, beside ones it takes. */
const MEMBER_VALUES: Record<string, unknown[]> = {
  handler: [undefined, 'a', 'mail.send_2-x', 'a'.repeat(64), 'a'.repeat(65), '', 'A', '-a', '.a', 'a b', 'é', 'a\ud800', 7, null],
  priority: [0, -0, 1, -1000, 1000, 1001, -1001, 0.5, '1', null, true, Number.NaN, Infinity, 2 ** 53],
  max_attempts: [1, 100, 0, 101, 1.5],
  timeout_ms: [1, 604_800_000, 0, 604_800_001, -1],
  kill_grace_ms: [0, 300_000, 300_001, -1],
  queue_deadline_ms: [null, 1, 2_592_000_000, 0, 2_592_000_001],
  retry_delay_ms: [0, 86_400_000, 86_400_001],
  max_output_bytes: [0, 67_108_864, 67_108_865],
  preemptible: [true, false, 0, 'true', null],
  payload: [
    undefined,
    null,
    0,
    -0,
    1.5,
    1e21,
    Number.NaN,
    Infinity,
    'x',
    '\ud800', // a lone surrogate: the request parser refuses its escape
    { '\udc00': 1 }, // in a member name too
    '\\ud800', // a backslash and "ud800": declined (harmlessly), never misread
    '😀',
    [1, 'two', { three: [null, true] }],
    JSON.parse('{"__proto__":{"a":1},"b":2}'),
    Object.assign(Object.create(null), { a: 1 }),
    nest(NEST_MAX - 1), // the payload's outermost array is at depth 2: within NEST_MAX
    nest(NEST_MAX), // one deeper than REC-1 allows
    nest(NEST_MAX + 5),
    new Date(0), // toJSON: JSON writes a string
    { when: new Date(0) },
    { toJSON: () => 'x' },
    Object.assign(Object.create({ toJSON: () => ({ r: new RawJson('1.0', 1) }) }), { a: 1 }), // an inherited toJSON returning a RawJson
    Object.assign([1], { toJSON: () => ({ r: new RawJson('1.0', 1) }) }), // an array's own
    new Point(1),
    { p: new Point(1) },
    new RawJson('[1e5,0.10]', [100000, 0.1]), // kept as written (REQ-2)
    { inner: new RawJson('1.50', 1.5) },
    [1, , 3], // eslint-disable-line no-sparse-arrays
    [1, undefined],
    { a: undefined, b: 1 },
    { f: () => 1 },
    () => 1,
    Symbol('s'),
    10n,
    Object.assign(Object.create({ inherited: 1 }), { own: 2 }),
  ],
  labels: [
    {},
    { team: 'web', '2': 'x', 'a/b.c_d-e': 'y'.repeat(256) },
    { team: 'é'.repeat(128) }, // 256 bytes
    { team: 'é'.repeat(129) }, // 258 bytes: over maxBytes
    { team: 'y'.repeat(257) },
    { Team: 'x' },
    { team: 1 },
    { team: 'a\u0000b' },
    { team: 'a\ud800' },
    Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`l${i}`, 'v'])),
    Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`l${i}`, 'v'])),
    JSON.parse('{"__proto__":"x"}'),
    [],
    null,
  ],
  env: [
    {},
    { LANG: 'C.UTF-8', _x: '', A1: 'é'.repeat(16_384) },
    { A: 'é'.repeat(16_385) },
    { A: 'x'.repeat(32_769) },
    { FSJOB_X: '1' },
    { FSJOBX: '1' },
    { '1A': 'x' },
    { A: 'a\u0000' },
    { A: '\udc00' },
    { A: { base64: '/w==' } },
    { A: 1 },
    JSON.parse('{"__proto__":"x"}'),
    Object.fromEntries(Array.from({ length: 256 }, (_, i) => [`E${i}`, 'v'])),
    Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`E${i}`, 'v'])),
    Object.assign(Object.create({ toJSON: () => ({}) }), { A: 'x' }),
  ],
  cwd: ['/', '/home/ana', `/${'é'.repeat(2047)}`, `/${'é'.repeat(2048)}`, `/${'x'.repeat(4096)}`, 'relative', '', '/a\u0000', '/\ud800', 5],
  argv: [
    ['true'],
    ['echo', '', 'a b', 'é😀'],
    [''],
    [],
    ['x'.repeat(4096)],
    ['x'.repeat(4097)],
    ['é'.repeat(2049)],
    ['true', 'x'.repeat(131_072)],
    ['true', 'x'.repeat(131_073)],
    ['true', 'é'.repeat(65_537)],
    ['tr\u0000ue'],
    ['true', 'a\u0000'],
    ['true', '\ud800'],
    [{ base64: '/w==' }],
    ['true', 1],
    ['true', undefined],
    Array.from({ length: 4096 }, () => 'a'),
    Array.from({ length: 4097 }, () => 'a'),
    Object.assign(['true'], { toJSON: () => ['false'] }),
    'true',
  ],
  fsjob: ['1.2', '1.0', '1.9', '2.0'],
  'x-note': ['kept out'],
  unknown: [1],
  toJSON: [() => ({ handler: 'other' })],
  __proto__: [{ handler: 'x' }],
};

const plain = suite('plainRequest against the full check (ENQ-1)');

plain('every request vector: the same verdict where plainRequest accepts, and the same spec', () => {
  for (const { what, data } of objects) compare(data, what);
});

plain('each member of an accepted request set to values at and past each bound, and to other types', () => {
  const bases = [{ handler: 'mail' }, { handler: 'mail', payload: { to: 'ana', n: 1 } }, { argv: ['make', 'site'] }, { argv: ['true'], cwd: '/srv', env: { A: '1' } }];
  for (const base of bases) {
    for (const [member, values] of Object.entries(MEMBER_VALUES)) {
      for (const value of values) {
        const request: Record<string, unknown> = { ...base };
        if (member === '__proto__') Object.defineProperty(request, member, { value, enumerable: true, writable: true, configurable: true });
        else request[member] = value;
        compare(request, `${JSON.stringify(base)} with ${member} = ${String(typeof value === 'symbol' ? 'symbol' : typeof value === 'bigint' ? 'bigint' : typeof value === 'function' ? 'function' : JSON.stringify(value))?.slice(0, 60)}`);
      }
    }
  }
});

plain('requests that are not plain objects, and a cycle', () => {
  const cycle: Record<string, unknown> = { handler: 'a' };
  cycle['payload'] = { back: cycle };
  const requests: [string, unknown][] = [
    ['null', null],
    ['an array', []],
    ['a string', 'x'],
    ['a number', 1],
    ['a class instance', Object.assign(new Point(1), { handler: 'a' })],
    ['an object without a prototype', Object.assign(Object.create(null), { handler: 'a', payload: 1 })],
    ['a payload that refers to the request', cycle],
  ];
  for (const [what, request] of requests) compare(request, what);
});

plain('a getter is read once, as JSON.stringify reads it', () => {
  let reads = 0;
  const request = {
    handler: 'a',
    get priority() {
      reads++;
      return 5;
    },
  };
  const fast = plainRequest(request);
  assert.is(reads, 1);
  assert.is(fast?.priority, 5);
});

plain('what the comparison covered: plainRequest took the common requests and declined the rest', () => {
  assert.ok(accepted >= 150, `accepted ${accepted}`);
  assert.ok(declined >= 200, `declined ${declined}`);
  // The request of the library's callers in the CPU bench is one it takes.
  assert.ok(plainRequest({ handler: 'bench', payload: { i: 1, pad: 'x'.repeat(400) } }) !== undefined);
});

plain.run();
