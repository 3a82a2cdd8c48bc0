/**
 * What a command starts with (EXEC-6, EXEC-10, EXEC-13, SPEC-3): its
 * command line and environment, built from the spec as the exact bytes it
 * holds and nothing of the consumer's own but its home, and the exit code of
 * a death by a signal fsjob did not send.
 */
import os from 'node:os';
import { DEFAULT_COMMAND_PATH } from '../base/constants.ts';
import type { SpecRecord } from '../records/codec.ts';
import { bytesOfText, type RecordText } from '../records/bytes.ts';
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

/**
 * EXEC-6: exactly this environment, nothing of the consumer's own; SPEC-3:
 * each value is the bytes the spec holds (a value that is not UTF-8 is
 * carried in base64 and decoded here), so what the command gets is what the
 * producer was given. The bytes are built here, from the record, and the
 * start of the command passes them on as they are.
 */
export function commandEnv(spec: SpecRecord, queueRoot: string, attempt: number): Record<string, Buffer> {
  const env: Record<string, Buffer> = { PATH: Buffer.from(DEFAULT_COMMAND_PATH), HOME: Buffer.from(consumerHome()) };
  for (const [name, value] of Object.entries(spec.env)) env[name] = bytesOfText(value);
  env['FSJOB_JOB_ID'] = Buffer.from(spec.id);
  env['FSJOB_ATTEMPT'] = Buffer.from(String(attempt));
  env['FSJOB_QUEUE'] = Buffer.from(queueRoot);
  return env;
}

/**
 * SPEC-3: the command line as the bytes the spec holds; under a policy
 * argv[0] is the program the consumer resolved (EXEC-15).
 */
export function commandArgv(argv: readonly RecordText[], program?: string): Buffer[] {
  const bytes = argv.map(bytesOfText);
  if (program !== undefined) bytes[0] = Buffer.from(program);
  return bytes;
}

/** EXEC-10: 128 + the signal number, for a signal fsjob did not send. */
export function signalExitCode(signal: string): number {
  const number = (os.constants.signals as Record<string, number | undefined>)[signal];
  return number === undefined ? 255 : Math.min(255, 128 + number);
}

