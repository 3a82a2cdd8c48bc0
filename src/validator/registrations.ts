/**
 * The registrations in workers/ as the validator audits them: each name
 * (LAYOUT-9), each record, and a registration whose owner is dead
 * (WORKER-1). Informational records: a stale one is a finding, never a
 * reason to judge a job. The rest of the queue is queue.ts's.
 */
import { join } from 'node:path';
import type { DirEntry } from '../fs/safefs.ts';
import { WORKER_ID_PATTERN } from '../records/names.ts';
import { type AuditEnv, Sink, checkKind, checkTemp, readRecordEntry, statEntry } from './entries.ts';
import type { LivenessJudge } from './liveness.ts';

/** workers/<w>.json: `entries` is the listing of workers/ (`dir` on disk, `shownDir` in findings). */
export async function checkRegistrations(sink: Sink, env: AuditEnv, entries: readonly DirEntry[], dir: string, shownDir: string, liveness: LivenessJudge): Promise<void> {
  for (const entry of entries) {
    const path = join(dir, entry.name);
    const shown = join(shownDir, entry.name);
    if (entry.name.startsWith('.')) {
      checkTemp(sink, env, path, shown, entry.kind, null);
      continue;
    }
    const workerId = entry.name.endsWith('.json') ? entry.name.slice(0, -'.json'.length) : '';
    if (!WORKER_ID_PATTERN.test(workerId)) {
      sink.add('WORKER_BAD_NAME', `${shown} is not named <worker id>.json (16 lowercase hex digits)`, shown, null);
      if (checkKind(sink, shown, entry.kind, 'any', null)) statEntry(sink, env, path, shown, null);
      continue;
    }
    const worker = readRecordEntry(sink, env, path, shown, entry, 'worker', { expectedWorkerId: workerId }, null).value;
    if (worker === undefined) continue;
    const verdict = await liveness.owner(worker.owner, { nowMs: env.nowMs, lastRenewalMs: worker.heartbeat_ms, leaseMs: worker.lease_ms });
    if (verdict.verdict === 'dead') sink.add('WORKER_STALE', `worker ${workerId} is registered but its owner is dead (${verdict.reason})`, shown, null);
  }
}
