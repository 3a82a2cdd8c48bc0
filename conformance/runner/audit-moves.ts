/**
 * The directory-move audit (PUB-9): every rename of a whole directory an
 * implementation made, from the injector's trace of a run (trace mode
 * records the st_mode of the renamed-to name after the call, so a directory
 * move is told from a record's rename; the count log alone cannot tell).
 *
 * - A directory moves only as tmp/<id> -> jobs/<id> (the publishing rename,
 *   ENQ-3), tmp/<id> -> jobs/<id>.gated (a gated job's, 1.2, GATE-1),
 *   jobs/<id>.gated -> jobs/<id> (its gate opening, GATE-3) or
 *   jobs/<id> -> tmp/.gc-<id>-<random> (a retired job, GC-1).
 *   Anything else (a job staged under another name, in jobs/ itself or
 *   outside the queue; a job moved to another directory; a staging
 *   directory moved aside) is PUB-9; from outside the queue it is LAYOUT-3
 *   first (staging elsewhere), as runner/audit.ts says too.
 * - After an allowed move the target's parent is fsynced by the run (any of
 *   its processes: fsjob-sh's fsyncs are `sync` children), by a call that
 *   started after the rename returned (k > the rename's done): jobs/ for a
 *   publication (ENQ-4 names it) and a gate's opening (GATE-3), tmp/ for a
 *   retirement (PUB-9). A retired
 *   job's jobs/ is fsynced before anything inside the moved tree is removed
 *   (GC-1's order: a removal that became durable before the rename did
 *   would leave a half-removed job in jobs/ after a power loss).
 *
 * What this cannot see: when the run reported the id (stdout is not a
 * counted call), so "before the id is reported" is checked only as "before
 * the run ended"; and whether what was fsynced made the rest durable in the
 * right order. Both are the power mode's (`--crash power`, cases/power.ts:
 * it builds the states a power loss leaves after each call of one traced
 * run, DUR-3's model included, and checks ENQ-4 on each). The source
 * parent's fsync is a SHOULD and not judged. A rename that failed (ret -1)
 * moved nothing and is not judged either; whether a mover checks that its
 * target does not exist first is seen by planting one (cases/writing-moves.ts).
 */
import path from 'node:path';
import { isJobId } from '../../src/model/layout.ts';
import { GATED_SUFFIX } from '../../src/records/names.ts';
import type { TraceRecord } from '../crash/trace.ts';
import type { AuditFinding } from './audit.ts';

const S_IFMT = 0o170000;
const S_IFDIR = 0o040000;

type Move = { kind: 'publish'; id: string } | { kind: 'open'; id: string } | { kind: 'retire'; id: string } | { kind: 'other' };

/** Which of PUB-9's moves `from` -> `to` is, if any (paths relative to the root). */
export function classifyMove(from: string, to: string): Move {
  const a = from.split('/');
  const b = to.split('/');
  if (a.length === 2 && b.length === 2 && a[0] === 'tmp' && b[0] === 'jobs' && isJobId(a[1] ?? '') && (a[1] === b[1] || `${a[1]}${GATED_SUFFIX}` === b[1])) {
    return { kind: 'publish', id: a[1] as string };
  }
  if (a.length === 2 && b.length === 2 && a[0] === 'jobs' && b[0] === 'jobs' && isJobId(b[1] ?? '') && a[1] === `${b[1]}${GATED_SUFFIX}`) return { kind: 'open', id: b[1] as string };
  if (a.length === 2 && b.length === 2 && a[0] === 'jobs' && b[0] === 'tmp' && isJobId(a[1] ?? '')) {
    const id = a[1] as string;
    const prefix = `.gc-${id}-`;
    if ((b[1] ?? '').startsWith(prefix) && (b[1] ?? '').length > prefix.length) return { kind: 'retire', id };
  }
  return { kind: 'other' };
}

function inside(root: string, p: string): boolean {
  const rel = path.relative(root, p);
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel);
}

/** Checks one traced run's directory moves; `label` says which run (in messages). */
export function auditMoves(trace: readonly TraceRecord[], root: string, label: string): AuditFinding[] {
  const findings: AuditFinding[] = [];
  const records = [...trace].sort((a, b) => a.k - b.k);
  const rel = (p: string): string => (inside(root, p) ? path.relative(root, p) : p);
  const describe = (r: TraceRecord): string => `k=${r.k} (returned by ${r.done}) pid ${r.pid} ${r.op} ${rel(r.path)}${r.path2 === undefined ? '' : ` -> ${rel(r.path2)}`}${r.ret < 0 ? ` failed errno ${r.errno}` : ''}`;
  const report = (r: TraceRecord, clauses: string[], message: string, context: TraceRecord[] = []): void => {
    findings.push({ k: r.k, clauses, message: `${label}: ${message}`, evidence: [`move: ${describe(r)}`, ...context.map((c) => `then: ${describe(c)}`)] });
  };
  /** The first fsync of `dir` (or a whole-system sync) that started after `after` and succeeded, if any. */
  const syncOf = (dir: string, after: number): TraceRecord | undefined =>
    records.find((r) => r.family === 'fsync' && r.ret === 0 && r.k > after && (r.path === dir || r.op === 'sync' || r.op === 'syncfs'));

  for (const r of records) {
    if (r.family !== 'rename' || r.ret !== 0 || r.path2 === undefined || r.mode === undefined || (r.mode & S_IFMT) !== S_IFDIR) continue;
    const from = r.path;
    const to = r.path2;
    const move = inside(root, from) && inside(root, to) ? classifyMove(rel(from), rel(to)) : { kind: 'other' as const };
    if (move.kind === 'other') {
      const allowed = 'a whole directory moves only by the rename of a staged job tmp/<id> into jobs/<id> (ENQ-3) or jobs/<id>.gated (GATE-1), of a gated job jobs/<id>.gated to jobs/<id> (GATE-3), or of a finished job jobs/<id> into tmp/.gc-<id>-<random> (GC-1)';
      if (!inside(root, from)) report(r, ['LAYOUT-3', 'PUB-9'], `the directory ${rel(to)} was moved into the queue from ${from}, outside it; a job is staged in tmp/<id>/ of its own queue and nowhere else, and ${allowed}`);
      else if (!inside(root, to)) report(r, ['PUB-9'], `the directory ${rel(from)} was moved out of the queue to ${to}; ${allowed}`);
      else report(r, ['PUB-9'], `the directory ${rel(from)} was renamed to ${rel(to)}; ${allowed}: any other name is one that no clause protects (TEMP-1, TEMP-2) or that readers take for a job`);
      continue;
    }
    const target = path.dirname(to);
    if (move.kind === 'publish') {
      if (syncOf(target, r.done) === undefined) report(r, ['ENQ-4', 'PUB-9'], `${rel(to)} was published by its rename from ${rel(from)}, but no fsync of jobs/ started after the rename returned, before the run ended; the move is durable only after its new parent's fsync (DUR-3), which comes before the id is reported`);
      continue;
    }
    if (move.kind === 'open') {
      if (syncOf(target, r.done) === undefined) report(r, ['GATE-3', 'PUB-9'], `the gate of ${rel(to)} was opened by its rename from ${rel(from)}, but no fsync of jobs/ started after the rename returned, before the run ended (DUR-3)`);
      continue;
    }
    if (syncOf(target, r.done) === undefined) report(r, ['PUB-9'], `the finished job ${rel(from)} was retired by its rename to ${rel(to)}, but no fsync of tmp/ followed it before the run ended; the mover fsyncs the target's parent (DUR-3)`);
    const source = path.dirname(from);
    const removal = records.find((c) => c.k > r.k && (c.family === 'unlink' || c.family === 'rmdir' || c.family === 'remove') && (c.path === to || c.path.startsWith(`${to}/`)));
    const synced = syncOf(source, r.done);
    const limit = removal?.k ?? Number.POSITIVE_INFINITY;
    if (synced === undefined || synced.k > limit) {
      report(r, ['GC-1', 'PUB-9'], `the finished job ${rel(from)} was retired by its rename to ${rel(to)}, but ${removal === undefined ? 'jobs/ was never fsynced after it' : `its tree was removed before jobs/ was fsynced after the rename`}; garbage collection renames, fsyncs jobs/, and only then removes the renamed tree`, [...(removal === undefined ? [] : [removal]), ...(synced === undefined ? [] : [synced])]);
    }
  }
  return findings;
}
