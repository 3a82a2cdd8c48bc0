/**
 * A job between its request and its publication (spec/producer.md), as
 * enqueue.ts's steps and the synchronous road of enqueue-now.ts both take it:
 * a module of its own, so neither imports the other for its type.
 */
import type { Dir } from '../fs/safefs.ts';
import type { Clock } from '../base/clock.ts';
import type { SpecRecord } from '../records/codec.ts';

/**
 * How far the synchronous road got before it threw: nothing written; tmp/<id>
 * made (and maybe its files); the ready entry made and the rename tried;
 * the job renamed into jobs/ (step 8 failed).
 */
export type NowProgress = 'nothing' | 'staged' | 'moving' | 'renamed';

/** A job between its request and its publication: what every step below needs. */
export interface Pending {
  id: string;
  spec: SpecRecord;
  specBytes: Buffer;
  stdin: Uint8Array | null;
  source: string;
  clock: Clock;
  staging: string;
  readyEntry: string;
  /** The staged directory, made and held by step 2 until the rename (step 7) is done. */
  stagingDir?: Dir;
  /** When the dedupe hold was taken, on the monotonic clock (DEDUPE-5). */
  holdTakenMono?: number;
  /** Published at jobs/<id>.gated (GATE-1): held, or a dependency was not satisfied when looked at. */
  gated?: boolean;
  /** Set once the synchronous road (enqueue-now.ts) was taken: how far it got. */
  now?: NowProgress;
}
