/**
 * Behaviour plans that need a state no producer writes, or a probe: a stdin
 * file damaged after publication (EXEC-7), a second generation after a
 * released one (EXEC-6: FSJOB_ATTEMPT is the attempt), and a timed-out probe
 * that logs its SIGTERM and ticks until SIGKILL (EXEC-8). behaviour.ts runs
 * them in its batches.
 */
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { claimRecord, deadOwner, endRecord } from '../runner/fixtures.ts';
import { plantRecord, reopen } from '../runner/stage.ts';
import { expectReceipt, logged, type JobPlan, type PlanEnv } from './jobs.ts';
import { probe, readProbeLog, SCHEDULING_TOLERANCE_MS } from './probes.ts';

export function parseEnv(text: string): Map<string, string> {
  const env = new Map<string, string>();
  for (const line of text.split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0 && /^[A-Za-z_][A-Za-z0-9_]*$/.test(line.slice(0, eq))) env.set(line.slice(0, eq), line.slice(eq + 1));
  }
  return env;
}

/** Replaces a staged job's stdin file (the spec still says the old size). */
function damageStdin(bytes: string | undefined): NonNullable<JobPlan['after']> {
  return async (env, id) => {
    const file = path.join(env.queue, 'jobs', id, 'stdin');
    await rm(file, { force: true });
    if (bytes !== undefined) await writeFile(file, bytes, { mode: 0o600, flag: 'wx' });
  };
}

export const stdinCheckPlans: JobPlan[] = [
  {
    tag: 'stdin-size-mismatch',
    clauses: ['EXEC-7'],
    request: ({ log, work }) => ({ argv: logged(log, 'stdin-size-mismatch', 'exec cat'), cwd: work, stdin_text: 'hello\n' }),
    after: damageStdin('hello, and more than the spec says\n'),
    damagesStdin: true,
    expect: (view, ctx) => void expectReceipt(view, ctx, ['EXEC-7', 'CLAIM-6'], { outcome: 'rejected', exit_code: 126, reason: 'stdin_unusable', starts: 0 }),
  },
  {
    tag: 'stdin-missing',
    clauses: ['EXEC-7'],
    request: ({ log, work }) => ({ argv: logged(log, 'stdin-missing', 'exec cat'), cwd: work, stdin_text: 'hello\n' }),
    after: damageStdin(undefined),
    damagesStdin: true,
    expect: (view, ctx) => void expectReceipt(view, ctx, ['EXEC-7', 'CLAIM-6'], { outcome: 'rejected', exit_code: 126, reason: 'stdin_unusable', starts: 0 }),
  },
];

/** Plants claim.1.json of a dead owner and end.1.json released (counted false): generation 2 runs attempt 1. */
async function releasedGeneration(env: PlanEnv, id: string): Promise<void> {
  const queue = await reopen(env.queue);
  const dir = path.join(env.queue, 'jobs', id);
  await plantRecord(queue, dir, 'claim.1.json', 'claim', claimRecord(id, 1, await deadOwner()));
  await plantRecord(queue, dir, 'end.1.json', 'end', { ...endRecord(id, 1), reason: 'released', counted: false, status: null });
}

export const attemptPlans: JobPlan[] = [
  {
    tag: 'environment-attempt',
    clauses: ['EXEC-6'],
    // Generation 2, attempt 1: FSJOB_ATTEMPT is the attempt, never the generation.
    request: ({ work }) => ({ argv: ['/usr/bin/env'], cwd: work }),
    after: releasedGeneration,
    expect: async (view, ctx) => {
      expectReceipt(view, ctx, ['RETRY-1', 'EXEC-6'], { outcome: 'succeeded', exit_code: 0, attempts: 1 });
      const out = await view.output('stdout');
      if (out === undefined) return;
      const attempt = parseEnv(out.toString('utf8')).get('FSJOB_ATTEMPT');
      ctx.check(attempt === '1', ['EXEC-6'], `generation 2 ran the job's first attempt (generation 1 was released, counted false): FSJOB_ATTEMPT is ${JSON.stringify(attempt)}, expected "1"`, () => view.evidence());
    },
  },
];

const TIMEOUT_GRACE_MS = 2000;

export const timeoutGracePlans: JobPlan[] = [
  {
    tag: 'timeout-term-then-kill',
    clauses: ['EXEC-8'],
    // A probe that logs its SIGTERM and ignores it, ticking every 100 ms until SIGKILL ends it.
    request: ({ log, work }) => ({ argv: probe(log, 'timeout-term-then-kill', { onTerm: 'ignore', ticks: true }), cwd: work, timeout_ms: 500, kill_grace_ms: TIMEOUT_GRACE_MS }),
    expect: async (view, ctx) => {
      const probes = await readProbeLog(view.log);
      const term = probes.terms(view.tag)[0];
      const last = probes.ticks(view.tag).at(-1);
      const exec = view.job?.execs.includes(1) === true ? view.receipt?.started_ms ?? undefined : undefined;
      const evidence = (): string[] => [`probe: term ${term ?? 'none'}, last tick ${last ?? 'none'}`, ...view.evidence()];
      if (term === undefined) {
        ctx.fail(['EXEC-8'], 'the timed-out command got no SIGTERM: after timeout_ms the owner sends SIGTERM, and SIGKILL only after kill_grace_ms', evidence());
        return;
      }
      if (exec !== undefined) ctx.check(term - exec <= 500 + SCHEDULING_TOLERANCE_MS, ['EXEC-8'], `SIGTERM came ${term - exec} ms after the attempt started: it is due when timeout_ms (500 ms) has elapsed (+ ${SCHEDULING_TOLERANCE_MS} ms tolerance)`, evidence);
      ctx.check(last !== undefined && last - term >= TIMEOUT_GRACE_MS - SCHEDULING_TOLERANCE_MS, ['EXEC-8'], `the command (ignoring SIGTERM) was killed ${last === undefined ? 'without ticking after' : `${last - term} ms after`} its SIGTERM: SIGKILL comes only after kill_grace_ms (${TIMEOUT_GRACE_MS} ms, less ${SCHEDULING_TOLERANCE_MS} ms tolerance)`, evidence);
      const finished = view.receipt?.finished_ms;
      if (finished !== undefined) ctx.check(finished - term <= TIMEOUT_GRACE_MS + 2 * SCHEDULING_TOLERANCE_MS, ['EXEC-8'], `the receipt came ${finished - term} ms after the SIGTERM: SIGKILL is due after kill_grace_ms (${TIMEOUT_GRACE_MS} ms + ${2 * SCHEDULING_TOLERANCE_MS} ms tolerance for the kill and the receipt)`, evidence);
      expectReceipt(view, ctx, ['EXEC-8', 'EXEC-10'], { outcome: 'timed_out', exit_code: 124, starts: 1 });
    },
  },
];

