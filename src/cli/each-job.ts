/**
 * Commands that act on several jobs named (`fsjob release A B C`, `fsjob
 * cancel A B C`): each job is acted on or refused on its own, so a refusal
 * of one never hides that the jobs before it were done nor leaves those
 * after it undone. One job named alone keeps every command's form: its
 * refusal is the command's (exit status, --json error line).
 */
import { isFsjobError, type FsjobError } from '../base/errors.ts';
import type { CliIo } from './command.ts';
import { EXIT, exitStatusOf } from './exit.ts';

/** A job named among several that was refused, and why. */
export interface Refusal {
  id: string;
  error: FsjobError;
}

/** What acting on each job named gave: the results in the order named, and the refusals in that order. */
export interface EachJob<T> {
  done: T[];
  refused: Refusal[];
}

/**
 * `act` on each of `ids` in turn. With `alone`, a refusal is thrown as it
 * is; otherwise it is said on stderr and kept, and the next job is acted on.
 * Anything but an FsjobError (a defect) is thrown either way.
 */
export async function eachJob<T>(ids: readonly string[], alone: boolean, io: CliIo, act: (id: string) => Promise<T>): Promise<EachJob<T>> {
  const done: T[] = [];
  const refused: Refusal[] = [];
  for (const id of ids) {
    try {
      done.push(await act(id));
    } catch (error) {
      if (alone || !isFsjobError(error)) throw error;
      refused.push({ id, error });
      io.stderr(`fsjob: ${error.message}\n`);
    }
  }
  return { done, refused };
}

/** The refusals under --json: {id, error} each (error.schema.json#/$defs/error). */
export function refusedJson(refused: readonly Refusal[]): { id: string; error: Record<string, unknown> }[] {
  return refused.map(({ id, error }) => ({ id, error: error.toJSON() }));
}

/** The exit status: 0 when none was refused, else the first refusal's in the order named, as fsjob wait's first job that did not succeed decides. */
export function refusalStatus(refused: readonly Refusal[]): number {
  const first = refused[0];
  return first === undefined ? EXIT.OK : exitStatusOf(first.error.code);
}
