/**
 * The reference worker's gates where /bin/sh is bash (test/support/bash-sh.ts):
 * the spawner's bash chain, its sh chain (setsid, the gate's sh, env), and
 * node's own gate (launch.ts), which a worker uses for a job the bash chain
 * cannot take where the sh chain cannot run (setsid(1) taken away: /bin/false
 * bound over it). bash in sh mode takes its options from an exported
 * SHELLOPTS, keeps PPID read-only and exports SHLVL; dash does none of these,
 * and the records must be the same: each status as the command ended
 * (EXEC-10), the command's environment byte for byte the job's (EXEC-6), its
 * own process group (EXEC-2), nothing of a gate in its outputs.
 */
import { existsSync, readFileSync, realpathSync, symlinkSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Queue } from '../../src/model/queue.ts';
import { bashShUnavailable, underBashSh } from '../support/bash-sh.ts';
import { FSJOB_BIN } from '../support/cli.ts';
import { enqueue, freshQueue, type TestRequest } from '../support/enqueue.ts';
import { cleanupAll } from '../support/helpers.ts';

const gates = suite('the reference gates where /bin/sh is bash');
gates.after(cleanupAll);

/** Where the spawner finds setsid(1) (spawner-host.ts's PATH), each file once. */
const SETSIDS = [...new Set(['/usr/local/bin', '/usr/bin', '/bin'].map((dir) => path.join(dir, 'setsid')).filter((file) => existsSync(file)).map((file) => realpathSync(file)))];

/** The jobs of one run: statuses through each chain, and environments a shell would change. */
function requests(dir: string): Record<string, TestRequest> {
  const bin = path.join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  // A program named with '=' (env(1) would take it for an assignment) that prints its environment.
  symlinkSync('/bin/cat', path.join(bin, 'a=b'));
  // Sourced by a shell that reads BASH_ENV or ENV: it would write on the command's stderr.
  const rc = path.join(dir, 'rc');
  writeFileSync(rc, 'echo "sourced $0" >&2\n');
  const PATH = `${bin}:/usr/bin:/bin`;
  const HOME = dir;
  // PPID sends a job to the sh chain (bashChainFits); the others are what a shell sets or reads of its own.
  const shells = { PATH, HOME, PPID: '77', SHELLOPTS: 'xtrace', BASHOPTS: 'nullglob', IFS: 'x', OPTIND: '5', PWD: '/nowhere', BASH_ENV: rc, ENV: rc };
  const environ = '/proc/self/environ';
  return {
    bash0: { argv: ['/bin/cat', '/proc/self/stat'], env: { PATH, HOME } },
    bash137: { argv: ['/bin/sh', '-c', 'exit 137'], env: { PATH, HOME } },
    bashKilled: { argv: ['/bin/sh', '-c', 'kill -KILL $$'], env: { PATH, HOME } },
    bashEnv: { argv: ['/bin/cat', environ], env: { PATH, HOME, IFS: 'x', OPTIND: '5', ENV: rc } },
    sh0: { argv: ['/bin/cat', '/proc/self/stat'], env: { PATH, HOME, PPID: '77' } },
    sh137: { argv: ['/bin/sh', '-c', 'exit 137'], env: { PATH, HOME, PPID: '77' } },
    shKilled: { argv: ['/bin/sh', '-c', 'kill -KILL $$'], env: { PATH, HOME, PPID: '77' } },
    shEnv: { argv: ['/bin/cat', environ], env: shells },
    // Without PPID: SHELLOPTS alone sends it to the sh chain, where bash's gate traced itself into the job's stderr.
    shEquals: { argv: ['a=b', environ], env: Object.fromEntries(Object.entries(shells).filter(([name]) => name !== 'PPID')) },
  };
}

/** Enqueues the jobs, runs `fsjob work --drain` where /bin/sh is bash, and checks every job's records on disk. */
async function runAndCheck(queue: Queue, binds: readonly (readonly [string, string])[], ownSession: string): Promise<void> {
  const dir = path.dirname(queue.root);
  const jobs = requests(dir);
  const ids: Record<string, string> = {};
  for (const [name, request] of Object.entries(jobs)) ids[name] = await enqueue(queue, { ...request, cwd: dir });
  // The worker's own SHELLOPTS and BASHOPTS must not reach a gate either.
  const env = { ...process.env, FSJOB_QUEUE: '', SHELLOPTS: 'xtrace:nounset', BASHOPTS: 'nullglob:failglob' };
  const worked = underBashSh([process.execPath, FSJOB_BIN, 'work', '-q', queue.root, '--drain'], { env, binds });
  assert.is(worked.status, 0, worked.stderr);

  const file = (name: string, which: string): Buffer => readFileSync(queue.paths.jobFile(ids[name] as string, which));
  const outcome = (name: string): unknown => {
    const receipt = JSON.parse(file(name, 'receipt.json').toString()) as Record<string, unknown>;
    return [receipt['outcome'], receipt['exit_code'], receipt['status']];
  };
  for (const chain of ['bash', 'sh']) {
    assert.equal(outcome(`${chain}0`), ['succeeded', 0, { exit: 0, signal: null }], `${chain}0`);
    assert.equal(outcome(`${chain}137`), ['failed', 137, { exit: 137, signal: null }], `${chain}137: exit 137 is an exit status`);
    assert.equal(outcome(`${chain}Killed`), ['failed', 137, { exit: null, signal: 'SIGKILL' }], `${chain}Killed: death by SIGKILL is a signal`);
  }
  // EXEC-2: the leader of its own group; the sh chain and node's gate make a session too, bash's job control does not.
  const stat = (name: string): number[] => file(name, 'stdout.1').toString().replace(/\(.*\)/, 'x').split(' ').slice(0, 6).map(Number);
  const [bashPid, , , , bashPgid, bashSid] = stat('bash0');
  assert.ok(bashPgid === bashPid && bashSid !== bashPid, 'bash0: a group leader in the spawner\'s session (the bash chain)');
  const [shPid, , , , shPgid, shSid] = stat('sh0');
  assert.ok(shPgid === shPid && shSid === shPid, `sh0: the leader of its own group and session (${ownSession})`);

  for (const name of ['bashEnv', 'shEnv', 'shEquals']) {
    const expected = [...Object.entries(jobs[name]?.env ?? {}), ['FSJOB_JOB_ID', ids[name]], ['FSJOB_ATTEMPT', '1'], ['FSJOB_QUEUE', queue.root]].map(([k, v]) => `${k}=${v}`);
    assert.equal(outcome(name), ['succeeded', 0, { exit: 0, signal: null }], name);
    const seen = file(name, 'stdout.1').toString('latin1').split('\0').filter((entry) => entry !== '');
    assert.equal(seen.sort(), expected.sort(), `${name}: exactly the job's environment, byte for byte (EXEC-6)`);
  }
  for (const name of Object.keys(jobs)) assert.is(file(name, 'stderr.1').toString(), '', `${name}: nothing of a gate or a shell's start-up in its stderr`);
}

gates('through the spawner: the bash chain and the sh chain give dash\'s statuses and exactly the job\'s environment', async () => {
  const why = bashShUnavailable();
  if (why !== undefined) {
    console.log(`  skipped: ${why}`);
    return;
  }
  await runAndCheck(await freshQueue('fsjob-gate-bash'), [], 'the sh chain: setsid(1)');
});

gates('through node\'s own gate, where the spawner has no sh chain (no setsid(1)): the same', async () => {
  const why = bashShUnavailable() ?? (SETSIDS.length === 0 ? 'setsid(1) is not installed: the sh chain is never there to take away' : undefined);
  if (why !== undefined) {
    console.log(`  skipped: ${why}`);
    return;
  }
  // setsid failing makes the spawner offer the bash chain only (spawner.sh); a job the bash chain cannot take is node's.
  await runAndCheck(await freshQueue('fsjob-gate-bash'), SETSIDS.map((file) => ['/bin/false', file] as const), "node's gate: detached spawn");
});

gates.run();
