/**
 * The worker's spawner (src/consumer/spawner.ts, spawner.sh): a real
 * spawner starting real commands, through each chain this system has (bash's
 * job control, and env + setsid + sh as /bin/sh runs it). What travels (argv and environment
 * bytes), what the command starts with (EXEC-13), what the exit status says
 * (EXEC-10), the gate (EXEC-2), who holds which descriptor, and what a dead
 * spawner or waiter leaves behind.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, constants as fsConstants, existsSync, mkdirSync, openSync, readFileSync, readdirSync, readlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { systemClock } from '../../src/base/clock.ts';
import { Spawner } from '../../src/consumer/spawner.ts';
import { processStart } from '../../src/model/identity.ts';
import type { Leader, LeaderEnd, LaunchRequest } from '../../src/consumer/launch.ts';
import { bashChainFits, type Chain } from '../../src/consumer/spawner-request.ts';
import { cleanupAll, freshDir, rejectsWith } from '../support/helpers.ts';
import { delay, endOf, readJson, receiptOf, serve, waitFor } from '../support/consumer.ts';
import { enqueue, freshQueue } from '../support/enqueue.ts';
import { FSJOB_ARGV } from '../support/cli.ts';

const PATH = '/usr/local/bin:/usr/bin:/bin';

/** A sink that keeps what it is given. */
function collector(): { sink: Writable; bytes: () => Buffer } {
  const chunks: Buffer[] = [];
  const sink = new Writable({ write: (chunk: Buffer, _encoding, done) => (chunks.push(chunk), done()) });
  return { sink, bytes: () => Buffer.concat(chunks) };
}

/** Launches `argv`; `outputs()`, once the leader ended, drains its output (EXEC-12) and gives stdout and stderr. */
async function launch(spawner: Spawner, argv: LaunchRequest['argv'], extra: Partial<LaunchRequest> = {}): Promise<{ leader: Leader; outputs: () => Promise<[Buffer, Buffer]> }> {
  const leader = await spawner.launch({ argv, env: { PATH }, cwd: tmpdir(), stdinFd: null, ...extra });
  const out = collector();
  const err = collector();
  leader.connect(out.sink, err.sink);
  return {
    leader,
    outputs: async () => {
      await leader.drain(systemClock);
      return [out.bytes(), err.bytes()];
    },
  };
}

/** Starts, releases and waits for one command. */
async function run(spawner: Spawner, argv: LaunchRequest['argv'], extra: Partial<LaunchRequest> = {}): Promise<{ end: LeaderEnd; stdout: Buffer; stderr: Buffer }> {
  const { leader, outputs: drained } = await launch(spawner, argv, extra);
  leader.release();
  const end = await leader.ended;
  const outputs = await drained();
  leader.dispose();
  return { end, stdout: outputs[0], stderr: outputs[1] };
}

/** The processes whose stat field `field` (1: the parent, 2: the process group, after the state) is `value`, from /proc. */
function processesWith(field: 1 | 2, value: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[field]) === value) out.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** The processes whose process group is `pgid`. */
const groupMembers = (pgid: number): number[] => processesWith(2, pgid);
/** The children of `ppid`. */
const childrenOf = (ppid: number): number[] => processesWith(1, ppid);

/** The command name of a process, '' once it is gone. */
function comm(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

/** Where each descriptor of `pid` points; none for a process that is gone (a waiter of an earlier test that just ended). */
function descriptors(pid: number): Map<number, string> {
  const out = new Map<number, string>();
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return out;
  }
  for (const fd of fds) {
    try {
      out.set(Number(fd), readlinkSync(`/proc/${pid}/fd/${fd}`));
    } catch {
      // closed meanwhile
    }
  }
  return out;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return !/^[ZX]$/.test(readFileSync(`/proc/${pid}/stat`, 'latin1').split(') ')[1]?.[0] ?? 'X');
  } catch {
    return false;
  }
};

function spawningSuite(chain: Chain, shell: string | undefined): void {
  const spawning = suite(`the spawner starts commands through the ${chain} chain (design-notes "Spawning commands")`);
  let spawner: Spawner;
  spawning.before(async () => {
    spawner = new Spawner(shell === undefined ? {} : { shell });
    assert.is(await spawner.start(), null, 'the spawner runs here (setsid and env --default-signal are there)');
    assert.ok(spawner.chains.has(chain), `the ${chain} chain is offered: ${[...spawner.chains].join(', ')}`);
  });
  spawning.after(async () => {
    await spawner.close();
    await cleanupAll();
  });

  spawning('argv and environment bytes arrive exactly as given: every byte but NUL, quotes and line feeds too', async () => {
    const bytes = Buffer.from(Array.from({ length: 255 }, (_, i) => i + 1));
    const text = `it's "quoted" $HOME \`x\` \\ ${"'"}\n\u00e9`;
    const out = await run(spawner, ['/usr/bin/printf', '%s|%s', bytes, text], { env: { PATH, RAW: bytes, TEXT: text } });
    assert.equal(out.end, { exit: 0, signal: null });
    assert.equal(out.stdout, Buffer.concat([bytes, Buffer.from('|'), Buffer.from(text)]));
    const env = await run(spawner, ['/usr/bin/env']);
    assert.equal(env.stdout.toString().split('\n').filter((l) => l !== '').sort(), [`PATH=${PATH}`], 'exactly the given environment (EXEC-6): nothing of the spawner\'s own');
    const raw = await run(spawner, ['/usr/bin/env'], { env: { RAW: bytes } });
    assert.equal(raw.stdout, Buffer.concat([Buffer.from('RAW='), bytes, Buffer.from('\n')]));
  });

  spawning('the exit status tells an exit from a death by signal: exit 130 is not SIGINT (EXEC-10)', async () => {
    const cases: [string, LeaderEnd][] = [
      ['exit 0', { exit: 0, signal: null }],
      ['exit 130', { exit: 130, signal: null }],
      ['exit 143', { exit: 143, signal: null }],
      ['exit 255', { exit: 255, signal: null }],
      ['kill -INT $$', { exit: null, signal: 'SIGINT' }],
      ['kill -TERM $$', { exit: null, signal: 'SIGTERM' }],
      ['kill -KILL $$', { exit: null, signal: 'SIGKILL' }],
      ['kill -USR1 $$', { exit: null, signal: 'SIGUSR1' }],
      ['ulimit -c 0; kill -SEGV $$', { exit: null, signal: 'SIGSEGV' }],
      ['kill -PIPE $$', { exit: null, signal: 'SIGPIPE' }],
    ];
    for (const [script, expected] of cases) assert.equal((await run(spawner, ['/bin/sh', '-c', script])).end, expected, script);
  });

  spawning('a command starts with default dispositions, an empty mask, umask 022 and its own group (EXEC-13, EXEC-2)', async () => {
    const status = (await run(spawner, ['/bin/cat', '/proc/self/status'])).stdout.toString();
    assert.match(status, /^SigIgn:\s*0+$/m, 'no signal ignored (a shell starts background jobs with INT and QUIT ignored)');
    assert.match(status, /^SigBlk:\s*0+$/m, 'nothing blocked');
    assert.match(status, /^Umask:\s*0022$/m);
    const stat = (await run(spawner, ['/bin/cat', '/proc/self/stat'])).stdout.toString();
    const [pid, , , , pgid, sid] = stat.replace(/\(.*\)/, 'x').split(' ').map(Number);
    assert.is(pgid, pid, 'the leader of its own process group');
    // setsid(1) makes a session too; bash's job control a group in the spawner's session (EXEC-13: the session is the consumer's choice).
    assert.is(sid, chain === 'sh' ? pid : spawner.pid, chain === 'sh' ? 'and of its own session' : "in the spawner's session");
  });

  spawning('names a shell treats as its own arrive exactly as given, and nothing else (EXEC-6)', async () => {
    // Those bash's gate sets itself (bashChainFits), then those it leaves to the sh chain. An IFS of digits
    // must not split the gate's own words; a locale this system lacks must not make bash warn on the job's stderr.
    const own = { PATH, SHLVL: '7', RANDOM: 'r', SECONDS: 's', LINENO: 'l', PWD: '/nowhere', OLDPWD: '/old', IFS: ':0123456789', OPTIND: '9', ENV: 'e', fsjob_release: 'f', LC_ALL: 'xx_XX.no-such-locale' };
    const denied = { PATH, _: 'under', PIPESTATUS: 'p', SHELLOPTS: 'o', BASHPID: 'b', UID: 'u', PPID: '1', FUNCNAME: 'f' };
    assert.ok(bashChainFits(own));
    assert.not.ok(bashChainFits({ PATH, PPID: '1' }));
    for (const env of [own, denied]) {
      const out = await run(spawner, ['/usr/bin/env'], { env });
      assert.equal(out.stdout.toString().split('\n').filter((l) => l !== '').sort(), Object.entries(env).map(([k, v]) => `${k}=${v}`).sort());
      assert.is(out.stderr.toString(), '', 'nothing on the way writes to the command\'s stderr');
    }
  });

  spawning("a command holds none of the spawner's pipes or FIFOs; the spawner and its waiter hold no write end of an output", async () => {
    const dir = spawner.directory as string;
    const spawnerPid = spawner.pid as number;
    const own = descriptors(spawnerPid);
    const pipes = new Set([own.get(0), own.get(1), own.get(2)]);
    // A command that is held at its gate. The sh chain's waiter closes its copies right after it forks the gate, but
    // the gate can report its pid (and launch resolve) before the waiter runs again: a loaded machine showed the
    // waiter still holding the release FIFO then (clean-clone CI, 2026-12-05). What must hold is the state once the
    // waiter has run, so the look is repeated until no member of the spawner's group holds a FIFO of the spawner;
    // a waiter that never closed them still fails it, after waitFor's 15 s.
    const held = await launch(spawner, ['/bin/ls', '-l', '/proc/self/fd']);
    const holdings = (): string[] =>
      groupMembers(spawnerPid).flatMap((pid) => [...descriptors(pid)].filter(([, target]) => target.startsWith(dir)).map(([fd, target]) => `process ${pid} (the spawner or a waiter) holds ${target} as fd ${fd}`));
    await waitFor('the waiter to close its copies of the FIFOs', () => holdings().length === 0).catch(() => undefined);
    assert.equal(holdings(), []);
    held.leader.release();
    await held.leader.ended;
    const listing = (await held.outputs())[0].toString();
    held.leader.dispose();
    const fds = [...listing.matchAll(/ (\d+) -> (.*)$/gm)].map((m) => [Number(m[1]), m[2] as string] as const);
    assert.equal(fds.filter(([fd]) => fd <= 2).map(([fd]) => fd), [0, 1, 2]);
    for (const [fd, target] of fds) {
      assert.not.ok(pipes.has(target), `fd ${fd} is the spawner's request or reply pipe (${target})`);
      if (fd > 2) assert.not.ok(target.startsWith(dir), `fd ${fd} is a FIFO of the spawner (${target})`);
    }
  });

  spawning("the leader's start is its own (ID-2): reported by bash's gate, read from /proc by the caller after sh's", async () => {
    const { leader } = await launch(spawner, ['/bin/true']);
    const seen = await processStart(leader.pid);
    if (chain === 'bash') assert.is(leader.start, seen?.start, 'the start the gate reported is the one /proc gives for its pid');
    else assert.is(leader.start, undefined, 'the sh gate reports no start');
    leader.withhold();
    await leader.ended;
    leader.dispose();
  });

  spawning('output is whole whether a FIFO ends before the worker watches it or after: closed at once, written early and late', async () => {
    // The worker leaves the FIFOs unwatched for 50 ms after the release
    // (spawner-output.ts STREAM_AFTER_MS), then reads to its end each whose
    // writers have all closed and streams the others: the sleeps put each
    // stream's last bytes after that instant.
    const closedEarly = await run(spawner, ['/bin/sh', '-c', 'printf early; exec >&-; sleep 0.3; printf late >&2']);
    assert.equal(closedEarly.end, { exit: 0, signal: null });
    assert.is(closedEarly.stdout.toString(), 'early');
    assert.is(closedEarly.stderr.toString(), 'late');
    const both = await run(spawner, ['/bin/sh', '-c', 'printf a; printf b >&2; sleep 0.3; printf c; exec >&-; printf d >&2; sleep 0.2; printf e >&2']);
    assert.is(both.stdout.toString(), 'ac');
    assert.is(both.stderr.toString(), 'bde');
    const quiet = await run(spawner, ['/bin/sh', '-c', 'exec >&- 2>&-; sleep 0.2']);
    assert.equal([quiet.end, quiet.stdout.length, quiet.stderr.length], [{ exit: 0, signal: null }, 0, 0]);
  });

  spawning('nothing runs before the release; a withheld leader exits 125 without running (EXEC-2)', async () => {
    const dir = await freshDir('fsjob-spawner');
    const marker = join(dir, 'ran');
    const { leader } = await launch(spawner, ['/usr/bin/touch', marker]);
    await delay(300);
    assert.not.ok(existsSync(marker), 'it ran before its release');
    leader.withhold();
    assert.equal(await leader.ended, { exit: 125, signal: null });
    leader.dispose();
    assert.not.ok(existsSync(marker));
  });

  spawning('stdin is the open file given, by descriptor; the working directory is cwd', async () => {
    const dir = await freshDir('fsjob-spawner');
    const { open, writeFile, rename } = await import('node:fs/promises');
    await writeFile(join(dir, 'in'), 'the input\n');
    const handle = await open(join(dir, 'in'), 'r');
    // The name moves on; the command still reads the file this process opened (EXEC-7, SEC-10).
    await rename(join(dir, 'in'), join(dir, 'moved'));
    await writeFile(join(dir, 'in'), 'another file\n');
    try {
      const out = await run(spawner, ['/bin/sh', '-c', 'cat; pwd -P'], { stdinFd: handle.fd, cwd: dir });
      assert.is(out.stdout.toString(), `the input\n${dir}\n`);
    } finally {
      await handle.close();
    }
  });

  spawning('a gate that cannot open its stdin or enter its cwd fails to start, runs nothing, and the spawner serves on (EXEC-2)', async () => {
    const dir = await freshDir('fsjob-spawner');
    const marker = join(dir, 'ran');
    // A descriptor this process does not hold (far above any it opens): its /proc/<pid>/fd/<n> cannot be opened
    // (bash's gate: a redirection of its own subshell; the sh chain's waiter: its exec).
    for (const extra of [{ stdinFd: 1_000_000 }, { cwd: join(dir, 'missing') }]) {
      const error = await rejectsWith(spawner.launch({ argv: ['/usr/bin/touch', marker], env: { PATH }, cwd: dir, stdinFd: null, ...extra }), 'IO', { clause: 'EXEC-2' });
      assert.match(error.message, /could not start the command group/);
    }
    assert.not.ok(existsSync(marker), 'a gate that failed to start ran its command');
    assert.equal((await run(spawner, ['/bin/sh', '-c', 'exit 4'])).end, { exit: 4, signal: null }, 'the next command runs');
  });

  spawning.run();
}

// Every chain this system offers: bash's where bash is installed, and /bin/sh's.
const probe = new Spawner();
const offered = (await probe.start()) === null ? probe.chains : new Set<Chain>();
await probe.close();
if (offered.has('bash')) spawningSuite('bash', undefined);
else console.log('# skipped: the bash chain (bash is not installed here, or its job control or environment check failed)');
spawningSuite('sh', '/bin/sh');

const inherited = suite('descriptors the worker inherited (EXEC-13)');
inherited.after(cleanupAll);

inherited('a descriptor the worker inherited without close-on-exec reaches no command of the bash chain', async () => {
  if (!offered.has('bash')) {
    console.log('# skipped: the bash chain is not offered here (the sh chain passes such descriptors on: spec/design-spawner.md)');
    return;
  }
  const queue = await freshQueue('fsjob-inherited');
  const id = await enqueue(queue, { argv: ['/bin/sh', '-c', 'if [ -e /proc/$$/fd/200 ]; then echo open; else echo closed; fi'] });
  // bash opens 200 without close-on-exec and execs the worker; node's spawn passes such a descriptor on to the spawner.
  const worker = spawnSync('/bin/bash', ['-c', 'exec 200</dev/null; exec "$@"', 'fsjob-test', ...FSJOB_ARGV, 'work', '--drain', '-q', queue.root], { encoding: 'utf8', timeout: 90_000 });
  assert.is(worker.status, 0, worker.stderr);
  assert.is(receiptOf(queue, id).outcome, 'succeeded');
  assert.is(readFileSync(queue.paths.jobFile(id, 'stdout.1'), 'utf8'), 'closed\n', 'descriptor 200 is not open in the command');
});

const dying = suite('a dead spawner, a dead waiter');
dying.after(cleanupAll);

dying("a spawner that dies takes its bash gates' exit statuses with it, not their commands; meanwhile requests fail; ensure() starts a new one", async () => {
  const own = new Spawner();
  try {
    assert.is(await own.start(), null);
    if (!own.chains.has('bash')) {
      console.log('# skipped: the bash chain is not offered here');
      return;
    }
    const first = own.pid as number;
    const { leader } = await launch(own, ['/bin/sleep', '30']);
    leader.release();
    process.kill(first, 'SIGKILL');
    await waitFor('the spawner seen dead', () => !own.healthy);
    const end = await leader.ended;
    assert.ok('lost' in end, `the status is lost: ${JSON.stringify(end)}`);
    assert.ok(alive(leader.pid), 'the command itself is the caller\'s to stop (command.ts stops its group as a dead owner\'s)');
    process.kill(-leader.pid, 'SIGKILL');
    leader.dispose();
    await rejectsWith(own.launch({ argv: ['/bin/true'], env: { PATH }, cwd: tmpdir(), stdinFd: null }), 'IO', { clause: 'EXEC-2' });
    assert.is(await own.ensure(), null);
    assert.is.not(own.pid, first);
    assert.equal((await run(own, ['/bin/sh', '-c', 'exit 3'])).end, { exit: 3, signal: null });
  } finally {
    await own.close();
  }
});

dying("a worker whose spawner is killed while bash-chain commands run ends their attempts as a dead owner's: groups stopped, counted, a lost receipt with no attempt left, a retry otherwise", async () => {
  const own = new Spawner();
  assert.is(await own.start(), null);
  const chains = own.chains;
  await own.close();
  if (!chains.has('bash')) {
    console.log('# skipped: the bash chain is not offered here');
    return;
  }
  const q = await freshQueue();
  const dir = await freshDir('fsjob-spawner');
  // The last attempt: nothing left to retry. The other runs again and then ends at once.
  const last = await enqueue(q, { argv: ['/bin/sleep', '30'], max_attempts: 1 });
  const retried = await enqueue(q, { argv: ['/bin/sh', '-c', `[ "$FSJOB_ATTEMPT" != 1 ] || exec /bin/sleep 30; echo again > ${dir}/again`], max_attempts: 2, retry_delay_ms: 0 });
  const spawner = new Spawner();
  const { worker, done } = serve(q, { concurrency: 2, spawner });
  try {
    // Both released: each group's leader became the command (a released gate execs it; EXEC-3 recorded it first).
    const groups = await waitFor('both commands running', () => {
      const found = [last, retried].map((id) => (existsSync(q.paths.jobFile(id, 'exec.1.json')) ? readJson<{ group: { pgid: number } }>(q.paths.jobFile(id, 'exec.1.json')).group.pgid : 0));
      return found.every((pgid) => pgid > 0 && comm(pgid) === 'sleep') ? found : undefined;
    });
    process.kill(spawner.pid as number, 'SIGKILL');
    const lost = await waitFor('the last attempt ended', () => (existsSync(q.paths.jobFile(last, 'receipt.json')) ? receiptOf(q, last) : undefined), 20_000);
    assert.is(lost.outcome, 'lost');
    assert.is(lost.reason, 'owner_lost');
    assert.is(lost.exit_code, 125);
    assert.is(lost.attempts, 1);
    const again = await waitFor('the retry finished', () => (existsSync(q.paths.jobFile(retried, 'receipt.json')) ? receiptOf(q, retried) : undefined), 20_000);
    assert.is(endOf(q, retried, 1).reason, 'failed');
    assert.is(endOf(q, retried, 1).counted, true);
    assert.is(again.outcome, 'succeeded');
    assert.is(again.gen, 2);
    assert.is(again.attempts, 2);
    assert.is(readFileSync(join(dir, 'again'), 'utf8'), 'again\n', 'a new spawner ran the retry');
    // An orphaned leader killed by the worker is a zombie until its new parent reaps it: gone, as ID-8 judges.
    for (const pgid of groups) assert.equal(groupMembers(pgid).filter(alive), [], `group ${pgid} is gone`);
  } finally {
    worker.stop();
    await done;
  }
});

dying("a spawner that dies takes no sh-chain command's status with it: its waiter still reports", async () => {
  const own = new Spawner({ shell: '/bin/sh' });
  try {
    assert.is(await own.start(), null);
    const { leader } = await launch(own, ['/bin/sh', '-c', 'sleep 1; exit 7']);
    leader.release();
    process.kill(own.pid as number, 'SIGKILL');
    await waitFor('the spawner seen dead', () => !own.healthy);
    assert.equal(await leader.ended, { exit: 7, signal: null }, 'its waiter still reported the exit status');
    leader.dispose();
  } finally {
    await own.close();
  }
});

dying('a waiter that dies takes the exit status with it: the attempt ends lost, its group still there for the caller to stop', async () => {
  const own = new Spawner({ shell: '/bin/sh' });
  try {
    assert.is(await own.start(), null);
    const { leader } = await launch(own, ['/bin/sleep', '30']);
    leader.release();
    // The spawner and its waiters share a process group; the commands each have their own.
    process.kill(-(own.pid as number), 'SIGKILL');
    const end = await leader.ended;
    assert.ok('lost' in end, `the status is lost: ${JSON.stringify(end)}`);
    assert.ok(alive(leader.pid), 'the command itself is not the spawner\'s to stop');
    process.kill(-leader.pid, 'SIGKILL');
    leader.dispose();
  } finally {
    await own.close();
  }
});

dying("bash's spawner runs no ~/.bashrc (bash sources it when its standard input is a socket, as node's pipes are)", async () => {
  const bash = ['/usr/local/bin/bash', '/usr/bin/bash', '/bin/bash'].find((p) => existsSync(p));
  if (bash === undefined) {
    console.log('# skipped: no bash');
    return;
  }
  const dir = await freshDir('fsjob-spawner');
  writeFileSync(join(dir, '.bashrc'), `: > ${dir}/sourced\n`);
  // A shell named bash (so the spawner frames its requests) that is bash with HOME here.
  mkdirSync(join(dir, 'bin'));
  writeFileSync(join(dir, 'bin', 'bash'), `#!/bin/sh\nHOME=${dir} exec ${bash} "$@"\n`, { mode: 0o755 });
  const own = new Spawner({ shell: join(dir, 'bin', 'bash') });
  try {
    assert.is(await own.start(), null);
    assert.equal((await run(own, ['/bin/sh', '-c', 'exit 4'])).end, { exit: 4, signal: null });
    assert.not.ok(existsSync(join(dir, 'sourced')), 'the spawner sourced ~/.bashrc');
  } finally {
    await own.close();
  }
});

dying('a gate (bash chain) or waiter (sh chain) that dies before the gate is reported: the launch fails (EXEC-2) and nothing of it runs', async () => {
  const own = new Spawner({ startLimitMs: 1_500 });
  const dir = await freshDir('fsjob-spawner');
  const marker = join(dir, 'ran');
  // The job's stdin is a FIFO of which this process holds only the read end: the waiter's open of it waits for a writer.
  const fifo = join(dir, 'stdin');
  assert.is(spawnSync('mkfifo', [fifo]).status, 0);
  const stdinFd = openSync(fifo, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
  try {
    assert.is(await own.start(), null);
    const spawnerPid = own.pid as number;
    const launched = own.launch({ argv: ['/usr/bin/touch', marker], env: { PATH }, cwd: tmpdir(), stdinFd });
    launched.catch(() => undefined); // awaited below; a failed step before must not leave it unhandled
    // The process that opens the FIFOs is a subshell of the spawner (besides the odd mkfifo): bash's gate, in a
    // group of its own, or the sh chain's waiter. Kill it only.
    const waiters = (): number[] => childrenOf(spawnerPid).filter((pid) => comm(pid) === comm(spawnerPid));
    await waitFor('the gate or waiter forked', () => waiters().length > 0);
    for (const pid of waiters()) process.kill(pid, 'SIGKILL');
    await rejectsWith(launched, 'IO', { clause: 'EXEC-2' });
    assert.ok(own.healthy, 'the spawner itself lives on');
    await delay(300);
    assert.not.ok(existsSync(marker), 'nothing of it ran');
  } finally {
    closeSync(stdinFd);
    await own.close();
  }
});

dying('a spawner whose worker died before it answered still exits through its EXIT trap, removing its FIFO directory', async () => {
  const worker = spawn(process.execPath, ['--import', 'tsx', 'test/support/fixtures/orphaned-spawner.ts'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const dir = await new Promise<string>((resolve) => worker.stdout.once('data', (d: Buffer) => resolve(String(d).trim())));
  await new Promise((resolve) => worker.once('exit', resolve));
  assert.ok(existsSync(dir), 'the directory is there while the spawner sleeps');
  // Its reply fails (SIGPIPE is ignored, not fatal); then end of file, the EXIT trap, and the directory goes.
  await waitFor('the directory removed', () => !existsSync(dir), 10_000);
});

inherited.run();
dying.run();
