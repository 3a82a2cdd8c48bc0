// The process group of a run under the injector: killing it, and waiting
// until no live member is left (zombies count as gone: an init that never
// reaps, common in containers, would keep them forever).
import { readFileSync, readdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

const POLL_MS = 10;
const GROUP_GONE_MS = 10_000;

/** SIGKILL to the whole group; a group already gone is not an error. */
export function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

/** Resolves once no live member of the group is left; throws after GROUP_GONE_MS. */
export async function waitGroupGone(pgid: number): Promise<void> {
  const deadline = Date.now() + GROUP_GONE_MS;
  while (groupAlive(pgid)) {
    if (Date.now() > deadline) {
      throw new Error(`runWithCrash: process group ${pgid} still has live members ${GROUP_GONE_MS} ms after SIGKILL`);
    }
    killGroup(pgid);
    await sleep(POLL_MS);
  }
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
  // kill(2) still finds zombies, and an init that never reaps (common in
  // containers) keeps orphaned ones forever; a zombie can touch nothing.
  return hasLiveMember(pgid);
}

function hasLiveMember(pgid: number): boolean {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return true;
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // exited while we looked
    }
    // Fields after "pid (comm) ": state ppid pgrp ...; comm may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) === pgid && fields[0] !== 'Z' && fields[0] !== 'X') return true;
  }
  return false;
}
