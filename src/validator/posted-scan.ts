/**
 * A job scan on its way from a scan worker thread (scan-worker.ts) to the
 * audit (scan-pool.ts). A big queue is mostly finished jobs with nothing
 * to say: each is posted as the string `<outcome>/<files>`, one string for
 * the structured clone to copy instead of four objects and an array, and
 * made whole again on the other side. Every other scan travels as it is.
 */
import type { JobScan } from './job-scan.ts';

/** A scan as posted: null when the job vanished since the listing, a compact clean finished job, or the whole scan. */
export type PostedScan = JobScan | string | null;

/** The scan of a clean finished job as `<outcome>/<files>` (expandScan undoes it), any other as it is. */
export function compactScan(scan: JobScan | undefined): PostedScan {
  if (scan === undefined) return null;
  const { summary, findings } = scan;
  const plain =
    summary.finished && summary.outcome !== undefined && summary.gated === undefined && summary.gate === undefined && summary.unreadable === undefined && summary.spec === undefined && summary.open === undefined;
  return plain && findings.list.length === 0 ? `${summary.outcome}/${findings.files}` : scan;
}

/** The scan compactScan posted for the job `id`. */
export function expandScan(posted: PostedScan, id: string): JobScan | null {
  if (typeof posted !== 'string') return posted;
  const slash = posted.indexOf('/');
  const outcome = posted.slice(0, slash) as NonNullable<JobScan['summary']['outcome']>;
  return { summary: { id, finished: true, outcome }, findings: { list: [], files: Number(posted.slice(slash + 1)) } };
}
