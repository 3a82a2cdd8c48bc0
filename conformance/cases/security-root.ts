/**
 * hostile/queue-root (SEC-1): a queue root that is writable by its group or
 * by others, that is a symlink to a real queue, or (as root) that another
 * uid owns is refused by every role: consume (and, for the first,
 * produce, recover and cancel) exits non-zero, the queued job never runs,
 * and nothing in the queue changes (content, modes, mtimes).
 */
import { chmod, chown, symlink } from 'node:fs/promises';
import path from 'node:path';
import { type CaseContext, type ConformanceCase, readStarts } from '../runner/case.ts';
import { describeExit, type ProcessResult } from '../runner/process.ts';
import { fingerprint, reopen, stageJob, writeRequest } from '../runner/stage.ts';
import { logged } from './jobs.ts';

interface RootScenario {
  name: string;
  root?: boolean;
  /** Makes the queue at `q` hostile; returns the path the roles are given. */
  spoil: (q: string, base: string) => Promise<string>;
  restore: (q: string) => Promise<void>;
}

const SCENARIOS: RootScenario[] = [
  {
    name: 'writable by its group',
    spoil: async (q) => {
      await chmod(q, 0o770);
      return q;
    },
    restore: (q) => chmod(q, 0o700),
  },
  {
    name: 'writable by others',
    spoil: async (q) => {
      await chmod(q, 0o703);
      return q;
    },
    restore: (q) => chmod(q, 0o700),
  },
  {
    name: 'a symlink to a queue',
    spoil: async (q, base) => {
      const link = path.join(base, 'link');
      await symlink(q, link);
      return link;
    },
    restore: async () => undefined,
  },
  {
    name: 'owned by another uid',
    root: true,
    spoil: async (q) => {
      await chown(q, 65534, 65534);
      return q;
    },
    restore: (q) => chown(q, process.geteuid?.() ?? 0, process.getegid?.() ?? 0),
  },
];

async function queueRoot(ctx: CaseContext): Promise<void> {
  const asRoot = process.geteuid?.() === 0;
  const usable = SCENARIOS.filter((s) => asRoot || s.root !== true);
  if (usable.length < SCENARIOS.length) ctx.note('the root owned by another uid needs root and was left out');
  for (const [index, scenario] of usable.entries()) {
    const q = await ctx.newQueue(`root-${index}`);
    const base = path.dirname(q);
    const work = await ctx.subdir(`root-${index}/work`);
    const log = path.join(work, 'starts.log');
    const staged = await stageJob(await reopen(q), { argv: logged(log, 'queued'), cwd: work });
    const request = await writeRequest(path.join(ctx.dir, 'requests'), `root-${index}`, { argv: logged(log, 'produced'), cwd: work });
    const given = await scenario.spoil(q, base);
    const before = await fingerprint(q);
    const runs: ProcessResult[] = [];
    let after = before;
    try {
      // Every role opens the root the same way: the first scenario shows whether each checks it; the others go to the consumer, which would run the queued job (each role start costs a process).
      if (index === 0) runs.push(await ctx.role('produce', { queue: given, request }));
      runs.push(await ctx.role('consume', { queue: given }));
      if (index === 0 && ctx.impl.roles.recover !== undefined) runs.push(await ctx.role('recover', { queue: given }));
      if (index === 0 && ctx.impl.roles.cancel !== undefined) runs.push(await ctx.role('cancel', { queue: given, id: staged.id }));
      after = await fingerprint(q);
    } finally {
      await scenario.restore(q);
    }
    const starts = await readStarts(log);
    const accepted = runs.filter((r) => r.code === 0);
    const evidence = runs.map(describeExit);
    ctx.check(accepted.length === 0, ['SEC-1', 'I7'], `a queue root ${scenario.name} must be refused by every role; these exited 0: ${accepted.map((r) => r.argv.slice(-3).join(' ')).join('; ')}`, evidence);
    ctx.check(starts.length === 0, ['SEC-1', 'I7'], `a queue root ${scenario.name} is refused, so no job runs; started: ${starts.join(' ')}`, evidence);
    if (after !== before) {
      const was = before.split('\n');
      ctx.fail(['SEC-1', 'I7'], `a queue root ${scenario.name} is refused, so nothing in it changes`, [...evidence, ...after.split('\n').filter((line) => !was.includes(line)).slice(0, 8).map((line) => `now: ${line}`)]);
    }
  }
}

export const rootCases: ConformanceCase[] = [{ name: 'hostile/queue-root', clauses: ['SEC-1', 'I7'], level: 'consumer', strength: 'MUST', run: queueRoot }];
