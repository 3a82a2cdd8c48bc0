/**
 * `fsjob demo`: the quickstart, in a fresh queue (demo-run.ts runs it and
 * says what it shows). This module declares its options and help.
 */
import type { FsjobCommand } from '../command.ts';

export const demoCommand: FsjobCommand = {
  builder: (yargs) =>
    yargs
      .option('queue', { alias: 'q', type: 'string', describe: 'Create the demo queue here and keep it (default: a new temporary directory, removed at the end)' })
      .option('keep', { describe: 'Keep the temporary directory and its queue to explore them afterwards', type: 'boolean', default: false })
      .option('json', { describe: 'Print the queue and each job with its outcome as JSON instead of the narration', type: 'boolean', default: false })
      .example('$0 demo', 'run the quickstart in a temporary directory, then remove it')
      .example('$0 demo --keep', 'the same, keeping the queue for fsjob status, logs and validate')
      .epilog('Without --keep or --queue, nothing is left behind: the temporary directory is removed when the demo ends, also when it fails or is interrupted (SIGINT, SIGTERM).'),
  run: async (args, io) => (await import('./demo-run.ts')).runDemoCommand(args, io),
};
