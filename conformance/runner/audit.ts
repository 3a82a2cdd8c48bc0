/**
 * The publication audit: what the crash injector saw an implementation do,
 * checked call by call against the writing primitives of spec/writing.md. It needs
 * no kill and no luck with kill points: one counted run shows every
 * mutating call inside the queue, in order.
 *
 * - Write-once records (claim, exec, end, receipt, cancel, holds, fsjob.json)
 *   appear only as the destination of a link (PUB-3): never opened for
 *   writing in place, never renamed onto (rename replaces: two claimers
 *   could both "win", CLAIM-5), never removed while the job exists (RCPT-6).
 * - Mutable records (state, workers) appear by rename, never in place (PUB-4).
 * - The temporary file behind a published record is fsynced after its last
 *   write and before the link or rename (PUB-2).
 * - A job directory appears in jobs/ only by a rename from staging (ENQ-3,
 *   ENQ-5): nothing is created in jobs/ directly, and spec.json and stdin are
 *   never written once the job is published. The rename's source is
 *   tmp/<id>: from outside the queue that is LAYOUT-3, from another name
 *   inside it PUB-9 (every directory move, from a trace, is
 *   runner/audit-moves.ts's). A gated job (1.2, GATE-1) is published the
 *   same way at jobs/<id>.gated, and jobs/<id> then also appears by the
 *   rename of jobs/<id>.gated that opens its gate (GATE-3); its records
 *   (cancel, release) are write-once there as in an open job.
 * - The outputs a receipt describes are fsynced before it is linked and never
 *   written after it (RCPT-2, I4).
 * - Inside a published job only temporary names are removed: never a state
 *   record, an output, spec.json, stdin or the job directory itself (PUB-10).
 * - A mode is set only on what the run itself just created (PUB-8): never
 *   chmod of a published record or an entry someone else made (PUB-11).
 * - The directory a write-once record was linked into is fsynced after the
 *   link, before the next link into that directory and before the run ends
 *   (PUB-5: the record is durable, and may be depended on, only then; a
 *   writer MAY fold that fsync into its next publication's, which still
 *   comes before the next link). A power loss would otherwise drop a record
 *   its writer reported: --crash power shows it, this shows it without.
 *   Only a link that succeeded published a record: one that failed (a claim
 *   lost to a rival, EEXIST) made nothing that needs an fsync, so the run's
 *   trace, where given, tells them apart (calls are counted before they run).
 *
 * Anything under tmp/ is staging or garbage collection and is not audited.
 * Calls are ordered by k, which is exact within one process; the checks that
 * relate two calls always concern the same path, written by one process.
 */
import path from 'node:path';
import { callFamily, type CountedCall } from '../crash/run.ts';
import type { TraceRecord } from '../crash/trace.ts';
import { classifyJobEntry, isJobId } from '../../src/model/layout.ts';
import { GATED_SUFFIX } from '../../src/records/names.ts';
import { parseHoldNumber } from '../../src/records/names.ts';
import type { Failure } from './report.ts';

type Kind = 'write-once' | 'mutable' | 'output' | 'staged-in-job' | 'job-dir' | 'free';

interface Target {
  kind: Kind;
  /** The job directory, for outputs and receipts. */
  jobDir?: string;
  name: string;
}

/** The id of a gated job's directory name (GATE-1), or '' for any other name. */
function ungated(name: string): string {
  return name.endsWith(GATED_SUFFIX) ? name.slice(0, -GATED_SUFFIX.length) : '';
}

function classify(root: string, file: string): Target | undefined {
  const rel = path.relative(root, file);
  if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) return undefined;
  const parts = rel.split('/');
  const name = parts.at(-1) ?? '';
  if (parts[0] === 'tmp') return undefined;
  if (name.startsWith('.')) return { kind: 'free', name };
  if (parts.length === 1) return name === 'fsjob.json' ? { kind: 'write-once', name } : { kind: 'free', name };
  if (parts[0] === 'jobs') {
    if (parts.length === 2) return isJobId(name) || isJobId(ungated(name)) ? { kind: 'job-dir', name } : { kind: 'free', name };
    if (parts.length !== 3 || !(isJobId(parts[1] ?? '') || isJobId(ungated(parts[1] ?? '')))) return { kind: 'free', name };
    const jobDir = path.join(root, 'jobs', parts[1] as string);
    const entry = classifyJobEntry(name);
    switch (entry.kind) {
      case 'claim':
      case 'exec':
      case 'end':
      case 'receipt':
      case 'cancel':
      case 'release':
        return { kind: 'write-once', jobDir, name };
      case 'state':
        return { kind: 'mutable', jobDir, name };
      case 'stdout':
      case 'stderr':
        return { kind: 'output', jobDir, name };
      case 'spec':
      case 'stdin':
        return { kind: 'staged-in-job', jobDir, name };
      default:
        return { kind: 'free', name };
    }
  }
  if ((parts[0] === 'dedupe' || parts[0] === 'lanes') && parts.length === 3 && name.endsWith('.json') && parseHoldNumber(name.slice(0, -5)) !== undefined) {
    return { kind: 'write-once', name };
  }
  if (parts[0] === 'workers' && parts.length === 2 && name.endsWith('.json')) return { kind: 'mutable', name };
  return { kind: 'free', name };
}

/**
 * PUB-10: what no clause lets anyone remove while the job is in jobs/ (an
 * attempt counts too: the audit sees calls before they return). Write-once
 * records have their own clauses (PUB-3, RCPT-6); worker registrations and
 * holds may go (WORKER-1, GC-2, LANE-3, DEDUPE-4).
 */
function unremovable(target: Target): boolean {
  return target.kind === 'output' || target.kind === 'staged-in-job' || target.kind === 'job-dir' || (target.kind === 'mutable' && target.jobDir !== undefined);
}

const O_CREAT = 0o100;
const O_EXCL = 0o200;

/**
 * PUB-1, PUB-7: a temporary file of a record, a data file (stdout.<g>,
 * stderr.<g>, ready entries) or a file of a staged job (tmp/<id>/spec.json,
 * stdin) is created with O_CREAT|O_EXCL, so nothing that exists (a planted
 * file, a symlink) is ever opened for writing. Opens whose flags the
 * injector did not see are not judged.
 */
function createdShared(root: string, call: CountedCall): { clauses: string[]; message: string } | undefined {
  if (callFamily(call.op) !== 'open' || call.flags === undefined || (call.flags & O_CREAT) === 0 || (call.flags & O_EXCL) !== 0) return undefined;
  const rel = path.relative(root, call.path);
  const parts = rel.split('/');
  const name = parts.at(-1) ?? '';
  const how = `was opened with O_CREAT but without O_EXCL (flags 0${call.flags.toString(8)}), so an existing file or symlink at that name would be written`;
  if (parts[0] === 'tmp') {
    if (parts.length === 3 && isJobId(parts[1] ?? '') && (name === 'spec.json' || name === 'stdin')) return { clauses: ['PUB-7', 'ENQ-3'], message: `the staged ${rel} ${how}; a staged job's files are created exclusively` };
    return undefined;
  }
  if (name.startsWith('.')) return { clauses: ['PUB-1', 'PUB-3'], message: `the temporary file ${rel} ${how}; a record's temporary file is created with O_CREAT|O_EXCL|O_NOFOLLOW` };
  if (parts[0] === 'ready' && parts.length === 2) return { clauses: ['PUB-7', 'ENQ-2'], message: `the ready entry ${rel} ${how}; ready entries are created exclusively` };
  if (parts[0] === 'jobs' && parts.length === 3) {
    const kind = classifyJobEntry(name).kind;
    if (kind === 'stdout' || kind === 'stderr') return { clauses: ['PUB-7', 'EXEC-1'], message: `the output file ${rel} ${how}; output files are created exclusively` };
  }
  return undefined;
}

export interface AuditFinding extends Failure {
  k: number;
}

/**
 * Checks one run's counted calls; `label` says which run (in messages).
 * `trace` (the run's, with CrashRunOptions.trace) says which calls failed;
 * without it every link counts as made.
 */
export function auditCalls(calls: readonly CountedCall[], root: string, label: string, trace: readonly TraceRecord[] = []): AuditFinding[] {
  const failed = new Set(trace.filter((record) => record.ret < 0).map((record) => record.k));
  const findings: AuditFinding[] = [];
  const rel = (p: string): string => path.relative(root, p) || '.';
  const describe = (call: CountedCall): string => `k=${call.k} pid ${call.pid} ${call.op} ${rel(call.path)}${call.path2 === undefined ? '' : ` -> ${rel(call.path2)}`}`;
  const report = (call: CountedCall, clauses: string[], message: string, context: CountedCall[] = []): void => {
    findings.push({ k: call.k, clauses, message: `${label}: ${message}`, evidence: [...context.map((c) => `earlier: ${describe(c)}`), `call: ${describe(call)}`] });
  };
  /** Last write and last fsync (by k) of each path, and when it was opened. */
  const lastWrite = new Map<string, CountedCall>();
  const lastSync = new Map<string, CountedCall>();
  const receiptLinked = new Map<string, CountedCall>();
  const reported = new Set<string>();
  /** Ready entries created so far (names). */
  const readyMade = new Set<string>();
  const once = (key: string): boolean => {
    if (reported.has(key)) return false;
    reported.add(key);
    return true;
  };

  /** Paths this run created itself (mkdir, mkdtemp, mkstemp, an open with O_CREAT): their mode may be set (PUB-8). */
  const made = new Set<string>();
  /** PUB-5: per directory, the write-once link not yet followed by an fsync of that directory. */
  const unsynced = new Map<string, CountedCall>();

  for (const call of [...calls].sort((a, b) => a.k - b.k)) {
    const family = callFamily(call.op);
    const exclusive = createdShared(root, call);
    if (exclusive !== undefined && once(`excl ${call.path}`)) report(call, exclusive.clauses, exclusive.message);
    if (family === 'mkdir' || family === 'mktemp' || (family === 'open' && ((call.flags ?? 0) & O_CREAT) !== 0)) made.add(call.path);
    if (family === 'chmod') {
      if (classify(root, call.path) !== undefined && !made.has(call.path) && once(`chmod ${call.path}`)) {
        report(call, ['PUB-11'], `the mode of ${rel(call.path)} was changed, but this run did not create it; only a directory (or file) being created has its mode set (PUB-8), never a published record or an existing entry`);
      }
      continue;
    }
    if (family === 'open' || family === 'mknod' || family === 'link') {
      const made = family === 'link' ? call.path2 : call.path;
      if (made !== undefined && path.dirname(made) === path.join(root, 'ready')) readyMade.add(path.basename(made));
    }
    const target = classify(root, call.path);
    if (family === 'open' || family === 'write' || family === 'truncate' || family === 'fallocate' || family === 'mktemp') {
      lastWrite.set(call.path, call);
      if (target === undefined) continue;
      if (target.kind === 'write-once' && once(`inplace ${call.path}`)) {
        report(call, ['PUB-3', 'PUB-1', 'I1'], `the write-once record ${rel(call.path)} was written in place under its final name; a record is written to a temporary file and linked (spec/writing.md), so a reader never sees it torn`);
      } else if (target.kind === 'mutable' && once(`inplace ${call.path}`)) {
        report(call, ['PUB-4', 'I1'], `the record ${rel(call.path)} was written in place; a mutable record is replaced by rename of a complete temporary file (PUB-4)`);
      } else if (target.kind === 'staged-in-job' && once(`staged ${call.path}`)) {
        report(call, ['ENQ-5', 'ENQ-3', 'I1'], `${rel(call.path)} was written inside a published job; a job is built in tmp/ and appears whole by one rename`);
      } else if (target.kind === 'output' && target.jobDir !== undefined) {
        const receipt = receiptLinked.get(target.jobDir);
        if (receipt !== undefined && once(`late ${call.path}`)) {
          report(call, ['RCPT-2', 'I4'], `${rel(call.path)} was written after ${rel(path.join(target.jobDir, 'receipt.json'))} was published; a receipt describes outputs that are complete and durable`, [receipt]);
        }
      }
      continue;
    }
    if (family === 'fsync') {
      lastSync.set(call.path, call);
      unsynced.delete(call.path);
      continue;
    }
    if (family === 'mkdir') {
      if (target?.kind === 'job-dir' && once(`mkdir ${call.path}`)) {
        report(call, ['ENQ-3', 'ENQ-5', 'I1'], `the job directory ${rel(call.path)} was created in place in jobs/; a job is published by one rename of its complete staging directory tmp/<id>/`);
      }
      continue;
    }
    if (family === 'unlink' || family === 'remove' || family === 'rmdir') {
      if (target?.kind === 'write-once' && target.jobDir !== undefined && once(`unlink ${call.path}`)) {
        report(call, target.name === 'receipt.json' ? ['RCPT-6', 'I3'] : ['PUB-3', 'I2'], `the write-once record ${rel(call.path)} was removed while its job exists`);
      } else if (target !== undefined && unremovable(target) && once(`unlink ${call.path}`)) {
        report(call, ['PUB-10', 'I1'], `${rel(call.path)} was removed in place; inside jobs/ only temporary names are ever removed, and a retired job leaves jobs/ by one rename into tmp/ (GC-1) before its tree is removed there`);
      }
      continue;
    }
    if (family === 'rename' && call.path2 !== undefined && classify(root, call.path2)?.kind === 'job-dir') {
      const named = path.basename(call.path2);
      const id = ungated(named) || named;
      // GATE-3: an open job's directory may also come from its gated name.
      const gateOpened = named === id && call.path === path.join(root, 'jobs', `${id}${GATED_SUFFIX}`);
      if (call.path !== path.join(root, 'tmp', id) && !gateOpened && once(`staging ${call.path2}`)) {
        // Staged outside the queue is LAYOUT-3's; under another name inside it (jobs/.tmp-<id>, tmp/.stage-<id>) PUB-9's closed list of moves.
        const from = path.relative(root, call.path);
        const outside = from === '' || from.startsWith('..') || path.isAbsolute(from);
        report(call, outside ? ['LAYOUT-3', 'ENQ-3', 'I1'] : ['PUB-9', 'ENQ-3', 'I1'], outside ? `${rel(call.path2)} was renamed into jobs/ from ${rel(call.path)}; a job is staged in tmp/${id}/ of its own queue and nowhere else` : `${rel(call.path2)} was renamed into jobs/ from ${rel(call.path)}; a job is published only by the rename of tmp/${id} to jobs/${id} (ENQ-3) or jobs/${id}${GATED_SUFFIX} (GATE-1), and opened by the rename of jobs/${id}${GATED_SUFFIX} to jobs/${id} (GATE-3); no other move of a directory is allowed`);
      }
      // A gate's opener finds the entry its producer made in most runs (what the opening leaves is the crash sweep's, GATE-3).
      if (!gateOpened && ![...readyMade].some((name) => name.endsWith(`-${id}`)) && once(`ready ${call.path2}`)) {
        report(call, ['ENQ-2', 'READY-1', 'I1'], `${rel(call.path2)} was published before its ready entry ready/<P>-${id} was created; the entry is created first, so a published job always has one`);
      }
    }
    if (family === 'link' || family === 'rename') {
      const dest = call.path2;
      if (dest === undefined) continue;
      const to = classify(root, dest);
      if (to === undefined) continue;
      if (family === 'link' && !failed.has(call.k)) {
        const dir = path.dirname(dest);
        const before = unsynced.get(dir);
        if (before !== undefined && once(`pub5 ${before.path2 ?? ''}`)) {
          report(call, ['PUB-5', 'DUR-2'], `${rel(before.path2 ?? dir)} was linked and then ${rel(dest)} was linked into the same directory without an fsync of ${rel(dir)}/ in between; a record is durable only once its directory is fsynced, before anything depends on it`, [before]);
        }
        if (to.kind === 'write-once') unsynced.set(dir, call);
      }
      if (family === 'rename' && to.kind === 'write-once' && once(`rename ${dest}`)) {
        const claim = /^claim\./.test(to.name);
        report(call, claim ? ['CLAIM-5', 'PUB-3', 'I2'] : ['PUB-3', 'I3'], claim ? `the claim ${rel(dest)} was published by rename, which replaces an existing claim: two consumers can both take the same generation; a claim is linked, and link fails when the name exists` : `the write-once record ${rel(dest)} was published by rename, which replaces; write-once records are linked (PUB-3)`);
      }
      if (family === 'link' && (to.kind === 'staged-in-job' || to.kind === 'job-dir') && once(`link ${dest}`)) {
        report(call, ['ENQ-5', 'I1'], `${rel(dest)} was linked into a published job; a job appears whole by one rename`);
      }
      if ((to.kind === 'write-once' || to.kind === 'mutable') && (family === 'link' || to.kind === 'mutable')) {
        // PUB-2: the temporary file was fsynced after its last write.
        const wrote = lastWrite.get(call.path);
        const synced = lastSync.get(call.path);
        if (wrote !== undefined && (synced === undefined || synced.k < wrote.k) && once(`pub2 ${dest}`)) {
          report(call, ['PUB-2', 'I1'], `${rel(dest)} was published from ${rel(call.path)} without an fsync of it after its last write`, [wrote]);
        }
      }
      if (family === 'link' && to.name === 'receipt.json' && to.jobDir !== undefined) {
        receiptLinked.set(to.jobDir, call);
        for (const [file, wrote] of lastWrite) {
          const out = classify(root, file);
          if (out?.kind !== 'output' || out.jobDir !== to.jobDir) continue;
          const synced = lastSync.get(file);
          if ((synced === undefined || synced.k < wrote.k) && once(`rcpt2 ${file}`)) {
            report(call, ['RCPT-2', 'I4'], `the receipt ${rel(dest)} was published before ${rel(file)} was fsynced after its last write; outputs are durable before the receipt that describes them`, [wrote]);
          }
        }
      }
    }
  }
  for (const [dir, call] of unsynced) {
    if (once(`pub5 ${call.path2 ?? ''}`)) report(call, ['PUB-5', 'DUR-2'], `${rel(call.path2 ?? dir)} was linked, and ${rel(dir)}/ was never fsynced after it before the run ended; the writer reported success for a record a power loss can drop`);
  }
  return findings;
}
