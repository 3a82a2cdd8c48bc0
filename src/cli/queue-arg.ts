/**
 * Opening the queue that the `--queue DIR` option of the operator commands
 * names (queue-option.ts declares it): --queue, else $FSJOB_QUEUE, else the
 * per-user default (defaultQueuePath in src/model/queue.ts); and the job ids
 * they take. The commands' <name>-run.ts import it: it loads when a command
 * runs, never for its help.
 */
import { FsjobError } from '../base/errors.ts';
import { listDir } from '../fs/safefs.ts';
import { defaultQueuePath, openQueue, type Queue } from '../model/queue.ts';
import { JOB_ID_PATTERN, jobIdOfDirName } from '../records/names.ts';

export async function queuePathOf(args: Record<string, unknown>): Promise<string> {
  const given = args['queue'];
  if (typeof given === 'string' && given !== '') return given;
  return defaultQueuePath();
}

export async function openQueueOf(args: Record<string, unknown>): Promise<Queue> {
  return openQueue(await queuePathOf(args));
}

/** Shortest id prefix taken: a shorter one would match by accident more often than it helps. */
const PREFIX_MIN = 4;

/**
 * One job id as the operator typed it: a whole id (LAYOUT-4), or a unique
 * prefix of one (`1796114669`), or a unique prefix of its random part
 * (`48074dbc`), as git takes short hashes. jobs/ is listed to resolve a
 * prefix; the result is a whole id, checked against LAYOUT-4 before it is
 * used in a path (SEC-7).
 */
export async function resolveJobId(queue: Queue, typed: string): Promise<string> {
  if (JOB_ID_PATTERN.test(typed)) return typed;
  if (typed.length < PREFIX_MIN || !/^[0-9a-f-]+$/.test(typed)) {
    throw new FsjobError('USAGE', `${JSON.stringify(typed)} is not a job id (LAYOUT-4: 19 digits, "-", 16 hex digits, as fsjob enqueue prints) nor ${PREFIX_MIN} or more of its first digits or of its hex part`, {
      clause: 'LAYOUT-4',
    });
  }
  // jobs/<id> and jobs/<id>.gated (GATE-1) name jobs; anything else is foreign.
  const matches = (await listDir(queue.paths.dir('jobs'), queue.fsOptions))
    .map((entry) => jobIdOfDirName(entry.name))
    .filter((name): name is string => name !== undefined && (name.startsWith(typed) || name.slice(20).startsWith(typed)));
  if (matches.length === 1) return matches[0] as string;
  if (matches.length === 0) {
    throw new FsjobError('NOT_FOUND', `no job id in ${queue.root} starts with ${typed} (gc may have removed it after it finished); fsjob status lists the jobs`, { path: queue.paths.dir('jobs') });
  }
  const shown = matches.slice(0, 5).join(', ');
  throw new FsjobError('USAGE', `${typed} is the start of ${matches.length} job ids (${shown}${matches.length > 5 ? ', ...' : ''}); type more of it`);
}

/** The ID positional (a whole id or a unique prefix, resolveJobId). */
export async function jobIdOf(args: Record<string, unknown>, queue: Queue): Promise<string> {
  return resolveJobId(queue, String(args['id'] ?? ''));
}

/** The IDS positional (one or more), each resolved; an id named twice counts once. */
export async function jobIdsOf(args: Record<string, unknown>, queue: Queue): Promise<string[]> {
  const typed = ((args['ids'] as unknown[] | undefined) ?? []).map(String);
  const ids: string[] = [];
  for (const text of typed) {
    const id = await resolveJobId(queue, text);
    if (!ids.includes(id)) ids.push(id);
  }
  return ids;
}

/** JSON for people (--json output of reports): two-space indent, one trailing newline. */
export function jsonText(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}
