/**
 * The queue-wide checks of gated jobs (spec/gates.md): an open job that is
 * unfinished and has no cancel entry was opened by GATE-3, so each of its
 * dependencies is satisfied (AFTER-3) and, when it was held, it is released
 * (HOLD-1). A dependency seen pending is read again before that is reported:
 * it may have finished after the scan read it, and the dependent been
 * opened after (doubt.ts).
 */
import { jobNow } from './doubt.ts';
import type { KeyCheckContext } from './keys.ts';

export function checkGates(ctx: KeyCheckContext): void {
  for (const [id, summary] of ctx.summaries) {
    const gate = summary.gate;
    if (summary.finished || gate === undefined || gate.cancel) continue;
    const sink = ctx.jobSink(id);
    if (summary.gated === true) {
      // A held job is shown as such (HOLD-1); a gated job is otherwise in order by construction.
      if (gate.hold && !gate.release) sink.add('JOB_HELD', `job ${id} is held`, ctx.shown('jobs', `${id}.gated`), id);
      continue;
    }
    const shown = ctx.shown('jobs', id);
    if (gate.hold && !gate.release) {
      sink.add('HOLD_UNRELEASED', `job ${id} was enqueued held, has no release.json and no cancel request, yet its gate is open`, shown, id);
    }
    for (const dependency of gate.after) {
      const seen = ctx.summaries.get(dependency.job_id);
      // A dependency under neither name was retired (AFTER-1): its outcome is gone, nothing to judge.
      // An unreadable dependency (ENTRY_UNREADABLE) has no state to judge the dependent by.
      if (seen === undefined || seen.unreadable === true) continue;
      if (!seen.finished) {
        if (jobNow(ctx.root, dependency.job_id)?.kind !== 'unfinished') continue;
        sink.add('AFTER_UNSATISFIED', `job ${id} is open but its dependency ${dependency.job_id} is not finished`, shown, id, '/after');
      } else if (dependency.when === 'succeeded' && seen.outcome !== undefined && seen.outcome !== 'succeeded') {
        sink.add('AFTER_UNSATISFIED', `job ${id} is open, not cancelled, but its dependency ${dependency.job_id} finished ${seen.outcome} and it runs only after it succeeded`, shown, id, '/after');
      }
    }
  }
}
