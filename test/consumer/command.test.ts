import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCommand, type CommandHooks, type CommandSpec, type RecordedGroup } from '../../src/consumer/command.ts';
import { processStart, selfIdentity } from '../../src/model/identity.ts';
import { groupState } from '../../src/model/groups.ts';
import { Spawner } from '../../src/consumer/spawner.ts';
import type { Launcher } from '../../src/consumer/launch.ts';

async function outputs(dir: string) {
  const stdout = await open(join(dir, 'stdout.1'), 'wx', 0o600);
  const stderr = await open(join(dir, 'stderr.1'), 'wx', 0o600);
  return { stdout, stderr };
}

async function spec(dir: string, argv: (string | Buffer)[], extra: Partial<CommandSpec> = {}): Promise<CommandSpec> {
  const { stdout, stderr } = await outputs(dir);
  return {
    argv: argv.map((arg) => Buffer.from(arg)),
    cwd: dir,
    env: { PATH: Buffer.from('/usr/local/bin:/usr/bin:/bin') },
    stdin: null,
    stdout,
    stderr,
    maxOutputBytes: 1_048_576,
    timeoutMs: 30_000,
    killGraceMs: 500,
    ...extra,
  };
}

const groupAlive = async (group: RecordedGroup): Promise<boolean> => (await groupState(group)) !== 'stopped';

/**
 * The same guarantees whoever forks the leader: node's own spawn (launch.ts)
 * and the worker's spawner (spawner.ts). What only the engine does (bounds,
 * stops, stragglers) is checked once, through the spawner a worker uses;
 * `gateOnly` keeps a suite to what each launcher does itself: the gate, the
 * release, the exit status.
 */
function commandSuite(name: string, launcher: () => Launcher | undefined, gateOnly = false): ReturnType<typeof suite> {
  const all = suite(`startCommand, ${name}`);
  const run = all;
  const engine: (test: string, body: () => Promise<void>) => void = gateOnly ? () => undefined : all;
  const hooks = (given: CommandHooks): CommandHooks => {
    const chosen = launcher();
    return chosen === undefined ? given : { ...given, launcher: chosen };
  };

  run('the command starts only after its group is recorded', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fsjob-cmd-'));
    const marker = join(dir, 'ran');
    let recorded: RecordedGroup | undefined;
    let ranBeforeRecord = false;
    const cmd = startCommand(await spec(dir, ['sh', '-c', `echo hi; touch ${marker}`]), hooks({
      async record(group) {
        await new Promise((r) => setTimeout(r, 200));
        ranBeforeRecord = (() => { try { statSync(marker); return true; } catch { return false; } })();
        recorded = group;
      },
    }));
    const result = await cmd.done;
    assert.not.ok(ranBeforeRecord);
    assert.ok(result.released);
    assert.is(result.exit, 0);
    assert.is(result.group?.pgid, recorded?.pgid);
    assert.is(readFileSync(join(dir, 'stdout.1'), 'utf8'), 'hi\n');
    assert.is(result.stdout.bytes_total, 3);
  });

  run("the command's environment is exactly the one given, names a shell sets of its own accord too (EXEC-6)", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fsjob-cmd-'));
    // dash resets IFS, OPTIND and PPID and exports PWD; a gate's own variable must not take a job's name.
    const env = { PATH: '/usr/bin:/bin', IFS: ':0123456789', OPTIND: '7', PPID: '1', fsjob_release: 'mine', _: 'u', ENV: 'e' };
    const cmd = startCommand(await spec(dir, ['/bin/cat', '/proc/self/environ'], { env: Object.fromEntries(Object.entries(env).map(([k, v]) => [k, Buffer.from(v)])) }), hooks({ async record() {} }));
    const result = await cmd.done;
    assert.is(result.exit, 0);
    const seen = readFileSync(join(dir, 'stdout.1'), 'utf8').split('\0').filter((entry) => entry !== '').sort();
    assert.equal(seen, Object.entries(env).map(([k, v]) => `${k}=${v}`).sort());
    assert.is(readFileSync(join(dir, 'stderr.1'), 'utf8'), '');
  });

  run('a failed recording means the command never runs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fsjob-cmd-'));
    const marker = join(dir, 'ran');
    const cmd = startCommand(await spec(dir, ['touch', marker]), hooks({
      async record() {
        throw new Error('disk full');
      },
    }));
    let failed = false;
    try {
      await cmd.done;
    } catch {
      failed = true;
    }
    assert.ok(failed, 'the attempt reports the failed recording');
    await new Promise((r) => setTimeout(r, 100));
    assert.throws(() => statSync(marker));
  });

  engine('output beyond the bound is counted, not kept, and never blocks', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fsjob-cmd-'));
    const cmd = startCommand(await spec(dir, ['sh', '-c', 'head -c 104857600 /dev/zero'], { maxOutputBytes: 1000 }), hooks({ async record() {} }));
    const result = await cmd.done;
    assert.is(result.exit, 0);
    assert.is(result.stdout.bytes_total, 104_857_600);
    assert.is(result.stdout.bytes_kept, 1000);
    assert.ok(result.stdout.truncated);
    assert.is(statSync(join(dir, 'stdout.1')).size, 1000);
  });

  engine('a timeout stops the whole group, TERM then KILL', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fsjob-cmd-'));
    const cmd = startCommand(await spec(dir, ['sh', '-c', "trap '' TERM; sleep 30 & sleep 30"], { timeoutMs: 300, killGraceMs: 300 }), hooks({ async record() {} }));
    const result = await cmd.done;
    assert.is(result.stoppedBy, 'timeout');
    assert.is(result.signal, 'SIGKILL');
    assert.not.ok(await groupAlive(result.group!));
  });

  engine('stragglers left in the group are stopped when the leader exits', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fsjob-cmd-'));
    const cmd = startCommand(await spec(dir, ['sh', '-c', 'sleep 30 >/dev/null 2>&1 & exit 0']), hooks({ async record() {} }));
    const result = await cmd.done;
    assert.is(result.exit, 0);
    assert.is(result.stoppedBy, null);
    assert.not.ok(await groupAlive(result.group!));
  });

  run('cancel before release: the command never runs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fsjob-cmd-'));
    const marker = join(dir, 'ran');
    let cmd: ReturnType<typeof startCommand> | undefined = undefined;
    cmd = startCommand(await spec(dir, ['touch', marker]), hooks({
      async record() {
        cmd?.stop('cancel');
      },
    }));
    const result = await cmd.done;
    assert.not.ok(result.released);
    assert.throws(() => statSync(marker));
  });

  engine('force stops at once with SIGKILL', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fsjob-cmd-'));
    const cmd = startCommand(await spec(dir, ['sh', '-c', "trap '' TERM; sleep 30"]), hooks({ async record() {} }));
    setTimeout(() => cmd.stop('cancel'), 200);
    setTimeout(() => cmd.stop('force'), 400);
    const result = await cmd.done;
    assert.is(result.stoppedBy, 'force');
    assert.is(result.signal, 'SIGKILL');
  });
  return all;
}

commandSuite("node's own spawn", () => undefined, true).run();

let spawner: Spawner | undefined;
const viaSpawner = commandSuite('the spawner', () => spawner);
viaSpawner.before(async () => {
  spawner = new Spawner();
  assert.is(await spawner.start(), null);
});
viaSpawner.after(async () => spawner?.close());

viaSpawner.run();

const run = suite('startCommand under a guardian');

run('the guardian stops recorded groups when the worker is killed; its spawner goes, with its FIFO directory', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fsjob-cmd-'));
  const worker = spawn(process.execPath, ['--import', 'tsx', 'test/support/fixtures/guarded-worker.ts', dir], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [pgid, fifos] = await new Promise<[number, string]>((resolve) => worker.stdout.once('data', (d: Buffer) => {
    const [first, second] = String(d).trim().split(' ');
    resolve([Number(first), second as string]);
  }));
  assert.ok(existsSync(fifos));
  const self = await selfIdentity();
  const group = { pgid, start: (await processStart(pgid))!.start, boot_id: self.boot_id, pid_ns: self.pid_ns };
  assert.ok(await groupAlive(group));
  worker.kill('SIGKILL');
  const t0 = Date.now();
  while ((await groupAlive(group)) && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 100));
  assert.not.ok(await groupAlive(group), 'the group outlived its worker by 10 s');
  // The spawner read end of file when the worker died, and removed the directory as it exited.
  while (existsSync(fifos) && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 100));
  assert.not.ok(existsSync(fifos), `the spawner's FIFO directory ${fifos} outlived the worker`);
});

/** Starts test/support/fixtures/guarded-worker.ts and returns it with its command group. */
async function guardedWorker(args: string[]): Promise<{ worker: ReturnType<typeof spawn>; group: { pgid: number; start: string; boot_id: string; pid_ns: string } }> {
  const dir = mkdtempSync(join(tmpdir(), 'fsjob-cmd-'));
  const worker = spawn(process.execPath, ['--import', 'tsx', 'test/support/fixtures/guarded-worker.ts', dir, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const pgid = await new Promise<number>((resolve) => worker.stdout?.once('data', (d: Buffer) => resolve(Number(String(d).trim().split(' ')[0]))));
  const self = await selfIdentity();
  return { worker, group: { pgid, start: (await processStart(pgid))!.start, boot_id: self.boot_id, pid_ns: self.pid_ns } };
}

// LEASE_MIN, and the bound LEASE-5 sets: stopped within GUARDIAN_LIMIT of the deadline,
// plus a stated tolerance for scheduling on a loaded machine.
const LEASE = 3000;
const GUARDIAN_LIMIT_MS = 10_000;
const TOLERANCE_MS = 3000;

run('the guardian stops a group whose owner stopped running and renewing, within lease + GUARDIAN_LIMIT (LEASE-5)', async () => {
  const { worker, group } = await guardedWorker([String(LEASE), 'once']);
  const t0 = Date.now();
  worker.kill('SIGSTOP');
  try {
    while ((await groupAlive(group)) && Date.now() - t0 < LEASE + GUARDIAN_LIMIT_MS + TOLERANCE_MS) await new Promise((r) => setTimeout(r, 100));
    assert.not.ok(await groupAlive(group), `the group of a stopped owner outlived lease ${LEASE} ms + GUARDIAN_LIMIT + ${TOLERANCE_MS} ms tolerance`);
    assert.ok(Date.now() - t0 >= LEASE - 500, 'the group was stopped before its lease had passed');
  } finally {
    worker.kill('SIGKILL');
  }
});

run('the guardian leaves alone a group whose claim keeps being renewed (LEASE-5)', async () => {
  const { worker, group } = await guardedWorker([String(LEASE), 'renew']);
  try {
    await new Promise((r) => setTimeout(r, LEASE * 2));
    assert.ok(await groupAlive(group), 'a renewed group was stopped');
  } finally {
    worker.kill('SIGKILL');
    const t0 = Date.now();
    while ((await groupAlive(group)) && Date.now() - t0 < GUARDIAN_LIMIT_MS + TOLERANCE_MS) await new Promise((r) => setTimeout(r, 100));
  }
});

run('arguments and environment values that are not UTF-8 reach the command as exactly their bytes, through the spawner a worker uses (SPEC-3)', async () => {
  const spawner = new Spawner();
  if ((await spawner.start()) !== null) return; // no spawner here: node's own spawn passes text only (launch.ts)
  try {
    const dir = mkdtempSync(join(tmpdir(), 'fsjob-cmd-'));
    // Bytes a shell could get wrong: %, \\, a trailing newline, a lone 0xff beside a valid sequence.
    const arg = Buffer.from([0x25, 0x73, 0x5c, 0x6e, 0xff, 0xc3, 0xa9, 0x0a]);
    const value = Buffer.from([0x41, 0xe9, 0x25, 0x25, 0x0a, 0x0a]);
    const out = join(dir, 'out');
    const script = `printf %s "$1" > "${out}.arg"; printf %s "$X" > "${out}.env"`;
    const env = { PATH: Buffer.from('/usr/bin:/bin'), X: value };
    const command = startCommand(await spec(dir, ['sh', '-c', script, 'sh', arg], { env }), { async record() {}, launcher: spawner });
    assert.is((await command.done).exit, 0);
    assert.equal(readFileSync(`${out}.arg`), arg, 'the argument');
    assert.equal(readFileSync(`${out}.env`), value, 'the environment value');
  } finally {
    await spawner.close();
  }
});

run.run();
