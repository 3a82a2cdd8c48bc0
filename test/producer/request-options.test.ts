/**
 * A request from options as typed (src/producer/request-options.ts): the
 * units, the bounds of section 5.2 (src/base/constants.ts) in each
 * option's own unit, the flag named on a refusal, and the refused member as
 * the error's field (never read back out of a message).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { KILL_GRACE_MAX, PRIORITY_MAX, PRIORITY_MIN, RETRY_DELAY_MAX, SLOTS_MAX } from '../../src/base/constants.ts';
import { isFsjobError } from '../../src/base/errors.ts';
import { normalizeRequest } from '../../src/producer/request.ts';
import { requestFromOptions, requestOptionNamed } from '../../src/producer/request-options.ts';
import { RawJson } from '../../src/records/raw-json.ts';

const options = suite('requestFromOptions');

function refusal(run: () => unknown): { code: string; message: string; field: string | undefined } {
  try {
    run();
  } catch (error) {
    if (isFsjobError(error)) return { code: error.code, message: error.message, field: error.field };
    throw error;
  }
  throw new Error('not refused');
}

options('units become the members of a request, with the defaults left to the producer', () => {
  const now = 1_800_000_000_000;
  const request = requestFromOptions(
    { timeout: '10m', 'kill-grace': '30s', 'retry-delay': '1 hour', 'max-attempts': 3, priority: -5, 'max-output': '64k', env: ['A=1', 'HOME'], label: ['team=ops'], delay: '2 hours', lane: 'l' },
    ['make', 'test'],
    { environment: (name) => (name === 'HOME' ? '/home/u' : undefined), cwd: () => '/srv', now },
  );
  assert.equal(request, {
    argv: ['make', 'test'],
    cwd: '/srv',
    timeout_ms: 600_000,
    kill_grace_ms: 30_000,
    retry_delay_ms: 3_600_000,
    max_attempts: 3,
    priority: -5,
    max_output_bytes: 65_536,
    env: { A: '1', HOME: '/home/u' },
    labels: { team: 'ops' },
    lane: 'l',
    not_before_ms: now + 7_200_000,
  });
});

options('the bounds are those of section 5.2, said in the option\'s unit', () => {
  assert.equal(refusal(() => requestFromOptions({ 'kill-grace': `${KILL_GRACE_MAX + 1000}ms` }, ['x'])).message, '--kill-grace 301000ms is too large: at most 5m');
  assert.equal(refusal(() => requestFromOptions({ 'retry-delay': `${RETRY_DELAY_MAX / 1000 + 1}` }, ['x'])).message, '--retry-delay 86401 is too large: at most 1d');
  assert.equal(refusal(() => requestFromOptions({ priority: PRIORITY_MAX + 1 }, ['x'])).message, `--priority 1001 is too large: at most ${PRIORITY_MAX}`);
  assert.equal(refusal(() => requestFromOptions({ priority: PRIORITY_MIN - 1 }, ['x'])).message, `--priority -1001 is too small: at least ${PRIORITY_MIN}`);
  assert.is(refusal(() => requestFromOptions({ at: 'yesterday' }, ['x'])).field, '/not_before_ms');
  assert.is(refusal(() => requestFromOptions({ payload: '{' , handler: 'h' }, [])).field, '/payload');
});

options('a command or a handler, not both and not neither', () => {
  assert.is(refusal(() => requestFromOptions({ handler: 'h' }, ['x'])).code, 'USAGE');
  assert.match(refusal(() => requestFromOptions({}, [])).message, /after --/);
  // REQ-2: the payload is kept as written (a RawJson: its compact text, number for number, and its value).
  const request = requestFromOptions({ handler: 'resize', payload: '{"w": 640, "big": 12345678901234567890123, "f": 1.50}' }, []);
  assert.is(request.handler, 'resize');
  assert.ok(request.payload instanceof RawJson);
  assert.is((request.payload as unknown as RawJson).text, '{"w":640,"big":12345678901234567890123,"f":1.50}');
  assert.equal(Object.keys(request), ['handler', 'payload']);
});

options('--after, --hold and --lane-slots (1.2): dependencies as typed, refusals with the member refused as field', () => {
  const id = '1796000000000000000-0123456789abcdef';
  const request = requestFromOptions({ after: [`${id}`, '1796:finished,abcd'], hold: true, lane: 'render', 'lane-slots': '3' }, ['x'], { cwd: () => '/srv' });
  assert.equal(request.after, [
    { job_id: id, when: 'succeeded' },
    { job_id: '1796', when: 'finished' },
    { job_id: 'abcd', when: 'succeeded' },
  ]);
  assert.is(request.hold, true);
  assert.is(request.lane_slots, 3);
  assert.equal(Object.keys(requestFromOptions({ hold: false }, ['x'])), ['argv'], 'no --hold, no member');
  const noLane = refusal(() => requestFromOptions({ 'lane-slots': 2 }, ['x']));
  assert.is(noLane.field, '/lane_slots');
  assert.match(noLane.message, /^--lane-slots needs --lane/);
  const tooMany = refusal(() => requestFromOptions({ lane: 'l', 'lane-slots': SLOTS_MAX + 1 }, ['x']));
  assert.is(tooMany.field, '/lane_slots');
  assert.is(tooMany.message, `--lane-slots ${SLOTS_MAX + 1} is too large: at most ${SLOTS_MAX}`);
  const when = refusal(() => requestFromOptions({ after: [id, `${id}:done`] }, ['x']));
  assert.is(when.field, '/after/1/when');
  assert.is(refusal(() => requestFromOptions({ after: [' '] }, ['x'])).field, '/after');
  // Options read before: the member is the field too.
  assert.is(refusal(() => requestFromOptions({ timeout: 'soon' }, ['x'])).field, '/timeout_ms');
  assert.is(requestOptionNamed('/lane_slots'), '--lane-slots');
  assert.is(requestOptionNamed('/after/1/job_id'), '--after (1/job_id)');
  assert.is(requestOptionNamed('/hold'), '--hold');
});

const named = suite('the flag behind a refused member');

named('requestOptionNamed names the flag (and the part below it)', () => {
  assert.is(requestOptionNamed('/env/FSJOB_X'), '--env (FSJOB_X)');
  assert.is(requestOptionNamed('/labels/a~1b'), '--label (a/b)');
  assert.is(requestOptionNamed('/timeout_ms'), '--timeout');
  assert.is(requestOptionNamed('/not_before_ms'), '--delay/--at');
  assert.is(requestOptionNamed('/argv/1'), 'the command (argument 2)');
  assert.is(requestOptionNamed('/stdin_text'), undefined);
});

named('the producer puts the refused member on the error as `field`, and says it in the caller\'s terms', () => {
  const plain = refusal(() => normalizeRequest({ argv: ['x'], env: { FSJOB_X: 'y' } }));
  assert.is(plain.code, 'USAGE');
  assert.is(plain.field, '/env/FSJOB_X');
  assert.match(plain.message, /^the request is not a valid request \(ENQ-1, [A-Z]+-\d+\) at \/env\/FSJOB_X: /);
  const flagged = refusal(() => normalizeRequest({ argv: ['x'], env: { FSJOB_X: 'y' } }, { nameField: requestOptionNamed }));
  assert.is(flagged.field, '/env/FSJOB_X');
  assert.match(flagged.message, /^--env \(FSJOB_X\): /);
});

options.run();
named.run();
