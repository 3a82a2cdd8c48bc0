/**
 * Faults: a link or rename answered as a filesystem without it would answer,
 * or as a network client hears after a retransmission (FS-2, FS-3). The
 * library side is draw_fault in interpose.c and PAIR_CALL in
 * interpose-calls.c; this is the driver's half: the option and its variables.
 */
import os from 'node:os';
import path from 'node:path';

/**
 * A filesystem's answer to a link or rename, forced: every call of family
 * `op` (`link` or `rename`) whose path or destination, relative to the root,
 * matches the glob `path` (omitted = any) fails with `errno` (EPERM: no hard
 * links; EEXIST ...). With `after`, the call is performed first and then
 * reported failed, as a network client whose reply was lost retransmits and
 * hears EEXIST for its own link (FS-3). `nth` picks the nth match only.
 */
export interface FaultPoint {
  op: 'link' | 'rename';
  path?: string;
  errno: string;
  after?: boolean;
  nth?: number;
  /** Only the first `upTo` matches of the run fail (a run of lost races); the later ones are performed. */
  upTo?: number;
  /** An absolute path hard-linked at a failing link's destination before the failure: the rival's record that won the race (with errno EEXIST). */
  plant?: string;
}

/** The variables the library reads (interpose.c do_init). */
export const FAULT_ENV = {
  faultOp: 'FSJOB_CRASH_FAULT_OP',
  faultPath: 'FSJOB_CRASH_FAULT_PATH',
  faultErrno: 'FSJOB_CRASH_FAULT_ERRNO',
  faultAfter: 'FSJOB_CRASH_FAULT_AFTER',
  faultNth: 'FSJOB_CRASH_FAULT_NTH',
  faultUpTo: 'FSJOB_CRASH_FAULT_UPTO',
  faultPlant: 'FSJOB_CRASH_FAULT_PLANT',
} as const;

/** The environment that gives a run `fault`; throws on an errno this system does not name. */
export function faultEnv(fault: FaultPoint): Record<string, string> {
  const number = (os.constants.errno as Record<string, number | undefined>)[fault.errno];
  if (number === undefined) throw new TypeError(`runWithCrash: fault.errno ${JSON.stringify(fault.errno)} is not an errno name of this system`);
  if (/[\t\n]/.test(fault.path ?? '')) throw new TypeError('runWithCrash: fault.path cannot hold tabs or newlines');
  const env: Record<string, string> = { [FAULT_ENV.faultOp]: fault.op, [FAULT_ENV.faultErrno]: String(number) };
  if (fault.path !== undefined) env[FAULT_ENV.faultPath] = fault.path;
  if (fault.after === true) env[FAULT_ENV.faultAfter] = '1';
  if (fault.nth !== undefined) env[FAULT_ENV.faultNth] = String(fault.nth);
  if (fault.upTo !== undefined) env[FAULT_ENV.faultUpTo] = String(fault.upTo);
  if (fault.plant !== undefined) {
    if (!path.isAbsolute(fault.plant) || /[\s]/.test(fault.plant)) throw new TypeError('runWithCrash: fault.plant must be an absolute path without blanks');
    env[FAULT_ENV.faultPlant] = fault.plant;
  }
  return env;
}
