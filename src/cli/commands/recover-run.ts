/** What `fsjob recover` does once its options are parsed (commands/recover.ts declares them). */
import type { CliIo } from '../command.ts';
import { EXIT } from '../exit.ts';
import { withoutClauseIds } from '../messages.ts';
import { progressWanted, startProgress } from '../progress.ts';
import { recover } from '../../consumer/index.ts';
import { jsonText, queuePathOf } from '../queue-arg.ts';

type Report = import('../../consumer/recover.ts').RecoverReport;

/** The report in the records' snake_case (schemas/output/recover.schema.json). */
function reportJson(report: Report): Record<string, unknown> {
  return {
    queue: report.queue,
    claims_broken: report.claimsBroken,
    receipts: report.receipts,
    requeued: report.requeued,
    ready_rebuilt: report.readyRebuilt,
    ready_removed: report.readyRemoved,
    temp_removed: report.tempRemoved,
    workers_removed: report.workersRemoved,
    holds_removed: report.holdsRemoved,
    unproven: report.unproven,
    skipped: report.skipped,
    failed: report.failed,
  };
}

function reportText(report: import('../../consumer/recover.ts').RecoverReport): string {
  const lines = [`recovered ${report.queue}`];
  const section = (title: string, items: string[]): void => {
    lines.push(`${title}: ${items.length}`);
    for (const item of items) lines.push(`  ${item}`);
  };
  section('claims broken', report.claimsBroken.map((c) => `${c.job_id} claim ${c.gen}: ${c.reason}`));
  section('receipts published', report.receipts.map((r) => `${r.job_id}: ${r.outcome} (exit ${r.exit_code}${r.reason === null ? '' : `, ${r.reason}`})`));
  section('requeued', report.requeued.map((r) => `${r.job_id} (generation ${r.gen} released)`));
  section('ready entries rebuilt', report.readyRebuilt);
  section('ready entries removed', report.readyRemoved);
  section('temporary files removed', report.tempRemoved);
  section('stale worker registrations removed', report.workersRemoved);
  section('holds removed', report.holdsRemoved);
  section('left alone, unproven', report.unproven.map((u) => `${u.job_id} claim ${u.gen}: ${u.reason} (${u.clause})`));
  section('skipped', report.skipped.map((s) => `${s.path}: ${s.reason}`));
  section('failed, recover again once fixed', report.failed.map((f) => `${f.path}: ${f.reason}`));
  return `${lines.join('\n')}\n`;
}

/** Runs `fsjob recover` with yargs' parsed arguments; resolves to the exit status. */
export async function runRecover(args: Record<string, unknown>, io: CliIo): Promise<number> {
  const progress = startProgress(io, 'recover', 'jobs', progressWanted(io, args));
  let report;
  try {
    report = await recover(await queuePathOf(args), {
      onProgress: (done, total) => {
        progress.total(total);
        if (done > 0) progress.add();
      },
    });
  } finally {
    progress.end();
  }
  if (args['json'] === true) io.stdout(jsonText(reportJson(report)));
  else {
    const text = reportText(report);
    io.stdout(args['verbose'] === true ? text : withoutClauseIds(text));
  }
  return report.unproven.length === 0 && report.failed.length === 0 ? EXIT.OK : EXIT.FAILURE;
}
