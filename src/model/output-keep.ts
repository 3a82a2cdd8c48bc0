/**
 * EXEC-17 (1.1): which bytes of a stream longer than its bound an output
 * file keeps, as the spec's `output_keep` says. The file is append-only
 * (PUB-7): the head part is written as it arrives, the tail part is held by
 * the owner and appended when the stream ends. Readers use the same rule to
 * say where bytes are missing.
 */
import type { SpecRecord } from '../records/codec.ts';

export type OutputKeep = NonNullable<SpecRecord['output_keep']>;

/** The spec's output_keep; absent (every 1.0 spec) is "head" (SPEC-2). */
export function outputKeepOf(spec: Pick<SpecRecord, 'output_keep'> | null | undefined): OutputKeep {
  return spec?.output_keep ?? 'head';
}

/** Bytes written as they arrive, of a bound of `bound`: all for head, none for tail, half (rounded down) for head_tail. */
export function headPart(bound: number, keep: OutputKeep): number {
  return keep === 'head' ? bound : keep === 'tail' ? 0 : Math.floor(bound / 2);
}

/** Where a truncated output's missing bytes belong, as a byte offset into the kept file. */
export function gapOffset(keep: OutputKeep, bytesKept: number): number {
  return keep === 'head' ? bytesKept : keep === 'tail' ? 0 : Math.floor(bytesKept / 2);
}
