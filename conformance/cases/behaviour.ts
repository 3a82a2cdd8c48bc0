/**
 * Behavioural cases: jobs produced and consumed through the implementation's
 * own roles, each checked against what spec/running.md says the receipt, the
 * outputs and the start log must show. The same plans, with the reference on
 * one side, are the interoperability cases (interop.ts).
 */
import { chmodSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CONTROL_LATENCY, DEFAULT_COMMAND_PATH } from '../../src/base/constants.ts';
import type { CaseContext, ConformanceCase } from '../runner/case.ts';
import { describeExit } from '../runner/process.ts';
import { readRecord } from '../../src/records/codec.ts';
import { claimRecord, deadOwner, endRecord, execRecord } from '../runner/fixtures.ts';
import { plantRecord, reopen } from '../runner/stage.ts';
import { attemptPlans, parseEnv, stdinCheckPlans, timeoutGracePlans } from './behaviour-edges.ts';
import { expectOutput, expectReceipt, logged, runBatch, sh, type JobPlan } from './jobs.ts';

const ok = { exit: 0, signal: null };

/** Plans whose start order among `tags` must be exactly `tags`. */
function orderCheck(tags: string[], clauses: string[], what: string): JobPlan['expect'] {
  return (view, ctx) => {
    if (view.tag !== tags.at(-1)) return; // checked once, by the last plan
    const seen = view.order.filter((tag) => tags.includes(tag));
    ctx.check(JSON.stringify(seen) === JSON.stringify(tags), clauses, `${what}: jobs started in the order ${seen.join(', ')}; expected ${tags.join(', ')}`, () => view.evidence());
  };
}

export const stdinPlans: JobPlan[] = [
  {
    tag: 'stdin-text',
    clauses: ['EXEC-7'],
    request: ({ log, work }) => ({ argv: logged(log, 'stdin-text', 'exec cat'), cwd: work, stdin_text: 'hello\nwörld\n' }),
    expect: async (view, ctx) => {
      expectReceipt(view, ctx, ['EXEC-7'], { outcome: 'succeeded', exit_code: 0, starts: 1 });
      await expectOutput(view, ctx, ['EXEC-7'], 'stdout', 'hello\nwörld\n');
    },
  },
  {
    tag: 'stdin-binary',
    clauses: ['EXEC-7'],
    request: ({ log, work }) => ({ argv: logged(log, 'stdin-binary', 'exec cat'), cwd: work, stdin_base64: binary().toString('base64') }),
    expect: async (view, ctx) => {
      expectReceipt(view, ctx, ['EXEC-7'], { outcome: 'succeeded', exit_code: 0 });
      await expectOutput(view, ctx, ['EXEC-7'], 'stdout', binary());
    },
  },
  {
    tag: 'stdin-none',
    clauses: ['EXEC-7'],
    // Without stdin the command reads /dev/null: cat ends at once instead of waiting for input.
    request: ({ log, work }) => ({ argv: logged(log, 'stdin-none', 'exec cat'), cwd: work, timeout_ms: 20_000 }),
    expect: async (view, ctx) => {
      expectReceipt(view, ctx, ['EXEC-7'], { outcome: 'succeeded', exit_code: 0 });
      await expectOutput(view, ctx, ['EXEC-7'], 'stdout', '');
    },
  },
];

function binary(): Buffer {
  return Buffer.from(Array.from({ length: 1024 }, (_, i) => (i * 7 + 3) % 256));
}

const ENV_NAMES = ['CASE_VAR', 'FSJOB_ATTEMPT', 'FSJOB_JOB_ID', 'FSJOB_QUEUE', 'HOME', 'PATH'];


export const environmentPlans: JobPlan[] = [
  {
    tag: 'environment',
    clauses: ['EXEC-6'],
    request: ({ work }) => ({ argv: ['/usr/bin/env'], cwd: work, env: { CASE_VAR: 'a b=c' } }),
    expect: async (view, ctx) => {
      expectReceipt(view, ctx, ['EXEC-6'], { outcome: 'succeeded', exit_code: 0 });
      const out = await view.output('stdout');
      if (out === undefined) return;
      const env = parseEnv(out.toString('utf8'));
      const names = [...env.keys()].sort();
      const evidence = (): string[] => [`command environment: ${names.join(' ')}`, ...view.evidence()];
      ctx.check(!out.toString('utf8').includes(ctx.marker.value), ['EXEC-6'], `the consumer's own variable ${ctx.marker.name} reached the command`, evidence);
      ctx.check(JSON.stringify(names) === JSON.stringify(ENV_NAMES), ['EXEC-6'], `the command's environment is exactly PATH, HOME, FSJOB_JOB_ID, FSJOB_ATTEMPT, FSJOB_QUEUE and the spec's env; got ${names.join(' ')}`, evidence);
      ctx.check(env.get('FSJOB_JOB_ID') === view.id, ['EXEC-6'], `FSJOB_JOB_ID is ${JSON.stringify(env.get('FSJOB_JOB_ID'))}, expected ${view.id}`, evidence);
      ctx.check(env.get('FSJOB_ATTEMPT') === '1', ['EXEC-6'], `FSJOB_ATTEMPT is ${JSON.stringify(env.get('FSJOB_ATTEMPT'))}, expected 1`, evidence);
      ctx.check(env.get('FSJOB_QUEUE') === view.queue, ['EXEC-6'], `FSJOB_QUEUE is ${JSON.stringify(env.get('FSJOB_QUEUE'))}, expected the queue root ${view.queue}`, evidence);
      ctx.check(env.get('PATH') === DEFAULT_COMMAND_PATH, ['EXEC-6'], `PATH is ${JSON.stringify(env.get('PATH'))}, expected the default ${DEFAULT_COMMAND_PATH}`, evidence);
      ctx.check(env.get('CASE_VAR') === 'a b=c', ['EXEC-6'], `the spec's env member CASE_VAR is ${JSON.stringify(env.get('CASE_VAR'))}, expected "a b=c"`, evidence);
    },
  },
  {
    tag: 'environment-path',
    clauses: ['EXEC-6'],
    request: ({ work }) => ({ argv: ['/usr/bin/env'], cwd: work, env: { PATH: '/bin:/usr/bin:/sbin', HOME: '/fsjob-conformance-home' } }),
    expect: async (view, ctx) => {
      expectReceipt(view, ctx, ['EXEC-6'], { outcome: 'succeeded', exit_code: 0 });
      const out = await view.output('stdout');
      if (out === undefined) return;
      const env = parseEnv(out.toString('utf8'));
      ctx.check(env.get('PATH') === '/bin:/usr/bin:/sbin' && env.get('HOME') === '/fsjob-conformance-home', ['EXEC-6'], `the spec's PATH and HOME must win; got PATH=${env.get('PATH')} HOME=${env.get('HOME')}`, () => view.evidence());
    },
  },
];

export const cwdPlans: JobPlan[] = [
  {
    tag: 'cwd',
    clauses: ['EXEC-5'],
    request: ({ log, work }) => {
      const dir = path.join(work, 'cwd-here');
      mkdirSync(dir, { recursive: true });
      return { argv: logged(log, 'cwd', 'pwd -P'), cwd: dir };
    },
    expect: async (view, ctx) => {
      expectReceipt(view, ctx, ['EXEC-5'], { outcome: 'succeeded', exit_code: 0 });
      await expectOutput(view, ctx, ['EXEC-5'], 'stdout', `${path.join(path.dirname(view.queue), 'work', 'cwd-here')}\n`);
    },
  },
  {
    tag: 'cwd-missing',
    clauses: ['EXEC-5', 'CLAIM-6'],
    request: ({ log, work }) => ({ argv: logged(log, 'cwd-missing'), cwd: path.join(work, 'no-such-directory') }),
    expect: (view, ctx) => void expectReceipt(view, ctx, ['EXEC-5', 'CLAIM-6', 'EXEC-10'], { outcome: 'rejected', exit_code: 126, reason: 'cwd_unusable', starts: 0, noOutputs: true }),
  },
  {
    tag: 'cwd-via-symlink',
    clauses: ['EXEC-5', 'SEC-8'],
    // Outside by its name, inside once the link is resolved: still inside (EXEC-5 judges the resolved path too).
    request: ({ log, work, queue }) => {
      const link = path.join(work, 'link-into-queue');
      rmSync(link, { force: true });
      symlinkSync(path.join(queue, 'jobs'), link);
      return { argv: logged(log, 'cwd-via-symlink'), cwd: link };
    },
    expect: (view, ctx) => void expectReceipt(view, ctx, ['EXEC-5', 'SEC-8'], { outcome: 'rejected', exit_code: 126, reason: 'cwd_unusable', starts: 0 }),
  },
  {
    tag: 'cwd-not-directory',
    clauses: ['EXEC-5'],
    request: ({ log, work }) => {
      const file = path.join(work, 'cwd-is-a-file');
      writeFileSync(file, '');
      return { argv: logged(log, 'cwd-not-directory'), cwd: file };
    },
    expect: (view, ctx) => void expectReceipt(view, ctx, ['EXEC-5', 'CLAIM-6'], { outcome: 'rejected', exit_code: 126, reason: 'cwd_unusable', starts: 0 }),
  },
  {
    tag: 'cwd-in-queue',
    clauses: ['EXEC-5', 'SEC-8'],
    request: ({ log, queue }) => ({ argv: logged(log, 'cwd-in-queue'), cwd: path.join(queue, 'jobs') }),
    expect: (view, ctx) => void expectReceipt(view, ctx, ['EXEC-5', 'SEC-8'], { outcome: 'rejected', exit_code: 126, reason: 'cwd_unusable', starts: 0 }),
  },
];

export const exitPlans: JobPlan[] = [
  {
    tag: 'exit-0',
    clauses: ['EXEC-10'],
    request: ({ log, work }) => ({ argv: logged(log, 'exit-0', 'exit 0'), cwd: work }),
    expect: (view, ctx) => void expectReceipt(view, ctx, ['EXEC-10'], { outcome: 'succeeded', exit_code: 0, attempts: 1, status: ok, starts: 1 }),
  },
  {
    tag: 'exit-3',
    clauses: ['EXEC-10'],
    request: ({ log, work }) => ({ argv: logged(log, 'exit-3', 'exit 3'), cwd: work }),
    expect: (view, ctx) => void expectReceipt(view, ctx, ['EXEC-10'], { outcome: 'failed', exit_code: 3, attempts: 1, status: { exit: 3, signal: null }, starts: 1 }),
  },
  {
    tag: 'argv-verbatim',
    clauses: ['EXEC-4'],
    // Each argument reaches the program as it is: no word splitting, globbing, expansion or quoting.
    request: ({ work }) => ({ argv: ['printf', '[%s]', 'a b', '$HOME', '*', '', "it's", 'x\ny', '--'], cwd: work }),
    expect: async (view, ctx) => {
      expectReceipt(view, ctx, ['EXEC-4'], { outcome: 'succeeded', exit_code: 0 });
      await expectOutput(view, ctx, ['EXEC-4'], 'stdout', "[a b][$HOME][*][][it's][x\ny][--]");
    },
  },
  {
    tag: 'not-found',
    clauses: ['EXEC-4', 'EXEC-10'],
    request: ({ work }) => ({ argv: ['/nonexistent/fsjob-conformance-no-such-command', 'x'], cwd: work }),
    expect: (view, ctx) => void expectReceipt(view, ctx, ['EXEC-4', 'EXEC-10'], { outcome: 'failed', exit_code: 127, attempts: 1, status: { exit: 127, signal: null } }),
  },
  {
    tag: 'not-executable',
    clauses: ['EXEC-4', 'EXEC-10'],
    request: ({ work }) => {
      const file = path.join(work, 'not-executable.sh');
      writeFileSync(file, '#!/bin/sh\nexit 0\n');
      chmodSync(file, 0o644);
      return { argv: [file] as [string], cwd: work };
    },
    expect: (view, ctx) => void expectReceipt(view, ctx, ['EXEC-4', 'EXEC-10'], { outcome: 'failed', exit_code: 126, status: { exit: 126, signal: null } }),
  },
  {
    tag: 'own-signal',
    clauses: ['EXEC-10'],
    request: ({ log, work }) => ({ argv: logged(log, 'own-signal', 'kill -KILL $$'), cwd: work }),
    expect: (view, ctx) => void expectReceipt(view, ctx, ['EXEC-10'], { outcome: 'failed', exit_code: 137, status: { exit: null, signal: 'SIGKILL' }, starts: 1 }),
  },
];

export const outputPlans: JobPlan[] = [
  {
    tag: 'output-truncated',
    clauses: ['EXEC-1', 'RCPT-5'],
    request: ({ log, work }) => ({ argv: logged(log, 'output-truncated', "head -c 5000 /dev/zero | tr '\\000' a; printf err >&2"), cwd: work, max_output_bytes: 1000 }),
    expect: async (view, ctx) => {
      const receipt = expectReceipt(view, ctx, ['EXEC-1'], { outcome: 'succeeded', exit_code: 0 });
      if (receipt === undefined) return;
      // What the owner kept (EXEC-1) first, then how the receipt describes it (RCPT-5).
      await expectOutput(view, ctx, ['EXEC-1', 'RCPT-5'], 'stdout', 'a'.repeat(1000));
      await expectOutput(view, ctx, ['EXEC-1', 'RCPT-5'], 'stderr', 'err');
      const want = { stdout: { bytes_total: 5000, bytes_kept: 1000, truncated: true }, stderr: { bytes_total: 3, bytes_kept: 3, truncated: false } };
      for (const stream of ['stdout', 'stderr'] as const) {
        const got = receipt[stream];
        const w = want[stream];
        ctx.check(got !== null && got.bytes_total === w.bytes_total && got.bytes_kept === w.bytes_kept && got.truncated === w.truncated, ['RCPT-5', 'EXEC-1'], `${stream} summary is ${JSON.stringify(got)}; expected ${JSON.stringify(w)}`, () => view.evidence());
      }
    },
  },
  {
    tag: 'output-zero',
    clauses: ['EXEC-1', 'RCPT-5'],
    request: ({ log, work }) => ({ argv: logged(log, 'output-zero', 'printf 0123456789'), cwd: work, max_output_bytes: 0 }),
    expect: async (view, ctx) => {
      const receipt = expectReceipt(view, ctx, ['EXEC-1'], { outcome: 'succeeded', exit_code: 0 });
      const got = receipt?.stdout;
      ctx.check(got !== undefined && got !== null && got.bytes_total === 10 && got.bytes_kept === 0 && got.truncated, ['EXEC-1', 'RCPT-5'], `max_output_bytes 0: stdout summary is ${JSON.stringify(got)}; expected bytes_total 10, bytes_kept 0, truncated`, () => view.evidence());
    },
  },
  {
    tag: 'output-large',
    clauses: ['EXEC-1', 'RCPT-5'],
    // More than any pipe buffer: a consumer that does not drain both pipes deadlocks here.
    request: ({ log, work }) => ({ argv: logged(log, 'output-large', "head -c 300000 /dev/zero | tr '\\000' b; head -c 200000 /dev/zero | tr '\\000' c >&2"), cwd: work, timeout_ms: 30_000 }),
    expect: async (view, ctx) => {
      const receipt = expectReceipt(view, ctx, ['EXEC-1'], { outcome: 'succeeded', exit_code: 0 });
      const out = receipt?.stdout;
      const err = receipt?.stderr;
      ctx.check(out?.bytes_kept === 300000 && out.truncated === false && err?.bytes_kept === 200000 && err.truncated === false, ['EXEC-1', 'RCPT-5'], `300000 + 200000 bytes under the default bound must be kept whole; got stdout ${JSON.stringify(out)}, stderr ${JSON.stringify(err)}`, () => view.evidence());
    },
  },
];

export const timeoutPlans: JobPlan[] = [
  {
    tag: 'timeout',
    clauses: ['EXEC-8', 'EXEC-10'],
    request: ({ log, work }) => ({ argv: logged(log, 'timeout', "sleep 30; printf 'late %s\\n' \"$1\" >> \"$2\""), cwd: work, timeout_ms: 500, kill_grace_ms: 1000 }),
    expect: (view, ctx) => {
      expectReceipt(view, ctx, ['EXEC-8', 'EXEC-10'], { outcome: 'timed_out', exit_code: 124, starts: 1 });
      ctx.check(!view.lines.includes('late timeout'), ['EXEC-8', 'EXEC-11'], 'the timed-out command kept running after its attempt ended', () => view.evidence());
    },
  },
  {
    tag: 'timeout-ignores-term',
    clauses: ['EXEC-8', 'EXEC-10'],
    request: ({ log, work }) => ({ argv: logged(log, 'timeout-ignores-term', "trap '' TERM; sleep 30; printf 'late %s\\n' \"$1\" >> \"$2\""), cwd: work, timeout_ms: 500, kill_grace_ms: 500 }),
    expect: (view, ctx) => {
      expectReceipt(view, ctx, ['EXEC-8', 'EXEC-10'], { outcome: 'timed_out', exit_code: 124, starts: 1 });
      ctx.check(!view.lines.includes('late timeout-ignores-term'), ['EXEC-8', 'EXEC-11'], 'a command that ignores SIGTERM was not killed after kill_grace_ms', () => view.evidence());
    },
  },
];

export const deadlinePlans: JobPlan[] = [
  {
    tag: 'deadline-expired',
    clauses: ['STATUS-1', 'CLAIM-6', 'EXEC-10'],
    request: ({ log, work }) => ({ argv: logged(log, 'deadline-expired'), cwd: work, queue_deadline_ms: 1 }),
    expect: (view, ctx) => void expectReceipt(view, ctx, ['CLAIM-6', 'EXEC-10'], { outcome: 'expired', exit_code: 124, starts: 0, noOutputs: true }),
  },
  {
    tag: 'deadline-after-execution',
    clauses: ['CLAIM-6', 'STATUS-1'],
    // Past its queue deadline, but an execution exists: a job that started once never expires (CLAIM-6 step 3).
    request: ({ log, work }) => ({ argv: logged(log, 'deadline-after-execution'), cwd: work, queue_deadline_ms: 1, max_attempts: 2 }),
    after: async (env, id) => {
      const queue = await reopen(env.queue);
      const dir = path.join(env.queue, 'jobs', id);
      const dead = await deadOwner();
      await plantRecord(queue, dir, 'claim.1.json', 'claim', claimRecord(id, 1, dead));
      await plantRecord(queue, dir, 'exec.1.json', 'exec', execRecord(id, 1, dead));
      await plantRecord(queue, dir, 'end.1.json', 'end', endRecord(id, 1));
    },
    expect: (view, ctx) => void expectReceipt(view, ctx, ['CLAIM-6', 'STATUS-1'], { outcome: 'succeeded', exit_code: 0, attempts: 2, starts: 1 }),
  },
  {
    tag: 'deadline-ahead',
    clauses: ['STATUS-1', 'CLAIM-6'],
    request: ({ log, work }) => ({ argv: logged(log, 'deadline-ahead'), cwd: work, queue_deadline_ms: 600_000 }),
    expect: (view, ctx) => void expectReceipt(view, ctx, ['CLAIM-6'], { outcome: 'succeeded', exit_code: 0, starts: 1 }),
  },
];

const RETRY_DELAY_MS = 1500;

export const retryPlans: JobPlan[] = [
  {
    tag: 'retry-delay',
    clauses: ['RETRY-3'],
    request: ({ log, work }) => ({
      argv: logged(log, 'retry-delay', '[ -e "$3" ] || { : > "$3"; exit 5; }', path.join(work, 'retry-delay-once')),
      cwd: work,
      max_attempts: 2,
      retry_delay_ms: RETRY_DELAY_MS,
    }),
    expect: async (view, ctx) => {
      expectReceipt(view, ctx, ['RETRY-3'], { outcome: 'succeeded', exit_code: 0, attempts: 2, starts: 2 });
      const end = await readRecord(path.join(view.queue, 'jobs', view.id, 'end.1.json'), 'end', { expectedJobId: view.id, allowMissing: true });
      const exec2 = await readRecord(path.join(view.queue, 'jobs', view.id, 'exec.2.json'), 'exec', { expectedJobId: view.id, allowMissing: true });
      if (end === undefined || !end.ok) {
        ctx.fail(['RETRY-3'], 'the failed first attempt (attempts left) must end with a valid end.1.json', view.evidence());
        return;
      }
      const e = end.value;
      ctx.check(e.reason === 'failed' && e.counted && Math.abs(e.retry_at_ms - (e.ended_ms + RETRY_DELAY_MS)) <= 1000, ['RETRY-3'], `end.1.json must say failed, counted, retry_at_ms = now + retry_delay_ms (${RETRY_DELAY_MS}); it says ${e.reason}, counted ${e.counted}, retry_at_ms ended_ms + ${e.retry_at_ms - e.ended_ms}`, () => view.evidence());
      if (exec2?.ok === true) ctx.check(exec2.value.recorded_ms >= e.retry_at_ms, ['STATUS-1', 'RETRY-3'], `attempt 2 started at ${exec2.value.recorded_ms}, before retry_at_ms ${e.retry_at_ms}: until then the job is retrying, not queued, and is not runnable`, () => view.evidence());
    },
  },
  {
    tag: 'retry-then-succeed',
    clauses: ['RETRY-1', 'RETRY-3'],
    request: ({ log, work }) => ({
      argv: logged(log, 'retry-then-succeed', 'n=$(cat "$3" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "$3"; [ $n -ge 3 ]', path.join(work, 'retry-count')),
      cwd: work,
      max_attempts: 3,
      retry_delay_ms: 0,
    }),
    expect: (view, ctx) => {
      expectReceipt(view, ctx, ['RETRY-1', 'RETRY-3'], { outcome: 'succeeded', exit_code: 0, attempts: 3, starts: 3 });
      const ends = view.job?.ends ?? [];
      ctx.check(ends.length === 2, ['RETRY-3'], `two failed attempts must each leave an end record; found end generations ${ends.join(',') || 'none'}`, () => view.evidence());
    },
  },
  {
    tag: 'retry-exhausted',
    clauses: ['RETRY-2', 'RETRY-3'],
    request: ({ log, work }) => ({ argv: logged(log, 'retry-exhausted', 'exit 7'), cwd: work, max_attempts: 2, retry_delay_ms: 0 }),
    expect: (view, ctx) => void expectReceipt(view, ctx, ['RETRY-2', 'RETRY-3'], { outcome: 'failed', exit_code: 7, attempts: 2, starts: 2 }),
  },
];

async function cancelWith(role: 'cancel' | 'cancel_force', env: { ctx: CaseContext; queue: string }, id: string, producer: import('../runner/manifest.ts').Manifest): Promise<void> {
  const result = await env.ctx.role(role, { queue: env.queue, id }, { via: producer });
  env.ctx.check(result.code === 0, ['CANCEL-1'], `${producer.name}: ${role} of a queued job must succeed`, [describeExit(result)]);
}

export const cancelPlans: JobPlan[] = [
  {
    tag: 'cancel-queued',
    clauses: ['CANCEL-1', 'CLAIM-6'],
    roles: ['cancel'],
    request: ({ log, work }) => ({ argv: logged(log, 'cancel-queued'), cwd: work }),
    after: (env, id, producer) => cancelWith('cancel', env, id, producer),
    expect: (view, ctx) => {
      expectReceipt(view, ctx, ['CANCEL-1', 'CANCEL-2', 'CLAIM-6', 'EXEC-10'], { outcome: 'cancelled', exit_code: 130, starts: 0 });
      ctx.check(view.job?.cancel === true, ['CANCEL-1'], 'a graceful cancel is published as cancel.json', () => view.evidence());
    },
  },
  {
    tag: 'cancel-force-queued',
    clauses: ['CANCEL-1', 'CLAIM-6'],
    roles: ['cancel_force'],
    request: ({ log, work }) => ({ argv: logged(log, 'cancel-force-queued'), cwd: work }),
    after: (env, id, producer) => cancelWith('cancel_force', env, id, producer),
    expect: (view, ctx) => {
      expectReceipt(view, ctx, ['CANCEL-1', 'CANCEL-2', 'CLAIM-6', 'EXEC-10'], { outcome: 'cancelled', exit_code: 130, starts: 0 });
      ctx.check(view.job?.cancelForce === true, ['CANCEL-1'], 'a forced cancel is published as cancel-force.json', () => view.evidence());
    },
  },
];

const FIFO_TAGS = ['fifo-1', 'fifo-2', 'fifo-3', 'fifo-4', 'fifo-5'];
export const fifoPlans: JobPlan[] = FIFO_TAGS.map((tag) => ({
  tag,
  clauses: ['CLAIM-1', 'CLAIM-2'],
  request: ({ log, work }) => ({ argv: logged(log, tag), cwd: work }),
  expect: orderCheck(FIFO_TAGS, ['CLAIM-1', 'CLAIM-2', 'LAYOUT-7'], 'equal priority runs in enqueue order'),
}));

const PRIORITIES: [string, number][] = [
  ['prio-0a', 0],
  ['prio-5a', 5],
  ['prio-m3', -3],
  ['prio-5b', 5],
  ['prio-10', 10],
  ['prio-0b', 0],
];
const PRIORITY_ORDER = ['prio-10', 'prio-5a', 'prio-5b', 'prio-0a', 'prio-0b', 'prio-m3'];
export const priorityPlans: JobPlan[] = PRIORITIES.map(([tag, priority]) => ({
  tag,
  clauses: ['CLAIM-1', 'CLAIM-2'],
  request: ({ log, work }) => ({ argv: logged(log, tag), cwd: work, priority }),
  expect: (view, ctx) => {
    if (tag === PRIORITIES.at(-1)?.[0]) {
      const seen = view.order.filter((t) => PRIORITY_ORDER.includes(t));
      ctx.check(JSON.stringify(seen) === JSON.stringify(PRIORITY_ORDER), ['CLAIM-1', 'CLAIM-2', 'LAYOUT-7'], `higher priority first, then enqueue order: started ${seen.join(', ')}; expected ${PRIORITY_ORDER.join(', ')}`, () => view.evidence());
    }
  },
}));

/** Plans checked in both directions by the interoperability cases. */
export const INTEROP_PLANS: JobPlan[] = [...stdinPlans, ...environmentPlans, ...cwdPlans, ...exitPlans, ...outputPlans, ...deadlinePlans, ...retryPlans, ...cancelPlans, ...fifoPlans];

function batchCase(name: string, clauses: string[], plans: JobPlan[], extra: Partial<ConformanceCase> = {}): ConformanceCase {
  return {
    name,
    clauses,
    level: 'consumer',
    strength: 'MUST',
    ...extra,
    run: (ctx) => runBatch(ctx, 'batch', plans, { clauses }),
  };
}

export const behaviourCases: ConformanceCase[] = [
  batchCase('behaviour/fifo-order', ['CLAIM-1', 'CLAIM-2', 'LAYOUT-7'], fifoPlans),
  batchCase('behaviour/priority-order', ['CLAIM-1', 'CLAIM-2', 'LAYOUT-7'], priorityPlans),
  batchCase('behaviour/stdin', ['EXEC-7', 'CLAIM-6'], [...stdinPlans, ...stdinCheckPlans]),
  batchCase('behaviour/environment', ['EXEC-6', 'RETRY-1'], [...environmentPlans, ...attemptPlans]),
  batchCase('behaviour/cwd', ['EXEC-5', 'CLAIM-6', 'SEC-8', 'RCPT-4'], cwdPlans),
  batchCase('behaviour/exit-codes', ['EXEC-4', 'EXEC-10'], exitPlans),
  batchCase('behaviour/output-bounds', ['EXEC-1', 'RCPT-5', 'I4'], outputPlans),
  batchCase('behaviour/timeouts', ['EXEC-8', 'EXEC-10', 'EXEC-11'], [...timeoutPlans, ...timeoutGracePlans]),
  batchCase('behaviour/queue-deadline', ['STATUS-1', 'CLAIM-6', 'EXEC-10'], deadlinePlans),
  batchCase('behaviour/retries', ['RETRY-1', 'RETRY-2', 'RETRY-3', 'STATUS-1'], retryPlans),
  batchCase('behaviour/cancel-before-start', ['CANCEL-1', 'CANCEL-2', 'CLAIM-6', 'EXEC-10'], cancelPlans, { roles: ['cancel'] }),
];

export { CONTROL_LATENCY, sh };
