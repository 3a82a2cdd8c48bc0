/**
 * What a command starts with (EXEC-6, EXEC-10, EXEC-13): its environment,
 * built from the spec and nothing of the consumer's own but its home, and the
 * exit code of a death by a signal fsjob did not send.
 */
import os from 'node:os';
import { DEFAULT_COMMAND_PATH } from '../base/constants.ts';
import type { SpecRecord } from '../records/codec.ts';
/**
 * EXEC-6: the consumer's home directory: its own HOME when that is an
 * absolute path, else the home of its effective uid in the user database,
 * else "/".
 */
export function consumerHome(env: NodeJS.ProcessEnv = process.env): string {
  const home = env['HOME'];
  if (home !== undefined && home.startsWith('/')) return home;
  try {
    const fromDb = os.userInfo().homedir;
    if (fromDb.startsWith('/')) return fromDb;
  } catch {
    // no entry in the user database
  }
  return '/';
}

/** EXEC-6: exactly this environment, nothing of the consumer's own. */
export function commandEnv(spec: SpecRecord, queueRoot: string, attempt: number): Record<string, string> {
  return {
    PATH: spec.env['PATH'] ?? DEFAULT_COMMAND_PATH,
    HOME: spec.env['HOME'] ?? consumerHome(),
    ...spec.env,
    FSJOB_JOB_ID: spec.id,
    FSJOB_ATTEMPT: String(attempt),
    FSJOB_QUEUE: queueRoot,
  };
}

/** EXEC-10: 128 + the signal number, for a signal fsjob did not send. */
export function signalExitCode(signal: string): number {
  const number = (os.constants.signals as Record<string, number | undefined>)[signal];
  return number === undefined ? 255 : Math.min(255, 128 + number);
}

