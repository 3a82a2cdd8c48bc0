/**
 * Interoperability: the behavioural plans with the reference implementation
 * on the other side. Jobs produced by the reference must be consumed by the
 * implementation with the same results, and jobs produced by the
 * implementation must be consumed by the reference. Skipped when the
 * implementation under test is the reference itself.
 */
import type { ConformanceCase } from '../runner/case.ts';
import { cancelPlans, cwdPlans, deadlinePlans, environmentPlans, exitPlans, fifoPlans, outputPlans, retryPlans, stdinPlans } from './behaviour.ts';
import { runBatch, type JobPlan } from './jobs.ts';

const CLAUSES = ['CONF-1', 'CONF-2', 'EXEC-6', 'EXEC-7', 'EXEC-10', 'RCPT-5', 'RETRY-3', 'CLAIM-1'];

/** Plans in groups, so the two directions of each run side by side instead of one long batch. */
const GROUPS: [string, JobPlan[]][] = [
  ['io', [...stdinPlans, ...environmentPlans, ...cwdPlans]],
  ['outcomes', [...exitPlans, ...outputPlans]],
  ['scheduling', [...deadlinePlans, ...retryPlans, ...cancelPlans, ...fifoPlans]],
];

export const interopCases: ConformanceCase[] = GROUPS.flatMap(([group, plans]): ConformanceCase[] => [
  {
    name: `interop/reference-produces-${group}`,
    clauses: CLAUSES,
    level: 'consumer',
    strength: 'MUST',
    interop: true,
    run: async (ctx) => {
      await runBatch(ctx, 'interop', plans, { producer: ctx.reference, consumer: ctx.impl, clauses: CLAUSES });
    },
  },
  {
    name: `interop/reference-consumes-${group}`,
    clauses: CLAUSES,
    level: 'producer',
    strength: 'MUST',
    interop: true,
    run: async (ctx) => {
      await runBatch(ctx, 'interop', plans, { producer: ctx.impl, consumer: ctx.reference, clauses: CLAUSES });
    },
  },
]);
