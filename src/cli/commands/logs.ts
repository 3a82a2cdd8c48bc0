/** `fsjob logs ID [--stderr] [--follow]`: a job's captured output (EXEC-1, RCPT-5). */
import { readLogs } from '../../producer/index.ts';
import type { FsjobCommand } from '../command.ts';
import { EXIT } from '../exit.ts';
import { jobIdOf, openQueueOf, withQueue } from '../queue-arg.ts';

export const logsCommand: FsjobCommand = {
  command: 'logs <id>',
  describe: "Print a job's captured standard output (or error)",
  builder: (yargs) =>
    withQueue(yargs)
      .positional('id', { describe: 'The job id', type: 'string' })
      .option('stderr', { describe: 'Standard error instead of standard output', type: 'boolean', default: false })
      .option('follow', { alias: 'f', describe: 'Keep printing new output until the job finishes', type: 'boolean', default: false })
      .example('$0 logs $id', 'the output of the attempt the receipt reports, or of the latest attempt')
      .example('$0 logs -f --stderr $id', 'follow standard error until the job has a receipt')
      .epilog(
        'Only the first max_output_bytes of each stream are kept (the receipt says when output was truncated). ' +
          'When --follow moves to a retry, a line on stderr names the new generation. Exit status: 0, 1 the output cannot be read, 4 no such job.',
      ),
  run: async (args, io) => {
    const queue = await openQueueOf(args);
    const id = jobIdOf(args);
    const write = io.stdoutBytes ?? ((bytes: Uint8Array) => io.stdout(Buffer.from(bytes).toString('utf8')));
    let gen: number | undefined;
    const follow = args['follow'] === true;
    for await (const chunk of readLogs(queue, id, { stream: args['stderr'] === true ? 'stderr' : 'stdout', follow })) {
      if (follow && gen !== undefined && chunk.gen !== gen) io.stderr(`fsjob: output of generation ${chunk.gen} (a new attempt) follows\n`);
      gen = chunk.gen;
      await write(chunk.bytes);
    }
    return EXIT.OK;
  },
};
