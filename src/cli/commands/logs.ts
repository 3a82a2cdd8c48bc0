/**
 * `fsjob logs ID... [--stderr] [--follow] [--raw] [--json]`: a job's captured output (EXEC-1, RCPT-5).
 * This module declares its options and help; logs-run.ts runs it, loaded only then.
 */
import type { FsjobCommand } from '../command.ts';
import { withQueue } from '../queue-option.ts';

export const logsCommand: FsjobCommand = {
  builder: (yargs) =>
    withQueue(yargs)
      .positional('ids', { describe: 'Job ids, or unique prefixes of them', type: 'string' })
      .option('stderr', { describe: 'Standard error instead of standard output', type: 'boolean', default: false })
      .option('follow', { alias: 'f', describe: 'Keep printing new output until the job finishes (one id)', type: 'boolean', default: false })
      .option('raw', { describe: 'Exactly the kept bytes: the truncation marker goes to stderr instead', type: 'boolean', default: false })
      .option('json', { describe: 'One JSON object per job: the bytes (text and base64), whether and how much was dropped', type: 'boolean', default: false })
      .example('$0 logs $id', 'the output of the attempt the receipt reports, or of the latest attempt')
      .example('$0 logs -f --stderr $id', 'follow standard error until the job has a receipt')
      .example('$0 logs $a $b', 'two jobs, each under a ==> id <== header')
      .epilog(
        "A consumer keeps max_output_bytes of each stream (the job's output_keep says which: the head, the tail, or both ends); " +
          'where it dropped bytes, logs prints a line "[truncated: N bytes dropped]" (with --raw: on stderr). ' +
          'When --follow moves to a retry, a line on stderr names the new generation; while the job waits with no live worker serving the queue, or waits for a release (it is held, or blocked behind a held job), a line on stderr says so. ' +
          'Exit status: 0, 1 the output cannot be read, 4 no such job.',
      ),
  run: async (args, io) => (await import('./logs-run.ts')).runLogs(args, io),
};
