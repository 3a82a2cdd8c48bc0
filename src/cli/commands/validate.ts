/** `fsjob validate FILE... [--type T] [--json]`: check record files (REC-4) and report findings. */
import { DOCUMENT_TYPES, type DocumentType } from '../../core/records.ts';
import { planTargets, validateFiles } from '../../validator/files.ts';
import { formatHuman } from '../../validator/report.ts';
import type { FsjobCommand } from '../command.ts';
import { EXIT } from '../exit.ts';

export const validateCommand: FsjobCommand = {
  command: 'validate <files..>',
  describe: 'Check record files: byte form, version, type, schema and name (exit 0 when all are valid, 1 on any error)',
  builder: (yargs) =>
    yargs
      .positional('files', {
        describe: 'Record files; the type comes from the name (spec.json, claim.<g>.json, workers/<w>.json, ...)',
        type: 'string',
      })
      .option('type', {
        describe: 'Check every file as this type instead of deciding from its name',
        choices: DOCUMENT_TYPES,
        type: 'string',
      })
      .option('json', {
        describe: 'Write the report as JSON (schemas/report.schema.json) instead of text',
        type: 'boolean',
        default: false,
      })
      .example('$0 validate q/jobs/*/spec.json', 'check the spec of every job in queue q')
      .example('$0 validate q/jobs/1764476044123456789-3fa2c1d09b8e7f64/*.json', 'check every record of one job, names included (REC-7)')
      .example('$0 validate --type request batch-line.json', 'check a request before enqueueing it')
      .example('$0 validate --json q/fsjob.json | jq .summary', 'machine-readable report')
      .epilog(
        'A finding names the file, the spec clause (spec/fsjob-v1.md) and the member (a JSON pointer). ' +
          'Symlinks, FIFOs and files over 1 MiB are refused unread. Exit status: 0 valid, 1 findings of severity error, 2 usage.',
      ),
  run: async (args, io) => {
    const files = (args['files'] as string[] | undefined) ?? [];
    const type = args['type'] as DocumentType | undefined;
    const targets = await planTargets(files, type);
    const { report, files: results } = await validateFiles(targets);
    io.stdout(args['json'] === true ? `${JSON.stringify(report, null, 2)}\n` : formatHuman(results, report));
    return report.summary.errors === 0 ? EXIT.OK : EXIT.FAILURE;
  },
};
