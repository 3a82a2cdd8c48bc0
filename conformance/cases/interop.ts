/**
 * Interoperability: the behavioural plans with the reference implementation
 * on the other side. Jobs produced by the reference must be consumed by the
 * implementation with the same results, and jobs produced by the
 * implementation must be consumed by the reference. Skipped when the
 * implementation under test is the reference itself.
 */
import path from 'node:path';
import type { CaseContext, ConformanceCase } from '../runner/case.ts';
import { createQueue } from '../runner/stage.ts';
import { describeExit } from '../runner/process.ts';
import { INTEROP_PLANS } from './behaviour.ts';
import { runBatch } from './jobs.ts';

const CLAUSES = ['CONF-1', 'CONF-2', 'EXEC-6', 'EXEC-7', 'EXEC-10', 'RCPT-5', 'RETRY-3', 'CLAIM-1'];

/** The reference must work before it can judge anyone: a usage error means it is not built yet. */
async function referenceUsable(ctx: CaseContext): Promise<void> {
  const root = path.join(await ctx.subdir('probe'), 'q');
  await createQueue(root);
  const probe = await ctx.produce(root, { argv: ['/bin/true'] }, { via: ctx.reference, name: 'probe' });
  if (probe.id === undefined) ctx.skip(`the reference implementation cannot produce here (${describeExit(probe.result)})`);
}

export const interopCases: ConformanceCase[] = [
  {
    name: 'interop/reference-produces',
    clauses: CLAUSES,
    level: 'consumer',
    strength: 'MUST',
    interop: true,
    run: async (ctx) => {
      await referenceUsable(ctx);
      await runBatch(ctx, 'interop', INTEROP_PLANS, { producer: ctx.reference, consumer: ctx.impl, clauses: CLAUSES });
    },
  },
  {
    name: 'interop/reference-consumes',
    clauses: CLAUSES,
    level: 'producer',
    strength: 'MUST',
    interop: true,
    run: async (ctx) => {
      await referenceUsable(ctx);
      await runBatch(ctx, 'interop', INTEROP_PLANS, { producer: ctx.impl, consumer: ctx.reference, clauses: CLAUSES });
    },
  },
];
