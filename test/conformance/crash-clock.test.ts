/**
 * The injector's wall-clock offset (interpose-clock.c) reaches every runtime
 * an implementation is written in: a process under the injector reads its
 * wall clock, waits on a barrier while the driver moves the run's wall clock
 * an hour back, and reads it again. The wall clock it sees jumped back by the
 * offset; its monotonic clock went on; the host's clock did not move.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startWithCrash, type CrashRun } from '../../conformance/crash/run.ts';

const scratch = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fsjob-clock-test-')));
process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));

const freshDir = (label: string): string => mkdtempSync(path.join(scratch, `${label}-`));

const HOUR = 3_600_000;
/** How far two readings a few hundred milliseconds apart may differ from what the offset predicts, on a loaded machine. */
const SLACK_MS = 5_000;

/**
 * Each program writes "wall mono [more walls]" (milliseconds) to $1.1,
 * waits until $2 exists, then writes the same to $1.2. The walls are the
 * runtime's own ways to read the wall clock; mono its monotonic clock.
 */
const PROGRAMS: Record<string, string[]> = {
  // Date.now() (gettimeofday through libuv/V8); process.hrtime is CLOCK_MONOTONIC.
  node: [
    'node',
    '-e',
    `const fs = require('node:fs');
     const read = () => [Date.now(), Number(process.hrtime.bigint() / 1000000n), new Date().getTime()].join(' ');
     fs.writeFileSync(process.argv[1] + '.1', read());
     const wait = () => fs.existsSync(process.argv[2]) ? fs.writeFileSync(process.argv[1] + '.2', read()) : setTimeout(wait, 20);
     wait();`,
  ],
  // time.time() and CLOCK_REALTIME_COARSE (5 on Linux; the time module has no name for it) shift;
  // CLOCK_BOOTTIME (fsjob-python's mono_ms) does not.
  python: [
    'python3',
    '-c',
    `import os, sys, time
def read():
    return ' '.join(str(v) for v in (time.time_ns() // 1000000, time.clock_gettime_ns(time.CLOCK_BOOTTIME) // 1000000,
                                      int(time.time() * 1000), time.clock_gettime_ns(5) // 1000000))
open(sys.argv[1] + '.1', 'w').write(read())
while not os.path.exists(sys.argv[2]):
    time.sleep(0.02)
open(sys.argv[1] + '.2', 'w').write(read())`,
  ],
  // What fsjob-sh's now_ms runs (date +%s%3N: clock_gettime) and its mono_ms (/proc/uptime: boot time).
  sh: [
    'sh',
    '-c',
    `read_clocks() { IFS=' .' read -r s c rest < /proc/uptime; printf '%s %s' "$(date +%s%3N)" "$((s * 1000 + (1$c - 100) * 10))"; }
     read_clocks > "$1.1"
     while [ ! -e "$2" ]; do sleep 0.02; done
     read_clocks > "$1.2"`,
    'sh',
  ],
  // bash's EPOCHREALTIME (gettimeofday) and printf %(%s)T (time(), whole seconds).
  bash: [
    'bash',
    '-c',
    `read_clocks() { IFS=' .' read -r s c rest < /proc/uptime; t=\${EPOCHREALTIME/[.,]/}; printf '%s %s %s000' "\${t%???}" "$((s * 1000 + (1$c - 100) * 10))" "$(printf '%(%s)T' -1)"; }
     read_clocks > "$1.1"
     while [ ! -e "$2" ]; do sleep 0.02; done
     read_clocks > "$1.2"`,
    'bash',
  ],
};

async function waitFor(file: string, ms: number, run: CrashRun): Promise<string> {
  const giveUp = Date.now() + ms;
  let ended = false;
  void run.result.then(() => (ended = true), () => (ended = true));
  while (!existsSync(file) || readFileSync(file, 'utf8') === '') {
    if (ended) throw new Error(`the program ended before it wrote ${file}: ${(await run.result).stderr}`);
    if (Date.now() > giveUp) throw new Error(`${file} never appeared`);
    await sleep(20);
  }
  await sleep(50); // the write of one short line is done by now
  return readFileSync(file, 'utf8');
}

const numbers = (line: string): number[] => line.trim().split(/\s+/).map(Number);

/** Runs `name`'s program, moving the run's wall clock by `offsetMs` between its two readings. */
async function jump(name: string, offsetMs: number, initialMs?: number): Promise<{ before: number[]; after: number[]; hostBefore: number; hostAfter: number }> {
  const root = freshDir(name);
  const work = freshDir(`${name}-work`);
  const out = path.join(work, 'clocks');
  const go = path.join(work, 'go');
  const argv = [...(PROGRAMS[name] as string[]), out, go];
  const run = await startWithCrash({ argv, cwd: root, root, timeoutMs: 60_000, ...(initialMs === undefined ? {} : { wallClockOffsetMs: initialMs }) });
  const hostBefore = Date.now();
  const before = numbers(await waitFor(`${out}.1`, 30_000, run));
  run.setWallClockOffset(offsetMs);
  writeFileSync(go, '');
  const after = numbers(await waitFor(`${out}.2`, 30_000, run));
  const hostAfter = Date.now();
  const result = await run.result;
  assert.is(result.exitCode, 0, `${name}: ${result.stderr}`);
  assert.throws(() => run.setWallClockOffset(0), /ended/, 'the offset cannot be set once the run is over');
  return { before, after, hostBefore, hostAfter };
}

const clock = suite('wall-clock offset');

for (const name of Object.keys(PROGRAMS)) {
  clock(`${name}: the wall clock jumps back by the offset set mid-run; the monotonic clock does not`, async () => {
    const { before, after, hostBefore, hostAfter } = await jump(name, -HOUR);
    const [wall1, mono1, ...walls1] = before as [number, number, ...number[]];
    const [wall2, mono2, ...walls2] = after as [number, number, ...number[]];
    const monoElapsed = mono2 - mono1;
    const detail = `before ${before.join(' ')}, after ${after.join(' ')}`;
    assert.ok(monoElapsed >= 0 && monoElapsed < hostAfter - hostBefore + SLACK_MS, `${name}: the monotonic clock went on (${monoElapsed} ms): ${detail}`);
    assert.ok(Math.abs(wall1 - hostBefore) < SLACK_MS + (hostAfter - hostBefore), `${name}: before the jump the wall clock is the host's: ${detail}, host ${hostBefore}`);
    const jumped = wall2 - wall1 - monoElapsed;
    assert.ok(Math.abs(jumped + HOUR) < SLACK_MS, `${name}: the wall clock moved ${jumped} ms against the monotonic one, expected ${-HOUR}: ${detail}`);
    for (let i = 0; i < walls1.length; i++) {
      const moved = (walls2[i] as number) - (walls1[i] as number) - monoElapsed;
      assert.ok(Math.abs(moved + HOUR) < SLACK_MS, `${name}: wall reading ${i + 3} moved ${moved} ms, expected ${-HOUR}: ${detail}`);
    }
    assert.ok(Math.abs(Date.now() - hostAfter) < SLACK_MS, 'the host clock did not move');
  });
}

clock('an initial offset holds from the start, and a second change replaces the first', async () => {
  const { before, after, hostBefore } = await jump('python', 2 * HOUR, 10 * 60_000);
  const [wall1, mono1] = before as [number, number];
  const [wall2, mono2] = after as [number, number];
  assert.ok(Math.abs(wall1 - hostBefore - 10 * 60_000) < SLACK_MS, `the run starts 10 min ahead: ${wall1} vs host ${hostBefore}`);
  const moved = wall2 - wall1 - (mono2 - mono1);
  assert.ok(Math.abs(moved - (2 * HOUR - 10 * 60_000)) < SLACK_MS, `then it reads the host's clock + 2 h: moved ${moved} ms`);
});

clock('offsets are checked', async () => {
  const root = freshDir('checked');
  const run = await startWithCrash({ argv: ['sleep', '5'], cwd: root, root });
  try {
    assert.throws(() => run.setWallClockOffset(1.5), /integer/);
    assert.throws(() => run.setWallClockOffset(200 * 365 * 86_400_000), /within/);
  } finally {
    run.kill();
    await run.result;
  }
});

clock.run();
