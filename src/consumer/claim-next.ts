/**
 * The low-level payload API: claim the next payload job and run it in your
 * own code (PAYLOAD-1), with the guarantees of the Worker: the claim
 * protocol and decisions of spec/claim.md, the execution recorded before the
 * job is handed out, a lease renewed in the background, and an AbortSignal
 * for cancel, timeout and ownership loss.
 */
import type { Queue } from '../model/queue.ts';
import { beginOperation } from '../fs/safefs.ts';
import { checkConsumerOptions, makeContext, openWith, type ConsumerOptions, type Context } from './context.ts';
import { checkNullableString, checkStrings } from '../base/option-checks.ts';
import { GIVE_BACK_DELAY } from './owner.ts';
import { ClaimedJob } from './payload.ts';
import { claimNextIn } from './select.ts';

/** Options of `claimNext`: the consumer options, and which payload handlers the caller runs. */
export interface ClaimNextOptions extends ConsumerOptions {
  /** Handler names this caller runs; payload jobs of other handlers are skipped (CLAIM-2). @default any */
  handlers?: readonly string[];
  /** Worker id written in the claim record (LAYOUT-9). @default null (a one-shot tool) */
  workerId?: string | null;
}

/** A claimed payload job ready to run, or null when none is claimable now. */
export async function claimNext(queue: string | Queue, options: ClaimNextOptions = {}): Promise<ClaimedJob | null> {
  // handlers as a string would match by substring (String.prototype.includes): refused with the other options.
  checkConsumerOptions(options, 'claimNext');
  checkStrings(options, 'claimNext', 'handlers');
  checkNullableString(options, 'claimNext', 'workerId');
  const ctx = await makeContext(options, options.workerId ?? null, 'claimNext');
  const q = await openWith(queue, ctx);
  // An operation (src/fs/flush.ts) from here until the claimed job's end is published.
  const operation = beginOperation();
  try {
    const job = await claimIn(ctx, q, options);
    if (job === null) operation();
    else job.onEnd(operation);
    return job;
  } catch (error) {
    operation();
    throw error;
  }
}

async function claimIn(ctx: Context, q: Queue, options: ClaimNextOptions): Promise<ClaimedJob | null> {
  const names = options.handlers === undefined ? undefined : new Set(options.handlers);
  const accepts = (name: string): boolean => names === undefined || names.has(name);
  const avoided = new Set<string>();
  // Jobs decided on the way (a cancelled or rejected job gets its receipt) do not end the search.
  for (let tries = 0; tries < 100; tries++) {
    const { result } = await claimNextIn(
      ctx,
      q,
      { skip: (id) => avoided.has(id), canRun: (spec) => spec.handler !== undefined && accepts(spec.handler) },
      { purpose: 'run', hasHandler: accepts },
      (id) => void avoided.add(id),
    );
    if (result === null) return null;
    if (result.kind === 'run') {
      const { owner } = result.ticket;
      try {
        const job = await ClaimedJob.start(result.ticket);
        job.onEnd(() => owner.close());
        return job;
      } catch (error) {
        // Nothing ran: hand the generation back so the job does not wait for this process to die.
        await owner.publishEnd('released', false, GIVE_BACK_DELAY, null).catch(() => undefined);
        owner.close();
        throw error;
      }
    }
  }
  return null;
}
