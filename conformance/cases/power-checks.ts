/**
 * What a power-loss state owes to what the implementation had already told
 * the world before the power went (the "stdout" of ALICE's traces, the
 * oracle of CrashMonkey's checker): read from the traced run outside the
 * queue, and checked on each state.
 *
 * - A producer that exited 0 reported its job accepted: the job directory
 *   is durable (ENQ-4).
 * - A command that started had its execution recorded durably first:
 *   exec.<g>.json of its generation survives, or recovery runs it again.
 *   The cause named first is PUB-5 when the record's directory was never
 *   fsynced after its link (the publication itself is incomplete), EXEC-3
 *   when it was, but only after the release (the order is wrong).
 * - A published job brought its staged entries along: when jobs/<id>
 *   survives, so do the spec record and stdin it held when it was renamed
 *   there (DUR-4: ENQ steps 3 and 4 fsync them and tmp/<id>/ first).
 * - A role that exited 0 reported success: every record it had published by
 *   then survives, whole (PUB-5, PUB-4; PUB-2 when only its bytes were lost;
 *   DUR-4 when the record's directory itself is gone: a dedupe/<h>/ made for
 *   the hold whose entry in dedupe/ was never fsynced).
 */
import path from 'node:path';
import type { TraceRecord } from '../crash/trace.ts';
import { buildState, isDurable, listState, type Change, type Listed, type Model, type Snapshot } from '../crash/power-model.ts';
import type { Failure } from '../runner/report.ts';

export interface Observations {
  /** Each role's exit status as the scenario script wrote it (tag: A, B, C, consume, cancel), at call k. */
  exits: { tag: string; k: number; status: number }[];
  /** Each command start, at the call k that wrote its line. */
  starts: { k: number; id: string }[];
}

/** Reads the scenario's observations from the trace: writes to work/rc.<tag> and work/starts.log. */
export function observe(records: readonly TraceRecord[], work: string): Observations {
  const exits: Observations['exits'] = [];
  const starts: Observations['starts'] = [];
  for (const record of records) {
    if (record.family !== 'write' || record.ret <= 0 || record.data === undefined || path.dirname(record.path) !== work) continue;
    const name = path.basename(record.path);
    const text = record.data.toString('utf8');
    if (name === 'starts.log') {
      for (const line of text.split('\n')) if (line.startsWith('start ')) starts.push({ k: record.k, id: line.slice('start '.length) });
    } else if (name.startsWith('rc.')) {
      const status = Number(text.trim());
      if (Number.isInteger(status)) exits.push({ tag: name.slice(3), k: record.k, status });
    }
  }
  return { exits, starts };
}

/** Starts per job id up to call c. */
export function startsBy(observations: Observations, c: number): Map<string, number> {
  const counts = new Map<string, number>();
  for (const start of observations.starts) if (start.k <= c) counts.set(start.id, (counts.get(start.id) ?? 0) + 1);
  return counts;
}

/** Whether a name in the queue is a record whose survival a success report promises. */
function promised(rel: string): 'link' | 'rename' | undefined {
  const parts = rel.split('/');
  const name = parts.at(-1) ?? '';
  if (name.startsWith('.')) return undefined;
  if (rel === 'fsjob.json') return 'link';
  if (parts[0] === 'jobs' && parts.length === 3) {
    if (/^state\.[1-9][0-9]*\.json$/.test(name)) return 'rename';
    if (/^(claim|exec|end)\.[1-9][0-9]*\.json$|^receipt\.json$|^cancel(-force)?\.json$|^release\.json$/.test(name)) return 'link';
    return undefined; // spec.json and stdin come with the job directory (I1 checks them); outputs with the receipt (I4)
  }
  if ((parts[0] === 'dedupe' || parts[0] === 'lanes') && parts.length === 3 && name.endsWith('.json')) return 'link';
  if (parts[0] === 'workers' && parts.length === 2 && name.endsWith('.json')) return 'rename';
  return undefined;
}

export function byPath(state: Snapshot): Map<string, Listed> {
  return new Map(listState(state).map((item) => [item.rel, item]));
}

/** What the queue really held after call k (nothing lost), by path; memoised per k. */
export function realStates(model: Model): (k: number) => Map<string, Listed> {
  const cache = new Map<number, Map<string, Listed>>();
  return (k) => {
    let known = cache.get(k);
    if (known === undefined) {
      known = byPath(buildState(model, k, () => true));
      cache.set(k, known);
    }
    return known;
  };
}

export interface ObligationInput {
  /** The replayed trace. */
  model: Model;
  /** realStates(model). */
  realAt: (k: number) => Map<string, Listed>;
  /** The state, and the crash point it was built for. */
  state: Snapshot;
  c: number;
  observations: Observations;
  /** The id each produce printed, by tag. */
  ids: ReadonlyMap<string, string>;
  /** Whether `tag` names a produce (its exit 0 reports a job accepted). */
  isProduce: (tag: string) => boolean;
}

/** The promises broken in one state, most specific clause first, in a fixed order. */
export function brokenPromises(input: ObligationInput): Failure[] {
  const failures: Failure[] = [];
  const { state, c, observations } = input;
  const have = byPath(state);
  const real = input.realAt(c);

  for (const exit of observations.exits) {
    if (exit.k > c || exit.status !== 0 || !input.isProduce(exit.tag)) continue;
    const id = input.ids.get(exit.tag);
    if (id !== undefined && !have.has(`jobs/${id}`)) {
      failures.push({ clauses: ['ENQ-4', 'I1'], message: `the producer of request ${exit.tag} exited 0 at call ${exit.k}, reporting job ${id} accepted, but after the power loss jobs/${id} does not exist: jobs/ was not fsynced after the publishing rename`, evidence: [] });
    }
  }

  failures.push(...stagedEntriesLost(input, have, real));

  const starts = startsBy(observations, c);
  for (const [id, n] of starts) {
    const execs = [...have.keys()].filter((rel) => rel.startsWith(`jobs/${id}/exec.`) && rel.endsWith('.json')).length;
    if (execs < n) {
      const first = observations.starts.find((s) => s.id === id && s.k <= c);
      const said = `job ${id}'s command started (call ${first?.k ?? '?'}; ${n} start${n === 1 ? '' : 's'} by call ${c}), but after the power loss the job has ${execs} exec record${execs === 1 ? '' : 's'}`;
      const late = execLinks(input.model, id, c).find((link) => link.durableFrom !== undefined);
      if (late !== undefined) {
        failures.push({ clauses: ['EXEC-3', 'PUB-5', 'I2'], message: `${said}: ${rel(input.model, late.record.path2)} (linked at call ${late.record.k}) was made durable only at call ${late.durableFrom}, after the release: the owner must fsync its directory before it releases the command, or a recoverer may run it again`, evidence: [] });
      } else {
        failures.push({ clauses: ['PUB-5', 'EXEC-3', 'I2'], message: `${said}: the directory of its exec record was never fsynced after the link, so the execution was released before its record was durable and a recoverer may run it again`, evidence: [] });
      }
    }
  }

  const seen = new Set<string>();
  for (const exit of observations.exits) {
    if (exit.k > c || exit.status !== 0) continue;
    const then = input.realAt(exit.k);
    for (const [rel, item] of then) {
      const how = promised(rel);
      if (how === undefined || seen.has(rel)) continue;
      const now = real.get(rel);
      if (now === undefined || !now.data.equals(item.data)) continue; // changed or removed later, by the run itself
      seen.add(rel);
      const left = have.get(rel);
      const job = /^jobs\/([^/]+)\//.exec(rel)?.[1];
      if (job !== undefined && !have.has(`jobs/${job}`)) continue; // the whole job is gone: ENQ-4 above, or I1
      const dir = path.posix.dirname(rel);
      if (left === undefined && dir !== '.' && !have.has(dir)) {
        // The record's own directory is gone, so the fsync after the link had nothing to keep it in:
        // the directory was made for it (dedupe/<h>/, lanes/<h>/) and its entry in the parent was never durable.
        failures.push({ clauses: ['DUR-4', 'PUB-8'], message: `${rel} was published before the ${exit.tag} role exited 0 at call ${exit.k}, but after the power loss its directory ${dir}/ does not exist: ${path.posix.dirname(dir)}/ was not fsynced after ${dir}/ was made, and a record in a directory just created is durable only with that directory's entry in its parent`, evidence: [] });
      } else if (left === undefined) {
        failures.push({ clauses: how === 'link' ? ['PUB-5'] : ['PUB-4', 'PUB-5'], message: `${rel} was published before the ${exit.tag} role exited 0 at call ${exit.k}, but after the power loss it does not exist: its directory was not fsynced after the ${how}`, evidence: [] });
      } else if (!left.data.equals(item.data)) {
        failures.push({ clauses: ['PUB-2', 'I1'], message: `${rel} was published before the ${exit.tag} role exited 0 at call ${exit.k}, but after the power loss it holds ${left.data.length} bytes, not the ${item.data.length} published: the file was not fsynced before the ${how}`, evidence: [] });
      }
    }
  }
  return failures;
}

function rel(model: Model, file: string | undefined): string {
  return file === undefined ? '?' : path.relative(model.root, file);
}

/** The links of job id's exec records made by call c and not yet durable there. */
function execLinks(model: Model, id: string, c: number): Change[] {
  return model.changes.filter((change) => change.type === 'add' && change.origin === 'link' && change.record.k <= c && !isDurable(change, c) && /^exec\.[1-9][0-9]*\.json$/.test(change.name ?? '') && rel(model, change.record.path2).startsWith(`jobs/${id}/`));
}

/**
 * DUR-4's row for ENQ-3: a job directory that survives in jobs/ holds the
 * spec record and stdin it held in the queue at the crash point (they were
 * staged, and fsynced with tmp/<id>/, before the publishing rename). Only
 * files the trace shows staged: a job planted by the suite is durable.
 */
function stagedEntriesLost(input: ObligationInput, have: Map<string, Listed>, real: Map<string, Listed>): Failure[] {
  const staged = new Set<string>();
  for (const change of input.model.changes) {
    if (change.record.k > input.c || change.type !== 'add' || change.origin !== 'rename') continue;
    const to = rel(input.model, change.record.path2);
    if (/^jobs\/[^/]+$/.test(to) && rel(input.model, change.record.path).startsWith('tmp/')) staged.add(to);
  }
  const failures: Failure[] = [];
  for (const job of staged) {
    if (!have.has(job)) continue; // not published after the power loss: ENQ-4 above, or the job may be missing (DUR-5)
    for (const name of ['spec.json', 'stdin']) {
      const want = real.get(`${job}/${name}`);
      if (want === undefined) continue;
      const left = have.get(`${job}/${name}`);
      if (left !== undefined && left.data.equals(want.data)) continue;
      const what = left === undefined ? 'does not exist' : `holds ${left.data.length} of its ${want.data.length} bytes`;
      failures.push({ clauses: ['DUR-4', 'ENQ-3', 'I1'], message: `${job} was published by its rename out of tmp/, but after the power loss ${job}/${name} ${what}: ${left === undefined ? 'the staging directory was not fsynced' : 'the staged file was not fsynced'} before the publishing rename (ENQ steps 3 and 4)`, evidence: [] });
    }
  }
  return failures;
}
