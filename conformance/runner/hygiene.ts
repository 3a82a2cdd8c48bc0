/**
 * What every entry of a queue must look like once the roles that wrote it
 * have exited cleanly, whoever wrote it (producer or consumer):
 *
 * - modes (SEC-5): directories 0700 (the root INIT-1, the others PUB-8),
 *   files 0600 (records through their temporary file, PUB-1; data files and
 *   ready entries, PUB-7);
 * - no temporary name left behind: one that is a second name of a published
 *   record (more than one link) was never unlinked (PUB-6); one with a
 *   single link is a temporary file whose link failed or was never tried,
 *   which its writer must remove (PUB-3). A crash may leave either (section
 *   12); a clean exit may not. tmp/ is staging and is judged by ENQ-6.
 *
 * The walk follows nothing (lstat) and skips what hostile cases plant.
 */
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { classifyJobEntry } from '../../src/model/layout.ts';
import type { Failure } from './report.ts';

export interface Walked {
  /** Relative to the queue root ('' for the root). */
  rel: string;
  kind: 'dir' | 'file' | 'symlink' | 'other';
  mode: number;
  nlink: number;
}

/** Every entry under the root except tmp/'s contents, depth first, without following links. */
export async function walkQueue(root: string): Promise<Walked[]> {
  const out: Walked[] = [];
  const visit = async (rel: string): Promise<void> => {
    let st;
    try {
      st = await lstat(path.join(root, rel));
    } catch {
      return;
    }
    const kind = st.isSymbolicLink() ? 'symlink' : st.isDirectory() ? 'dir' : st.isFile() ? 'file' : 'other';
    out.push({ rel, kind, mode: st.mode & 0o7777, nlink: st.nlink });
    if (kind !== 'dir' || rel === 'tmp') return;
    const names = (await readdir(path.join(root, rel)).catch(() => [] as string[])).sort();
    for (const name of names) await visit(rel === '' ? name : `${rel}/${name}`);
  };
  await visit('');
  return out;
}

const octal = (mode: number): string => mode.toString(8).padStart(4, '0');

function isDataFile(rel: string): boolean {
  const parts = rel.split('/');
  if (parts[0] === 'ready') return true;
  if (parts[0] !== 'jobs' || parts.length !== 3) return false;
  const kind = classifyJobEntry(parts[2] ?? '').kind;
  return kind === 'stdin' || kind === 'stdout' || kind === 'stderr';
}

/** SEC-5 for every entry the roles wrote: 0700 directories, 0600 files. */
export function modeFailures(entries: readonly Walked[], label: string): Failure[] {
  const failures: Failure[] = [];
  const dirs = entries.filter((e) => e.kind === 'dir' && e.mode !== 0o700);
  const root = dirs.find((e) => e.rel === '');
  if (root !== undefined) failures.push({ clauses: ['INIT-1', 'SEC-1', 'SEC-5'], message: `${label}: the queue root has mode ${octal(root.mode)}; init creates it 0700`, evidence: [] });
  const others = dirs.filter((e) => e.rel !== '');
  if (others.length > 0) failures.push({ clauses: ['PUB-8', 'SEC-5'], message: `${label}: directories are created with mode 0700 (then chmod 0700): ${others.map((e) => `${e.rel}/ ${octal(e.mode)}`).join(', ')}`, evidence: [] });
  const files = entries.filter((e) => e.kind === 'file' && e.mode !== 0o600 && !path.basename(e.rel).startsWith('.'));
  if (files.length > 0) {
    const data = files.every((e) => isDataFile(e.rel));
    failures.push({ clauses: ['SEC-5', data ? 'PUB-7' : 'PUB-1'], message: `${label}: files are created with mode 0600: ${files.map((e) => `${e.rel} ${octal(e.mode)}`).join(', ')}`, evidence: [] });
  }
  return failures;
}

/** PUB-6 / PUB-3: no temporary name survives a clean exit. */
export function tempFailures(entries: readonly Walked[], label: string): Failure[] {
  const temps = entries.filter((e) => e.rel !== '' && !e.rel.startsWith('tmp/') && path.basename(e.rel).startsWith('.'));
  const failures: Failure[] = [];
  const linked = temps.filter((e) => e.kind === 'file' && e.nlink > 1);
  const single = temps.filter((e) => !linked.includes(e));
  if (linked.length > 0) failures.push({ clauses: ['PUB-6', 'LAYOUT-6'], message: `${label}: temporary names are unlinked once their record is linked, yet these are still second names of published records: ${linked.map((e) => e.rel).join(' ')}`, evidence: [] });
  if (single.length > 0) failures.push({ clauses: ['PUB-3', 'PUB-1'], message: `${label}: a temporary file whose link failed (or was never made) is removed by its writer, yet these remain after every role exited: ${single.map((e) => e.rel).join(' ')}`, evidence: [] });
  return failures;
}

/** Both checks over the whole queue, with the listing of what was wrong as evidence. */
export async function hygieneFailures(root: string, label: string, skip: (rel: string) => boolean = () => false): Promise<Failure[]> {
  const entries = (await walkQueue(root)).filter((e) => !skip(e.rel));
  return [...modeFailures(entries, label), ...tempFailures(entries, label)];
}
