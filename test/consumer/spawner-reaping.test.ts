/**
 * bash's spawner reaps its gates itself (spec/design-spawner.md, item 7):
 * bash's SIGCHLD handler reaps a gate that ended, its /proc entry goes,
 * the loop's look finds it gone, and the spawner reports the end. In bash 5.2, a `read -t`
 * whose timeout passed before it began to read (a spawner preempted for
 * longer than its poll, on a loaded machine) sets the signal mask from a
 * variable it never set: whatever an earlier call left on the stack, often
 * a heap address, with SIGCHLD in it or not. Blocked, it stays blocked:
 * every gate that ends after that is a zombie, whose /proc entry stays,
 * and no end is reported again (a command job hung in conformance
 * consumer/concurrency until the runner killed it).
 *
 * The case forces those reads: a clock preloaded into real spawners
 * (flying-clock.c, built with cc; skipped without one) moves 200 ms, more
 * than the longest poll, at each gettimeofday while a flag file exists, so
 * every timed read of theirs times out before it reads, as a preempted one
 * does, from the launch of a gate on; then the clock runs true again, and
 * the gate ends a second later. Its end must be reported, its process
 * reaped, by bash itself: the spawner's fallback (the second case) must
 * not have been needed. Sixteen spawners at once: without the spawner's
 * remedy and its fallback, 6 to 9 of them never reported it in each of 3
 * runs (their masks whatever the launch left on the stack), so the case
 * failed 3 of 3; without the remedy alone, the fallback reported them late.
 *
 * The second case blocks SIGCHLD where fsjob_poll does not put it right
 * (the same reads, in a request) and checks the spawner's fallback: a gate
 * that bash did not reap is found a zombie in /proc once the poll has
 * slowed down, and reported late. Without it every such spawner's gate
 * stayed a zombie (3 of 3 runs failed).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { defaultShell, onSpawnerPath, SPAWNER_PATH } from '../../src/consumer/spawner-host.ts';
import { frameRequest } from '../../src/consumer/spawner-request.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { delay, waitFor } from '../support/consumer.ts';

const SCRIPT = readFileSync(new URL('../../src/consumer/spawner.sh', import.meta.url), 'utf8');
const SPAWNERS = 16;

/** gettimeofday, preloaded: 200 ms later at each call while the file FLYING_CLOCK names exists. */
const FLYING_CLOCK = `#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
static const char *flag;
static long long ahead_us;
__attribute__((constructor)) static void init(void) { flag = getenv("FLYING_CLOCK"); }
int gettimeofday(struct timeval *tv, void *tz) {
  struct timespec now;
  (void)tz;
  clock_gettime(CLOCK_REALTIME, &now);
  if (flag != NULL && access(flag, F_OK) == 0) ahead_us += 200000;
  long long us = (long long)now.tv_sec * 1000000 + now.tv_nsec / 1000 + ahead_us;
  tv->tv_sec = us / 1000000;
  tv->tv_usec = us % 1000000;
  return 0;
}
`;

/** A bash spawner as spawner.ts starts one (plus the preloaded clock), and the lines it wrote. */
function startSpawner(shell: string, dir: string, env: NodeJS.ProcessEnv): { child: ChildProcessWithoutNullStreams; lines: string[]; stderr: () => string; send: (request: string) => void } {
  mkdirSync(dir, { mode: 0o700 });
  const child = spawn(shell, ['--norc', '-c', 'eval "$FSJOB_SPAWNER_SCRIPT"', 'fsjob-spawner'], {
    cwd: '/',
    env: { PATH: SPAWNER_PATH, LC_ALL: 'C', FSJOB_SPAWNER_DIR: dir, FSJOB_SPAWNER_INPUT: 'framed', FSJOB_SPAWNER_SCRIPT: SCRIPT, ...env },
  });
  const lines: string[] = [];
  let pending = '';
  child.stdout.setEncoding('latin1').on('data', (chunk: string) => {
    pending += chunk;
    for (let nl = pending.indexOf('\n'); nl >= 0; nl = pending.indexOf('\n')) {
      lines.push(pending.slice(0, nl));
      pending = pending.slice(nl + 1);
    }
  });
  let stderr = '';
  child.stderr.setEncoding('latin1').on('data', (chunk: string) => (stderr += chunk));
  return { child, lines, stderr: () => stderr, send: (request) => void child.stdin.write(frameRequest(Buffer.from(request, 'latin1'))) };
}

/** A process's state letter (Z: a zombie), '' once it is gone. */
function stateOf(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return '';
  }
}

/** The signal masks other than SIGCHLD alone (its read, its pselect) that `pid` showed in 1,000 reads of its /proc status. */
function otherMasksOf(pid: number): string[] {
  const seen = new Set<string>();
  for (let i = 0; i < 1000; i++) {
    try {
      const blocked = /^SigBlk:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))?.[1];
      if (blocked !== undefined && blocked !== '0000000000010000') seen.add(blocked);
    } catch {
      break;
    }
  }
  return [...seen];
}

const reaping = suite("bash's spawner reports every gate's end (design-spawner.md, item 7)");
reaping.after(cleanupAll);

reaping("timed reads that time out before they read (bash 5.2 then sets a garbage signal mask) leave SIGCHLD unblocked: each spawner's gate is reaped and its end reported", async () => {
  const shell = defaultShell();
  if (path.basename(shell) !== 'bash') {
    console.log(`# skipped: no bash here (the spawner runs ${shell}, which reads no request with a timeout)`);
    return;
  }
  const cc = onSpawnerPath('cc');
  if (cc === undefined) {
    console.log('# skipped: no cc to build the preloaded clock that makes a read time out before it reads');
    return;
  }
  const dir = await freshDir('fsjob-reaping');
  writeFileSync(path.join(dir, 'flying-clock.c'), FLYING_CLOCK);
  const built = spawnSync(cc, ['-shared', '-fPIC', '-O2', '-o', path.join(dir, 'flying-clock.so'), path.join(dir, 'flying-clock.c')], { encoding: 'utf8' });
  if (built.status !== 0) {
    console.log(`# skipped: cc could not build the preloaded clock: ${built.stderr.trim().slice(0, 300)}`);
    return;
  }
  // The gate reads its release from this file: released at once, no FIFO to hold.
  const release = path.join(dir, 'release');
  writeFileSync(release, 'go\n');
  const flag = path.join(dir, 'flying');
  const spawners = Array.from({ length: SPAWNERS }, (_, i) =>
    startSpawner(shell, path.join(dir, `spawner-${i}`), { LD_PRELOAD: path.join(dir, 'flying-clock.so'), FLYING_CLOCK: flag }),
  );
  try {
    const pids: number[] = [];
    for (const spawner of spawners) {
      const ready = await waitFor('the spawner says ready', () => spawner.lines.find((line) => line.startsWith('ready ')));
      if (!ready.split(' ').includes('bash')) {
        console.log(`# skipped: the bash chain is not offered here (${ready})`);
        return;
      }
      pids.push(Number(ready.split(' ')[1]));
    }
    // From the launch on, every timed read of the spawners times out before it reads (with no gate running, the
    // spawner reads the request without a timeout); for 200 ms after the gates reported.
    writeFileSync(flag, '');
    for (const spawner of spawners) spawner.send(`fsjob_start 1 / /dev/null /dev/null /dev/null '${release}' 0 /bin/sh -c 'sleep 1; exit 11'\n`);
    const gates = await Promise.all(spawners.map(async (spawner) => Number((await waitFor('the gate reports', () => spawner.lines.find((line) => line.startsWith('p 1 ')))).split(' ')[2])));
    await delay(200);
    rmSync(flag);
    const unreported: string[] = [];
    await Promise.all(
      spawners.map(async (spawner, i) => {
        try {
          const end = await waitFor(`the end of gate ${gates[i]}`, () => spawner.lines.find((line) => line.startsWith('x 1 ')), 15_000);
          assert.is(end, `x 1 ${gates[i]} 11`, 'the gate is reported with its exit status');
          assert.is(stateOf(gates[i] as number), '', 'the gate was reaped: no process, no zombie, is left of it');
        } catch (error) {
          if (error instanceof assert.Assertion) throw error;
          const gate = gates[i] as number;
          unreported.push(`gate ${gate}: ${stateOf(gate) || 'gone'}, its spawner ${pids[i]} blocking ${otherMasksOf(pids[i] as number).join(', ') || 'SIGCHLD alone'}`);
        }
      }),
    );
    assert.equal(unreported, [], `gates that ended and were never reported (Z: a zombie bash never reaped; the masks are the spawner's outside its read): ${unreported.join('; ')}`);
    // Reported through bash's own reaping, not late through the zombie fallback of the second case, which
    // would report them too, within the wait above, if fsjob_poll left SIGCHLD blocked.
    for (const [i, spawner] of spawners.entries()) assert.not.match(spawner.stderr(), 'bash did not reap gates', `spawner ${i} needed the fallback: SIGCHLD stayed blocked after a read that timed out`);
  } finally {
    for (const spawner of spawners) spawner.child.stdin.end();
    await Promise.all(spawners.map((spawner) => (spawner.child.exitCode !== null || spawner.child.signalCode !== null ? null : new Promise((resolve) => spawner.child.once('exit', resolve)))));
  }
});

reaping("a gate that bash did not reap (SIGCHLD blocked where fsjob_poll does not put it right) is found a zombie and reported, late but not never", async () => {
  const shell = defaultShell();
  if (path.basename(shell) !== 'bash') {
    console.log(`# skipped: no bash here (the spawner runs ${shell}, which reaps its waiters itself)`);
    return;
  }
  const dir = await freshDir('fsjob-zombies');
  const release = path.join(dir, 'release');
  writeFileSync(release, 'go\n');
  // bash 5.2's reads that time out before they read (1 us), in a request: the mask they leave is the one each
  // fsjob_poll begins with and puts back. SIGCHLD is in it or not as address randomization fell for that process
  // (in about one spawner in two), as /proc shows while the spawner waits for a request without a timeout (a read
  // that blocks nothing): spawners are started, six at a time, until two have it (at most 24).
  const spawners: ReturnType<typeof startSpawner>[] = [];
  const started: ReturnType<typeof startSpawner>[] = [];
  try {
    for (let batch = 0; batch < 4 && spawners.length < 2; batch++) {
      const fresh = Array.from({ length: 6 }, (_, i) => startSpawner(shell, path.join(dir, `spawner-${batch}-${i}`), {}));
      started.push(...fresh);
      await Promise.all(
        fresh.map(async (spawner) => {
          const ready = await waitFor('the spawner says ready', () => spawner.lines.find((line) => line.startsWith('ready ')));
          if (!ready.split(' ').includes('bash')) return;
          const pid = Number(ready.split(' ')[1]);
          for (let attempt = 1; attempt <= 3; attempt++) {
            spawner.send(`for fsjob_x in 1 2 3 4 5 6 7 8; do IFS= read -r -t 0.000001 -N 1 fsjob_x </dev/null; done; printf 'k ${attempt}\\n'\n`);
            await waitFor('the request done', () => spawner.lines.includes(`k ${attempt}`));
            await waitFor('the spawner waiting for a request', () => stateOf(pid) === 'S');
            const mask = /^SigBlk:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))?.[1] ?? '0';
            if (BigInt(`0x${mask}`) & (1n << 16n)) return void spawners.push(spawner);
          }
        }),
      );
    }
    if (started.every((spawner) => !spawner.lines.some((line) => line.startsWith('ready ') && line.split(' ').includes('bash')))) {
      console.log('# skipped: the bash chain is not offered here');
      return;
    }
    assert.ok(spawners.length > 0, `no spawner of ${started.length} took SIGCHLD into its mask: the case tests nothing`);
    for (const spawner of spawners) spawner.send(`fsjob_start 1 / /dev/null /dev/null /dev/null '${release}' 0 /bin/sh -c 'sleep 0.3; exit 11'\n`);
    const unreported: string[] = [];
    await Promise.all(
      spawners.map(async (spawner, i) => {
        const gate = Number((await waitFor('the gate reports', () => spawner.lines.find((line) => line.startsWith('p 1 ')))).split(' ')[2]);
        try {
          const end = await waitFor(`the end of gate ${gate}`, () => spawner.lines.find((line) => line.startsWith('x 1 ')), 15_000);
          assert.is(end, `x 1 ${gate} 11`, 'the gate is reported with its exit status');
          assert.is(stateOf(gate), '', 'the gate was reaped: no process, no zombie, is left of it');
        } catch (error) {
          if (error instanceof assert.Assertion) throw error;
          unreported.push(`spawner ${i}: gate ${gate} ${stateOf(gate) || 'gone'}`);
        }
      }),
    );
    assert.equal(unreported, [], `gates that ended and were never reported (Z: a zombie): ${unreported.join('; ')}`);
    for (const [i, spawner] of spawners.entries()) assert.match(spawner.stderr(), 'bash did not reap gates', `spawner ${i} says why its gate was late`);
  } finally {
    for (const spawner of started) spawner.child.stdin.end();
    await Promise.all(started.map((spawner) => (spawner.child.exitCode !== null || spawner.child.signalCode !== null ? null : new Promise((resolve) => spawner.child.once('exit', resolve)))));
  }
});

reaping.run();
