/** `fsjob init [--queue DIR]`: create a queue, or confirm an existing one (INIT-1, INIT-2: idempotent). */
import type { FsjobCommand } from '../command.ts';
import { withQueue } from '../queue-option.ts';

export const initCommand: FsjobCommand = {
  builder: (yargs) =>
    withQueue(yargs)
      .option('json', { describe: 'Print {queue, created, record} as JSON', type: 'boolean', default: false })
      .example('$0 init --queue /srv/jobs', 'create the queue /srv/jobs (mode 0700)')
      .example('FSJOB_QUEUE=/srv/jobs $0 init', 'the same, through the environment every command reads')
      .epilog('Creates tmp/, jobs/, ready/, dedupe/, lanes/, workers/ and publishes fsjob.json last (INIT-2). Exit status: 0 created or already a queue, 1 refused (for example a root writable by others, SEC-1, or a path inside another queue).'),
  run: async (args, io) => (await import('./init-run.ts')).runInit(args, io),
};
