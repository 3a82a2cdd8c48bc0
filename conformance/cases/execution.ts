/**
 * What is left of an execution when its leader exits (EXEC-11, RCPT-1): a
 * command that leaves a member behind in its process group and exits 0. The
 * member ignores SIGTERM (it logs it and keeps running), so only a sweep of
 * SIGTERM, then SIGKILL after kill_grace_ms, stops it; the receipt may be
 * published only once it is gone.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { CaseContext, ConformanceCase } from '../runner/case.ts';
import { checkInvariants, listing } from '../runner/inspect.ts';
import { describeExit } from '../runner/process.ts';
import { sh } from './jobs.ts';
import { bound, killGroupNow, killNow, processLives, procStat, readProbeLog, SCHEDULING_TOLERANCE_MS, waitFor, watchDeath } from './probes.ts';
import { existsSync } from 'node:fs';

const KILL_GRACE_MS = 2000;
const WATCHDOG_MS = 90_000;

/** Runs in the background of the job's group: survives its leader, ignores SIGTERM, logs it. */
const MEMBER_SCRIPT = `trap 'read -r u x < /proc/uptime; printf "term member %s\\n" "$u" >> "$1"' TERM
: > "$2"
while :; do sleep 0.1; done
`;

async function groupMembersCase(ctx: CaseContext): Promise<void> {
  const queue = await ctx.newQueue('members');
  const work = await ctx.subdir('members/work');
  const log = path.join(work, 'probe.log');
  const member = path.join(work, 'member.sh');
  const ready = path.join(work, 'member.ready');
  await writeFile(member, MEMBER_SCRIPT, { mode: 0o600 });
  // The leader starts the member, waits until its trap is set, and exits 0 at once.
  const argv = sh(`printf 'start %s\\n' "$1" >> "$2"; sh "$3" "$2" "$4" & printf 'member %s\\n' "$!" >> "$2"; while [ ! -e "$4" ]; do sleep 0.02; done; exit 0`, 'leader', log, member, ready);
  const id = await ctx.produceOk(queue, { argv, cwd: work, kill_grace_ms: KILL_GRACE_MS, timeout_ms: 60_000 }, ['EXEC-11']);
  if (id === undefined) return;
  const receiptFile = path.join(queue, 'jobs', id, 'receipt.json');
  // The member's death as a process of its own saw it: this case's polls share the runner's event loop with other cases.
  const watcher = watchDeath(log, 'member', path.join(work, 'member.gone'), WATCHDOG_MS + KILL_GRACE_MS + SCHEDULING_TOLERANCE_MS);
  const consumer = ctx.startRole('consume', { queue });
  let memberPid: number | undefined;
  let memberStart: string | undefined;
  let pgid: number | undefined;
  try {
    let aliveAtReceipt = false;
    let diedAt: number | undefined;
    const finished = await waitFor(async () => {
      if (memberPid === undefined) {
        const pid = Number((await readProbeLog(log)).lines.find((l) => l.startsWith('member '))?.slice(7));
        const st = Number.isInteger(pid) && pid > 0 ? procStat(pid) : undefined;
        if (st !== undefined) [memberPid, memberStart, pgid] = [pid, st.start, st.pgrp];
      }
      const alive = memberPid !== undefined && processLives(memberPid, memberStart);
      if (memberPid !== undefined && !alive && diedAt === undefined) diedAt = Date.now();
      if (existsSync(receiptFile)) {
        aliveAtReceipt = alive;
        return true;
      }
      return false;
    }, WATCHDOG_MS);
    const done = await consumer.done;
    // The member may outlive the receipt only when something is wrong: watch it a little longer then.
    if (memberPid !== undefined && diedAt === undefined) {
      await waitFor(() => !processLives(memberPid as number, memberStart), KILL_GRACE_MS + SCHEDULING_TOLERANCE_MS);
      if (!processLives(memberPid, memberStart)) diedAt = Date.now();
    }
    const aliveAfter = memberPid !== undefined && processLives(memberPid, memberStart);
    // The earlier of the two sightings: a late poll makes a kill on time look late, never the reverse.
    const watched = aliveAfter ? undefined : await watcher.diedAt();
    if (watched !== undefined) diedAt = diedAt === undefined ? watched : Math.min(diedAt, watched);
    const probes = await readProbeLog(log);
    const snapshot = await ctx.snapshot(queue);
    const evidence = [describeExit(done), ...probes.lines.slice(0, 12).map((l) => `log: ${l}`), ...listing(snapshot, new Set([id]))];
    if (memberPid === undefined) {
      ctx.fail(['EXEC-4', 'MANIFEST-1'], `the job's command never started its member process (no pid in ${log})`, evidence);
      return;
    }
    if (!ctx.check(finished, ['RCPT-3', 'MANIFEST-2'], `no receipt within ${WATCHDOG_MS} ms`, evidence)) return;
    const term = probes.terms('member')[0];
    if (aliveAfter) {
      ctx.fail(['EXEC-11', 'RCPT-1'], `the leader exited, but the member it left in the recorded group (pid ${memberPid}, pgid ${pgid}) still runs after consume exited: when the leader exits, members left in its group are sent SIGTERM and, after kill_grace_ms (${KILL_GRACE_MS} ms), SIGKILL`, evidence);
    } else if (term === undefined) {
      ctx.fail(['EXEC-11'], `the member left in the group was killed without a SIGTERM first: EXEC-11 sends SIGTERM, and SIGKILL only after kill_grace_ms (${KILL_GRACE_MS} ms)`, evidence);
    } else if (diedAt !== undefined) {
      const lived = diedAt - term;
      ctx.check(lived >= KILL_GRACE_MS - SCHEDULING_TOLERANCE_MS, ['EXEC-11'], `the member (ignoring SIGTERM) was killed ${lived} ms after its SIGTERM: SIGKILL comes only after kill_grace_ms (${KILL_GRACE_MS} ms, less ${SCHEDULING_TOLERANCE_MS} ms tolerance)`, evidence);
      ctx.check(lived <= KILL_GRACE_MS + SCHEDULING_TOLERANCE_MS + 1000, ['EXEC-11'], `the member (ignoring SIGTERM) lived ${lived} ms after its SIGTERM: SIGKILL is due after ${bound('kill_grace_ms', KILL_GRACE_MS)} (+ 1000 ms for the polling of this case and its watcher)`, evidence);
    }
    if (!aliveAfter) ctx.check(!aliveAtReceipt, ['RCPT-1', 'EXEC-11'], `receipt.json was published while a member of the execution (pid ${memberPid}) still ran: the execution is stopped completely before the receipt`, evidence);
    const receipt = snapshot.jobs.get(id)?.receipt;
    ctx.check(receipt?.outcome === 'succeeded' && receipt.exit_code === 0, ['EXEC-10'], `the leader exited 0: the receipt says ${receipt?.outcome} (${receipt?.exit_code}), expected succeeded (0)`, evidence);
    for (const failure of await checkInvariants(snapshot, { accepted: [id] })) ctx.failures.push(failure);
  } finally {
    watcher.stop();
    consumer.kill();
    if (memberPid !== undefined && processLives(memberPid, memberStart)) {
      killGroupNow(pgid);
      killNow(memberPid);
    }
  }
}

export const executionCases: ConformanceCase[] = [
  { name: 'execution/group-members', clauses: ['EXEC-11', 'RCPT-1'], level: 'consumer', strength: 'MUST', run: groupMembersCase },
];
