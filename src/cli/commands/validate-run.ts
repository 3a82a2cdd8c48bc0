/** What `fsjob validate` does once its options are parsed (commands/validate.ts declares them). */
import { lstat, stat } from 'node:fs/promises';
import { FsjobError, errnoOf, isFsjobError } from '../../base/errors.ts';
import type { Finding } from '../../records/findings.ts';
import type { DocumentType } from '../../records/codec.ts';
import { type FileResult, planTargets, validateFiles } from '../../validator/files.ts';
import { type QueueAudit, auditQueue, holdsQueueRecord } from '../../validator/queue.ts';
import { buildReport, formatFileBlocks, formatHuman, formatQueueHuman, formatSummaryLine } from '../../validator/report.ts';
import type { CliIo } from '../command.ts';
import { wrapIo } from '../../fs/io-error.ts';
import { errorJsonLine, EXIT } from '../exit.ts';
import { progressDelayMs, progressWanted, startProgress } from '../progress.ts';
import { writeReportFile } from '../report-file.ts';

type Target = { kind: 'queue'; path: string } | { kind: 'file'; path: string };

/** A directory that holds fsjob.json is a queue; any other directory is a usage error; anything else a record file. */
async function classify(path: string): Promise<Target> {
  let stats;
  try {
    stats = await lstat(path);
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') throw new FsjobError('USAGE', `${path}: no such file or queue`, { path });
    // A directory on the way closed to this user (EACCES): the target cannot be looked at, said plainly (exit 2), never as an internal error.
    throw wrapIo(error, path, 'looking at');
  }
  // SEC-1: a link to a directory is named as a queue root, and the audit refuses it as one
  // (UNSAFE_QUEUE), instead of taking it for a record file of unknown type.
  if (stats.isSymbolicLink() && (await stat(path).catch(() => undefined))?.isDirectory() === true) return { kind: 'queue', path };
  if (!stats.isDirectory()) return { kind: 'file', path };
  // SEC-1: another user's directory is not looked into (as nobody it may not even be readable);
  // audited as a queue, its root is refused and validate exits 2 (REPORT-1), not 1 on an EACCES.
  if (stats.uid !== process.geteuid?.()) return { kind: 'queue', path };
  if (!holdsQueueRecord(path)) {
    throw new FsjobError('USAGE', `${path} is a directory without fsjob.json, so it is not a queue; name a queue root or record files`, { path });
  }
  return { kind: 'queue', path };
}

function asList(value: unknown): string[] {
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).map(String);
}

/** The refusal of a validation that could not run: exit 2 (REPORT-1), the error as data under --json. */
function couldNotRun(io: CliIo, args: Record<string, unknown>, what: string, error: FsjobError): number {
  // Under --json the refusal is data, as main.ts prints every other (schemas/output/error.schema.json), with this exit status.
  if (args['json'] === true) io.stdout(errorJsonLine(error.toJSON(), EXIT.USAGE));
  io.stderr(`fsjob: ${what}: ${error.message}\n`);
  return EXIT.USAGE;
}

/** Runs `fsjob validate` with yargs' parsed arguments; resolves to the exit status. */
export async function runValidate(args: Record<string, unknown>, io: CliIo): Promise<number> {
  const named = asList(args['targets']);
  const queues = asList(args['queue']);
  const type = args['type'] as DocumentType | undefined;
  const strict = args['strict'] === true;
  const targets: Target[] = [];
  for (const path of named) {
    try {
      targets.push(await classify(path));
    } catch (error) {
      if (isFsjobError(error, 'IO')) return couldNotRun(io, args, `cannot validate ${path}`, error);
      throw error;
    }
  }
  for (const path of queues) targets.push({ kind: 'queue', path });
  if (targets.length === 0) {
    const fromEnv = process.env['FSJOB_QUEUE'];
    if (fromEnv === undefined || fromEnv === '') {
      throw new FsjobError('USAGE', 'nothing to validate: name a queue or record files, or set FSJOB_QUEUE');
    }
    targets.push({ kind: 'queue', path: fromEnv });
  }

  const startedMs = Date.now();
  const fileTargets = await planTargets(
    targets.filter((target) => target.kind === 'file').map((target) => target.path),
    type,
  ).catch((error: unknown) => {
    // planTargets refuses an empty list; that is fine when queues are named.
    if (isFsjobError(error, 'USAGE') && targets.every((target) => target.kind === 'queue')) return [];
    throw error;
  });
  const validation = fileTargets.length === 0 ? undefined : await validateFiles(fileTargets);
  const files: FileResult[] = validation?.files ?? [];
  const audits: QueueAudit[] = [];
  for (const target of targets) {
    if (target.kind !== 'queue') continue;
    const progress = startProgress(io, `validate ${target.path}`, 'jobs', progressWanted(io, args));
    let counted = 0;
    try {
      audits.push(
        await auditQueue(target.path, {
          // The validator reports every 64 jobs at most this often: often enough for a line redrawn every 200 ms.
          progressIntervalMs: Math.min(100, progressDelayMs()),
          progress: (checked, total) => {
            progress.total(total);
            progress.add(checked - counted);
            counted = checked;
          },
        }),
      );
    } catch (error) {
      // An IO error that ends the audit unfinished (the queue root unreadable, out of descriptors: EMFILE) leaves no report, so exit 2 (it could not run), never 1 (findings). An unreadable job or queue directory is a finding (ENTRY_UNREADABLE).
      if (isFsjobError(error) && (error.code === 'NOT_A_QUEUE' || error.code === 'UNSAFE_QUEUE' || error.code === 'IO')) {
        progress.end();
        return couldNotRun(io, args, `cannot audit ${target.path}`, error);
      }
      throw error;
    } finally {
      progress.end();
    }
  }

  const findings: Finding[] = [...files.flatMap((file) => file.findings), ...audits.flatMap((audit) => audit.findings)];
  const report = buildReport({
    targets: targets.map((target) => target.path),
    findings,
    files: (validation?.report.summary.files ?? 0) + audits.reduce((sum, audit) => sum + audit.files, 0),
    jobs: (validation?.report.summary.jobs ?? 0) + audits.reduce((sum, audit) => sum + audit.jobs, 0),
    startedMs,
    finishedMs: Date.now(),
  });
  const json = `${JSON.stringify(report, null, 2)}\n`;
  if (typeof args['output'] === 'string') {
    await writeReportFile(args['output'], json, targets.filter((target) => target.kind === 'queue').map((target) => target.path));
  }
  if (args['json'] === true) {
    io.stdout(json);
  } else if (audits.length === 0) {
    io.stdout(formatHuman(files, report));
  } else {
    io.stdout(formatFileBlocks(files) + audits.map(formatQueueHuman).join('') + formatSummaryLine(report));
  }
  const { errors, warnings } = report.summary;
  return errors > 0 || (strict && warnings > 0) ? EXIT.FAILURE : EXIT.OK;
}
