/**
 * `fsjob validate [QUEUE|FILE]... [--queue DIR] [--type T] [--json] [--strict] [--output FILE]`:
 * audit whole queues (CONF-3) and check record files (REC-4), and report
 * every finding. Writes nothing but the --output file, which is never inside a queue.
 * This module declares its options and help; validate-run.ts runs it, loaded only then.
 */
import { DOCUMENT_TYPES } from '../../records/record-types.ts';
import type { FsjobCommand } from '../command.ts';

export const validateCommand: FsjobCommand = {
  citesClauses: true,
  builder: (yargs) =>
    yargs
      .positional('targets', {
        describe: 'Queue roots (a directory holding fsjob.json) and record files (the type comes from the name: spec.json, claim.<g>.json, workers/<w>.json, ...)',
        type: 'string',
      })
      .option('queue', {
        alias: 'q',
        describe: 'Audit the queue at this root (repeatable; default when nothing is named: $FSJOB_QUEUE)',
        type: 'string',
      })
      .option('type', {
        describe: 'Check every record FILE as this type instead of deciding from its name',
        choices: DOCUMENT_TYPES,
        type: 'string',
      })
      .option('json', {
        describe: 'Write the report as JSON (schemas/report.schema.json) instead of text',
        type: 'boolean',
        default: false,
      })
      .option('strict', {
        describe: 'Fail on warnings too (exit 1 unless there is no error and no warning)',
        type: 'boolean',
        default: false,
      })
      .option('output', {
        describe: 'Also write the JSON report to FILE, complete or not at all (never inside an audited queue)',
        type: 'string',
        requiresArg: true,
      })
      .example('$0 validate /srv/q', 'audit the whole queue /srv/q: every record, file, name, mode, claim and index entry')
      .example('$0 validate --queue /srv/q --strict', 'the same, failing on warnings (orphans, stale temp files) too')
      .example('$0 validate --json /srv/q | jq .summary', 'machine-readable report')
      .example('$0 validate /srv/q --output audit.json', 'findings as text, and the JSON report in audit.json for a CI step')
      .example('$0 validate q/jobs/*/spec.json', 'check the spec of every job in queue q')
      .example('$0 validate --type request batch-line.json', 'check a request before enqueueing it')
      .epilog(
        'validate never modifies a queue: it opens nothing for writing, changes no mode or time, follows no symlink and never opens a FIFO or socket; it may run while producers and consumers work. ' +
          'A finding names the path, the job, the spec clause (spec/README.md names the file of each family), its severity (error, warning, info) and what to do. ' +
          'Exit status: 0 no error (with --strict: no warning either), 1 findings that fail, 2 it could not run (not a queue, an unsafe queue root, a usage error).',
      ),
  run: async (args, io) => (await import('./validate-run.ts')).runValidate(args, io),
};
