/**
 * The open claims of an audited queue (spec/recovery-and-gc.md): whose owner
 * is dead, and whether the execution it recorded is proven stopped, running
 * on, or cannot be judged. Only looks: nothing is signalled or broken.
 */
import type { JobSummary } from './job-scan.ts';
import type { LivenessJudge } from './liveness.ts';
import type { Sink } from './entries.ts';

/**
 * ID-6..ID-8 and RECOV-1 for every open claim of the jobs scanned, each owner
 * and process group judged once (`judge`). Returns the jobs whose execution
 * is not proven stopped (LANE-1's "running").
 */
export async function checkOpenClaims(summaries: ReadonlyMap<string, JobSummary>, judge: LivenessJudge, nowMs: number, jobSink: (id: string) => Sink): Promise<Set<string>> {
  const running = new Set<string>();
  for (const [id, summary] of summaries) {
    const open = summary.open;
    if (open === undefined) continue;
    const sink = jobSink(id);
    const lease = { nowMs, lastRenewalMs: open.lastRenewalMs, leaseMs: open.claim.lease_ms };
    const owner = await judge.owner(open.claim.owner, lease);
    const executing = open.exec.kind !== 'none';
    if (owner.verdict === 'alive') {
      if (executing) running.add(id);
      continue;
    }
    if (owner.verdict === 'unknown') {
      if (executing) running.add(id);
      sink.add('OWNER_UNKNOWN', `the owner of claim ${open.gen} cannot be judged: ${owner.reason}`, open.claimPath, id);
      continue;
    }
    const dead = `the owner of claim ${open.gen} is dead (${owner.reason})`;
    if (open.exec.kind === 'none') {
      sink.add('ORPHANED_CLAIM', `${dead}; no execution was recorded`, open.claimPath, id);
      continue;
    }
    if (open.exec.kind === 'invalid') {
      running.add(id);
      sink.add('ORPHAN_UNPROVEN', `${dead} and its exec record cannot be read, so its execution cannot be proven stopped`, open.execPath, id);
      continue;
    }
    const group = open.exec.group;
    // A payload execution is the owner's own process (PAYLOAD-1): stopped with it.
    const state = group === null ? 'stopped' : await judge.execution(group, lease);
    if (state === 'stopped') {
      sink.add('ORPHANED_CLAIM', `${dead}; its execution is proven stopped`, open.claimPath, id);
    } else if (state === 'running') {
      running.add(id);
      sink.add('ORPHAN_RUNNING', `${dead} but its process group ${group?.pgid ?? '?'} still runs`, open.execPath, id);
    } else {
      running.add(id);
      sink.add('ORPHAN_UNPROVEN', `${dead} and its process group ${group?.pgid ?? '?'} cannot be proven stopped`, open.execPath, id);
    }
  }
  return running;
}
