/**
 * The trace the injector writes in trace mode (interpose-trace.c): one
 * record per counted call, written after the call returned, saying what it
 * did. conformance/crash/power-*.ts replays it on a model of the queue.
 */
import { callFamily } from './run.ts';

export interface TraceRecord {
  /** The call's k (drawn before it ran), as in the count log. */
  k: number;
  /** The counter when it returned: every call with k <= done had started by then. */
  done: number;
  pid: number;
  /** The libc symbol. */
  op: string;
  /** callFamily(op). */
  family: string;
  /** The call's result (a descriptor, a byte count, 0, or -1). */
  ret: number;
  /** errno when it failed, else 0. */
  errno: number;
  /** `dev:ino` of the object after the call (the fd's file, the created or renamed-to name). */
  ino?: string;
  /** Its st_mode, type bits included. */
  mode?: number;
  size?: number;
  /** open flags; renameat2, linkat or unlinkat flags. */
  flags: number;
  /** Where written bytes landed in the file. */
  off?: number;
  /** The bytes written. */
  data?: Buffer;
  /** Absolute target (for mkstemp: the name chosen; for rename and link: the source). */
  path: string;
  /** rename and link: the destination; symlink: the link text. */
  path2?: string;
}

function unescape(field: string): string {
  return field.replace(/\\([\\tn])/g, (_, c: string) => (c === 't' ? '\t' : c === 'n' ? '\n' : '\\'));
}

function num(field: string | undefined): number | undefined {
  return field === undefined || field === '-' || field === '' ? undefined : Number(field);
}

/** Parses the trace file and its data file; records come back sorted by k. */
export function parseTrace(text: string, data: Buffer): TraceRecord[] {
  const records: TraceRecord[] = [];
  for (const line of text.split('\n')) {
    const fields = line.split('\t');
    if (fields.length < 15) continue;
    const [k, done, pid, op, ret, errno, ino, mode, size, flags, off, len, blob, target, target2] = fields as [string, ...string[]];
    const name = unescape(op ?? '');
    const record: TraceRecord = {
      k: Number(k),
      done: Number(done),
      pid: Number(pid),
      op: name,
      family: callFamily(name),
      ret: Number(ret),
      errno: Number(errno),
      flags: Number(flags),
      path: unescape(target ?? ''),
    };
    if (ino !== undefined && ino !== '-') record.ino = ino;
    const modeValue = mode === undefined || mode === '-' ? undefined : parseInt(mode, 8);
    if (modeValue !== undefined) record.mode = modeValue;
    const sizeValue = num(size);
    if (sizeValue !== undefined) record.size = sizeValue;
    const offValue = num(off);
    if (offValue !== undefined) record.off = offValue;
    const length = num(len) ?? 0;
    const at = num(blob);
    if (at !== undefined && length > 0) record.data = data.subarray(at, at + length);
    if (target2) record.path2 = unescape(target2);
    records.push(record);
  }
  records.sort((a, b) => a.k - b.k);
  return records;
}
