/**
 * Owner and execution liveness for an audit (spec/identity.md and spec/recovery-and-gc.md), judged once
 * per identity: however many claims one worker holds, its /proc/<pid>/stat is
 * read once, and this host's own identity is computed once.
 *
 * The rules are the core's (src/model/identity.ts): ID-6 for owners on this
 * host, ID-7 (the lease) for foreign ones, ID-8 for recorded process groups.
 * A validator only looks: nothing is signalled.
 */
import * as nodeFs from 'node:fs/promises';
import { foreignLeaseGraceMs, isLocal, judgeOwner, type IdentityOptions, type LeaseFacts, type OwnerJudgement } from '../model/identity.ts';
import { groupState } from '../model/groups.ts';
import type { Group, Identity } from '../records/codec.ts';

export type ExecutionVerdict = 'running' | 'stopped' | 'unknown';

type ReadFile = (path: string, encoding: BufferEncoding) => Promise<string>;
type ReadLink = (path: string) => Promise<string>;

export class LivenessJudge {
  /** Owner judgements use a seam that reads each /proc file once. */
  private readonly cached: IdentityOptions;
  /** Group judgements read afresh: ID-8 needs two real scans to call a zombie-only group stopped. */
  private readonly fresh: IdentityOptions;
  private readonly owners = new Map<string, Promise<OwnerJudgement>>();
  private readonly groups = new Map<string, Promise<ExecutionVerdict>>();

  constructor(options: IdentityOptions = {}) {
    this.fresh = options;
    const base = options.fs ?? nodeFs;
    const files = new Map<string, Promise<string>>();
    const links = new Map<string, Promise<string>>();
    const readFile: ReadFile = (path, encoding) => {
      const key = `${encoding}\0${path}`;
      let read = files.get(key);
      if (read === undefined) {
        read = (base.readFile as unknown as ReadFile)(path, encoding);
        files.set(key, read);
      }
      return read;
    };
    const readlink: ReadLink = (path) => {
      let read = links.get(path);
      if (read === undefined) {
        read = (base.readlink as unknown as ReadLink)(path);
        links.set(path, read);
      }
      return read;
    };
    this.cached = { ...options, fs: { readFile: readFile as typeof nodeFs.readFile, readlink: readlink as typeof nodeFs.readlink, readdir: base.readdir } };
  }

  /** ID-6 / ID-7. Foreign owners are judged by the lease facts, which are part of the cache key. */
  owner(owner: Identity, lease: LeaseFacts): Promise<OwnerJudgement> {
    const key = `${owner.boot_id}\0${owner.pid_ns}\0${owner.pid}\0${owner.start}\0${lease.lastRenewalMs}\0${lease.leaseMs}`;
    let judged = this.owners.get(key);
    if (judged === undefined) {
      judged = judgeOwner(owner, lease, this.cached);
      this.owners.set(key, judged);
    }
    return judged;
  }

  /**
   * ID-8 for a recorded group whose owner is dead: a group on this host is
   * judged from the process table; a foreign one is proven stopped only once
   * its owner's lease expired by LEASE-3 (LEASE-2 made the owner stop it, or
   * its guardian did within GUARDIAN_LIMIT of the owner's death, WORKER-2).
   */
  execution(group: Group, lease: LeaseFacts): Promise<ExecutionVerdict> {
    const key = `${group.boot_id}\0${group.pid_ns}\0${group.pgid}\0${group.start}\0${lease.lastRenewalMs}\0${lease.leaseMs}`;
    let judged = this.groups.get(key);
    if (judged === undefined) {
      judged = this.judgeExecution(group, lease);
      this.groups.set(key, judged);
    }
    return judged;
  }

  private async judgeExecution(group: Group, lease: LeaseFacts): Promise<ExecutionVerdict> {
    if (!(await isLocal(group, this.cached))) {
      return lease.nowMs > lease.lastRenewalMs + foreignLeaseGraceMs(lease.leaseMs) ? 'stopped' : 'unknown';
    }
    if (group.pgid < 2) return 'unknown';
    try {
      return await groupState(group, this.fresh);
    } catch {
      return 'unknown';
    }
  }
}
