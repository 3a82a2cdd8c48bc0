/**
 * The persistence model of the power-loss mode (spec/writing.md and
 * conformance/README.md "Power loss"), applied to a trace of the calls an
 * implementation made in a queue.
 *
 * The trace is replayed on a model of the queue (inodes, directory
 * entries), turning each call into changes: an entry added, removed or
 * moved within one directory; bytes written; a size set; a mode set. Each
 * change is then durable, or not, at a crash point c (a power loss right
 * after call c):
 *
 * - bytes and sizes of a file: after an fsync (or fdatasync) of that file
 *   returned;
 * - an entry added, removed or renamed in a directory: after an fsync of
 *   that directory returned; a rename across directories is two changes,
 *   each durable with its own directory; a rename within one directory is
 *   one change;
 * - a mode: with the file's entry, after an fsync of the file or of a
 *   directory holding an entry for it;
 * - sync() and syncfs() make everything durable.
 *
 * A state a power loss may leave is the initial queue plus every durable
 * change and any subset of the others (buildState's `keep`), replayed in
 * order, except that a directory moved across directories never shows
 * under both names: when its new entry is kept, its removal from the old
 * parent is kept too (NOTES: a directory has one parent on every
 * filesystem that mounts; the spec guards the real case in TEMP-1).
 */
import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import type { TraceRecord } from './trace.ts';

export type InodeKind = 'file' | 'dir' | 'symlink' | 'other';

interface Inode {
  kind: InodeKind;
  mode: number;
  data: Buffer;
  target: string;
}

export type ChangeType = 'add' | 'remove' | 'move' | 'write' | 'truncate' | 'chmod' | 'create';

export interface Change {
  /** Position in the replay. */
  seq: number;
  type: ChangeType;
  /** The trace record it came from. */
  record: TraceRecord;
  inode: number;
  /** add, remove, move: the directory and the name (move: the new name). */
  dir?: number;
  name?: string;
  /** move: the old name. */
  from?: string;
  /** add: what made the entry (a link or rename publishes a name; an open creates one). */
  origin?: 'create' | 'link' | 'rename';
  /** add of a directory moved across directories: the seq of its removal from the old parent. */
  pair?: number;
  off?: number;
  data?: Buffer;
  size?: number;
  mode?: number;
  kind?: InodeKind;
  target?: string;
  /** The crash points from which it is durable: c >= durableFrom (the fsync's `done`). */
  durableFrom?: number;
}

export interface Snapshot {
  inodes: Map<number, Inode>;
  entries: Map<number, Map<string, number>>;
  root: number;
}

export interface Model {
  /** The queue's real path. */
  root: string;
  initial: Snapshot;
  changes: Change[];
  /** The highest k of the trace. */
  last: number;
}

export class ModelError extends Error {}

function kindOfMode(mode: number): InodeKind {
  const type = mode & 0o170000;
  if (type === 0o100000) return 'file';
  if (type === 0o040000) return 'dir';
  if (type === 0o120000) return 'symlink';
  return 'other';
}

/** Reads a queue as it is before the traced run: all of it durable. Returns the snapshot and each inode's `dev:ino`. */
export function readInitial(root: string): { snapshot: Snapshot; inos: Map<string, number> } {
  const inodes = new Map<number, Inode>();
  const entries = new Map<number, Map<string, number>>();
  const inos = new Map<string, number>();
  const visit = (file: string): number => {
    const st = lstatSync(file);
    const key = `${st.dev}:${st.ino}`;
    const known = inos.get(key);
    if (known !== undefined) return known;
    const id = inodes.size + 1;
    const kind = kindOfMode(st.mode);
    inos.set(key, id);
    inodes.set(id, { kind, mode: st.mode & 0o7777, data: kind === 'file' ? readFileSync(file) : Buffer.alloc(0), target: kind === 'symlink' ? readlinkSync(file) : '' });
    if (kind === 'dir') {
      const map = new Map<string, number>();
      entries.set(id, map);
      for (const name of readdirSync(file).sort()) map.set(name, visit(path.join(file, name)));
    }
    return id;
  };
  const root_ = visit(root);
  return { snapshot: { inodes, entries, root: root_ }, inos };
}

const O_TRUNC = 0o1000;
const O_TMPFILE = 0o20000000; // __O_TMPFILE: the bit O_TMPFILE adds to O_DIRECTORY

/** Replays the trace records (sorted by k) that touch the queue at `root` into changes with their durability. */
export function buildModel(root: string, initial: Snapshot, inos: Map<string, number>, records: readonly TraceRecord[]): Model {
  const changes: Change[] = [];
  const live: Snapshot = cloneSnapshot(initial);
  const byIno = new Map(inos);
  let nextInode = Math.max(0, ...initial.inodes.keys()) + 1;
  const pendingData = new Map<number, Change[]>();
  const pendingEntries = new Map<number, Change[]>();
  const pendingModes = new Map<number, Change[]>();
  const push = <T>(map: Map<number, T[]>, key: number, value: T): void => {
    const list = map.get(key);
    if (list === undefined) map.set(key, [value]);
    else list.push(value);
  };

  const inside = (file: string): string | undefined => {
    const rel = path.relative(root, file);
    return rel.startsWith('..') || path.isAbsolute(rel) ? undefined : rel;
  };
  const lookup = (rel: string): number | undefined => {
    let at: number | undefined = live.root;
    for (const part of rel === '' ? [] : rel.split('/')) {
      at = at === undefined ? undefined : live.entries.get(at)?.get(part);
    }
    return at;
  };
  /** The directory and name of a path inside the queue. */
  const split = (record: TraceRecord, file: string): { dir: number; name: string } => {
    const rel = inside(file);
    if (rel === undefined || rel === '') throw new ModelError(`k=${record.k} ${record.op}: ${file} is not an entry inside the queue`);
    const dir = lookup(path.dirname(rel) === '.' ? '' : path.dirname(rel));
    if (dir === undefined || live.inodes.get(dir)?.kind !== 'dir') throw new ModelError(`k=${record.k} ${record.op}: the directory of ${rel} is not in the model of the queue`);
    return { dir, name: path.basename(rel) };
  };
  const inodeOf = (record: TraceRecord, file?: string): number => {
    const known = record.ino === undefined ? undefined : byIno.get(record.ino);
    if (known !== undefined) return known;
    const rel = file === undefined ? undefined : inside(file);
    const found = rel === undefined ? undefined : lookup(rel);
    if (found === undefined) throw new ModelError(`k=${record.k} ${record.op}: ${file ?? record.path} is not in the model of the queue`);
    if (record.ino !== undefined) byIno.set(record.ino, found);
    return found;
  };
  const add = (change: Omit<Change, 'seq'>): Change => {
    const full = { ...change, seq: changes.length } as Change;
    changes.push(full);
    applyChange(live, full);
    return full;
  };
  const newInode = (record: TraceRecord, kind: InodeKind, target = ''): number => {
    const id = nextInode++;
    if (record.ino !== undefined) byIno.set(record.ino, id);
    add({ type: 'create', record, inode: id, kind, mode: (record.mode ?? 0o600) & 0o7777, target });
    return id;
  };
  const entry = (record: TraceRecord, type: 'add' | 'remove', at: { dir: number; name: string }, inode: number, origin?: Change['origin']): Change => {
    const change = add({ type, record, inode, dir: at.dir, name: at.name, ...(origin === undefined ? {} : { origin }) });
    push(pendingEntries, at.dir, change);
    return change;
  };
  const create = (record: TraceRecord, kind: InodeKind, file: string, target = ''): void => {
    const at = split(record, file);
    entry(record, 'add', at, newInode(record, kind, target), 'create');
  };
  const durable = (list: Change[] | undefined, done: number): void => {
    for (const change of list ?? []) change.durableFrom ??= done;
  };

  for (const record of records) {
    if (record.ret < 0) continue; // a failed call changed nothing
    const rel = inside(record.path);
    const rel2 = record.path2 === undefined ? undefined : inside(record.path2);
    if (rel === undefined && rel2 === undefined) continue;
    switch (record.family) {
      case 'open':
      case 'mktemp': {
        if (rel === undefined) break;
        if (record.op === 'mkdtemp') {
          create(record, 'dir', record.path);
          break;
        }
        if ((record.flags & O_TMPFILE) !== 0) {
          newInode(record, 'file'); // a file without a name until linkat gives it one
          break;
        }
        const existing = lookup(rel);
        if (existing === undefined) create(record, 'file', record.path);
        else {
          if (record.ino !== undefined) byIno.set(record.ino, existing);
          if ((record.flags & O_TRUNC) !== 0) push(pendingData, existing, add({ type: 'truncate', record, inode: existing, size: 0 }));
        }
        break;
      }
      case 'mkdir':
        if (rel !== undefined) create(record, 'dir', record.path);
        break;
      case 'symlink':
        if (rel !== undefined) create(record, 'symlink', record.path, record.path2 ?? '');
        break;
      case 'mknod':
        if (rel !== undefined) create(record, 'other', record.path);
        break;
      case 'link': {
        if (rel2 === undefined || record.path2 === undefined) break;
        entry(record, 'add', split(record, record.path2), inodeOf(record, record.path), 'link');
        break;
      }
      case 'rename': {
        if ((record.flags & 2) !== 0) throw new ModelError(`k=${record.k} ${record.op}: RENAME_EXCHANGE is not in the model`);
        if (rel === undefined || rel2 === undefined || record.path2 === undefined) throw new ModelError(`k=${record.k} ${record.op}: a rename across the queue's boundary (${record.path} -> ${record.path2})`);
        const from = split(record, record.path);
        const to = split(record, record.path2);
        const inode = live.entries.get(from.dir)?.get(from.name);
        if (inode === undefined) throw new ModelError(`k=${record.k} ${record.op}: ${rel} is not in the model of the queue`);
        if (record.ino !== undefined) byIno.set(record.ino, inode);
        if (from.dir === to.dir) {
          if (from.name !== to.name) push(pendingEntries, to.dir, add({ type: 'move', record, inode, dir: to.dir, name: to.name, from: from.name, origin: 'rename' }));
          break;
        }
        const removal = entry(record, 'remove', from, inode);
        const addition = entry(record, 'add', to, inode, 'rename');
        if (live.inodes.get(inode)?.kind === 'dir') addition.pair = removal.seq;
        break;
      }
      case 'unlink':
      case 'rmdir':
      case 'remove': {
        if (rel === undefined) break;
        const at = split(record, record.path);
        const inode = live.entries.get(at.dir)?.get(at.name);
        if (inode !== undefined) entry(record, 'remove', at, inode);
        break;
      }
      case 'chmod':
        if (rel !== undefined && record.mode !== undefined) push(pendingModes, inodeOf(record, record.path), add({ type: 'chmod', record, inode: inodeOf(record, record.path), mode: record.mode & 0o7777 }));
        break;
      case 'truncate':
      case 'fallocate': {
        if (rel === undefined || record.size === undefined) break;
        const inode = inodeOf(record, record.path);
        const current = live.inodes.get(inode)?.data.length ?? 0;
        if (record.family === 'truncate' || record.size > current) push(pendingData, inode, add({ type: 'truncate', record, inode, size: record.size }));
        break;
      }
      case 'write': {
        if (rel === undefined || record.ret <= 0) break;
        const inode = inodeOf(record, record.path);
        const data = record.data ?? Buffer.alloc(record.ret);
        const off = record.off ?? live.inodes.get(inode)?.data.length ?? 0;
        push(pendingData, inode, add({ type: 'write', record, inode, off, data }));
        break;
      }
      case 'fsync': {
        if (record.op === 'sync_file_range') break; // starts writeback, promises nothing
        if (record.op === 'sync' || record.op === 'syncfs') {
          for (const map of [pendingData, pendingEntries, pendingModes]) {
            for (const list of map.values()) durable(list, record.done);
            map.clear();
          }
          break;
        }
        if (rel === undefined) break;
        const inode = inodeOf(record, record.path);
        durable(pendingData.get(inode), record.done);
        pendingData.delete(inode);
        durable(pendingModes.get(inode), record.done);
        pendingModes.delete(inode);
        if (live.inodes.get(inode)?.kind === 'dir' && record.op !== 'fdatasync') {
          durable(pendingEntries.get(inode), record.done);
          pendingEntries.delete(inode);
          for (const child of live.entries.get(inode)?.values() ?? []) {
            durable(pendingModes.get(child), record.done);
            pendingModes.delete(child);
          }
        }
        break;
      }
      default:
        break; // utime and the like: the model keeps no times
    }
  }
  return { root, initial, changes, last: records.reduce((max, r) => Math.max(max, r.k), 0) };
}

function cloneSnapshot(snapshot: Snapshot): Snapshot {
  const inodes = new Map<number, Inode>();
  for (const [id, inode] of snapshot.inodes) inodes.set(id, { ...inode, data: Buffer.from(inode.data) });
  const entries = new Map<number, Map<string, number>>();
  for (const [id, map] of snapshot.entries) entries.set(id, new Map(map));
  return { inodes, entries, root: snapshot.root };
}

function applyChange(state: Snapshot, change: Change): void {
  const inode = state.inodes.get(change.inode);
  switch (change.type) {
    case 'create':
      state.inodes.set(change.inode, { kind: change.kind ?? 'file', mode: change.mode ?? 0o600, data: Buffer.alloc(0), target: change.target ?? '' });
      if (change.kind === 'dir') state.entries.set(change.inode, new Map());
      break;
    case 'add':
      state.entries.get(change.dir as number)?.set(change.name as string, change.inode);
      break;
    case 'remove': {
      const dir = state.entries.get(change.dir as number);
      if (dir?.get(change.name as string) === change.inode) dir.delete(change.name as string);
      break;
    }
    case 'move': {
      const dir = state.entries.get(change.dir as number);
      if (dir === undefined) break;
      if (dir.get(change.from as string) === change.inode) dir.delete(change.from as string);
      dir.set(change.name as string, change.inode);
      break;
    }
    case 'write': {
      if (inode === undefined || change.data === undefined) break;
      const end = (change.off ?? 0) + change.data.length;
      if (inode.data.length < end) inode.data = Buffer.concat([inode.data, Buffer.alloc(end - inode.data.length)]);
      change.data.copy(inode.data, change.off ?? 0);
      break;
    }
    case 'truncate':
      if (inode === undefined) break;
      inode.data = inode.data.length >= (change.size ?? 0) ? inode.data.subarray(0, change.size ?? 0) : Buffer.concat([inode.data, Buffer.alloc((change.size ?? 0) - inode.data.length)]);
      break;
    case 'chmod':
      if (inode !== undefined) inode.mode = change.mode ?? inode.mode;
      break;
  }
}

export function isDurable(change: Change, c: number): boolean {
  return change.type === 'create' || (change.durableFrom !== undefined && change.durableFrom <= c);
}

/** The changes made by calls 1..c that a power loss right after call c may lose. */
export function pendingAt(model: Model, c: number): Change[] {
  return model.changes.filter((change) => change.record.k <= c && !isDurable(change, c));
}

/**
 * The state after a power loss right after call c that kept every durable
 * change and the pending ones `keep` selects.
 */
export function buildState(model: Model, c: number, keep: (change: Change) => boolean): Snapshot {
  const kept = new Set<number>();
  for (const change of model.changes) {
    if (change.record.k > c) continue;
    if (isDurable(change, c) || keep(change)) kept.add(change.seq);
  }
  // A directory moved across directories is never under both names.
  for (const change of model.changes) if (change.pair !== undefined && kept.has(change.seq)) kept.add(change.pair);
  const state = cloneSnapshot(model.initial);
  for (const change of model.changes) if (kept.has(change.seq)) applyChange(state, change);
  return state;
}

export interface Listed {
  rel: string;
  kind: InodeKind;
  mode: number;
  inode: number;
  data: Buffer;
  target: string;
}

/** Every entry reachable from the root, depth first in name order (relative paths; the root is ''). */
export function listState(state: Snapshot): Listed[] {
  const out: Listed[] = [];
  const walk = (id: number, rel: string, seen: Set<number>): void => {
    const inode = state.inodes.get(id);
    if (inode === undefined) return;
    out.push({ rel, kind: inode.kind, mode: inode.mode, inode: id, data: inode.data, target: inode.target });
    if (inode.kind !== 'dir' || seen.has(id)) return;
    const next = new Set(seen).add(id);
    for (const [name, child] of [...(state.entries.get(id) ?? new Map<string, number>())].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      walk(child, rel === '' ? name : `${rel}/${name}`, next);
    }
  };
  walk(state.root, '', new Set());
  return out;
}

/** A digest of what a state shows: equal states give equal digests, so each is checked once. */
export function stateDigest(state: Snapshot): string {
  const hash = createHash('sha256');
  const first = new Map<number, string>();
  for (const item of listState(state)) {
    const shared = first.get(item.inode);
    if (shared === undefined) first.set(item.inode, item.rel);
    hash.update(`${item.rel}\0${item.kind}\0${item.mode}\0${shared ?? ''}\0${item.target}\0`);
    hash.update(createHash('sha256').update(item.data).digest());
  }
  return hash.digest('hex');
}
