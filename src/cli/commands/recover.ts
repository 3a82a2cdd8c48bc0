/**
 * `fsjob recover`: one-shot recovery of a queue (RECOV-1, READY-4, TEMP-1, WORKER-1, GC-2).
 * This module declares its options and help; recover-run.ts runs it, loaded only then.
 */
import { GUARDIAN_LIMIT, LEASE_SKEW } from '../../base/constants.ts';
import type { FsjobCommand } from '../command.ts';
import { withQueue } from '../queue-option.ts';

export const recoverCommand: FsjobCommand = {
  builder: (yargs) =>
    withQueue(yargs)
      .option('json', { describe: 'Write the report as JSON', type: 'boolean', default: false })
      .example('$0 recover --queue /srv/q', 'after a crash: finish or requeue what the dead worker held')
      .epilog(
        'A claim is broken only when its owner is dead (a missing process, a reused pid, or another host that has not renewed its lease ' +
          `for lease + ${(GUARDIAN_LIMIT + LEASE_SKEW) / 1000} s: its guardian's stop limit and the clock skew, LEASE-3) AND its ` +
          'recorded process group is proven stopped; a matching group on this host is stopped first (SIGTERM, 5 s, SIGKILL). ' +
          'A job whose last attempt died is finished as lost (exit code 125) when no attempt remains, else requeued. ' +
          'Anything that cannot be proven is left alone and listed; so is what the filesystem refused (ENOSPC, EROFS, EACCES: run recover again once fixed). ' +
          'Exit status: 0 when nothing was left unproven and nothing failed, 1 otherwise.',
      ),
  run: async (args, io) => (await import('./recover-run.ts')).runRecover(args, io),
};
