/**
 * fsjob-sh where /bin/sh is bash (Fedora, Arch, macOS): bash bound over
 * /bin/sh in a private mount namespace, so that fsjob-sh, its leaders and its
 * guardian all run bash in sh mode, with SHELLOPTS and BASHOPTS exported to
 * the consumer. bash reports job statuses its own way (it drops a job that
 * died of a signal from `jobs -l`), keeps PPID read-only, and takes options
 * from SHELLOPTS; dash does none of these, and the records must be the same:
 * each status as the command ended (EXEC-10), the command's environment
 * exactly the job's (EXEC-6), nothing of the shell's in the outputs.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { FSJOB_SH as SH, SH_WATCHDOG_MS as WATCHDOG_MS, shTestDirs } from '../support/fsjob-sh.ts';

const bashSh = suite('fsjob-sh where /bin/sh is bash');

const BASH = ['/bin/bash', '/usr/bin/bash'].find((file) => spawnSync(file, ['-c', ':']).status === 0);
/** unshare's options for a private mount namespace (a user namespace too, unless root). */
const UNSHARE = process.getuid?.() === 0 ? ['-m'] : ['-Urm'];

/** Runs ARGS where /bin/sh is bash. */
function underBash(args: string[], env: NodeJS.ProcessEnv = process.env): SpawnSyncReturns<string> {
  return spawnSync('unshare', [...UNSHARE, 'sh', '-c', 'mount --bind "$0" /bin/sh && exec "$@"', BASH ?? 'bash', ...args], { encoding: 'utf8', timeout: WATCHDOG_MS, env });
}

function unavailable(): string | undefined {
  if (BASH === undefined) return 'bash is not installed';
  const probe = underBash(['/bin/sh', '-c', 'printf %s "$BASH_VERSION"']);
  if (probe.status !== 0 || probe.stdout === '') return `cannot bind bash over /bin/sh in a mount namespace (unshare ${UNSHARE.join(' ')}: ${probe.stderr.trim() || probe.error?.message})`;
  return undefined;
}

const dir = shTestDirs(bashSh, 'fsjob-sh-bash');

bashSh('statuses, an exact environment and clean outputs under bash as sh, with SHELLOPTS=xtrace exported', () => {
  const why = unavailable();
  if (why !== undefined) {
    console.log(`  skipped: ${why}`);
    return;
  }
  const base = dir();
  const queue = path.join(base, 'q');
  const bin = path.join(base, 'bin');
  mkdirSync(bin);
  // A program named with '=' that prints its environment: env(1) itself.
  symlinkSync('/usr/bin/env', path.join(bin, 'a=b'));
  const env = { PATH: `${bin}:/usr/bin:/bin`, HOME: base, PPID: '77', IFS: 'x', OPTIND: '5', SHELLOPTS: 'xtrace' };
  const requests = {
    exit0: { argv: ['sh', '-c', 'exit 0'] },
    exit137: { argv: ['sh', '-c', 'exit 137'] },
    killed: { argv: ['sh', '-c', 'kill -KILL $$'] },
    equals: { argv: ['a=b'], env },
  };
  const consumerEnv = { ...process.env, SHELLOPTS: 'xtrace:nounset', BASHOPTS: 'nullglob:failglob' };
  assert.is(underBash([SH, 'init', queue], consumerEnv).status, 0);
  const ids = Object.fromEntries(
    Object.entries(requests).map(([name, request]) => {
      const file = path.join(base, `${name}.json`);
      writeFileSync(file, `${JSON.stringify({ ...request, cwd: base })}\n`);
      const produced = underBash([SH, 'produce', queue, file], consumerEnv);
      assert.is(produced.status, 0, produced.stderr);
      return [name, produced.stdout.trim()];
    }),
  ) as Record<keyof typeof requests, string>;
  const consumed = underBash([SH, 'consume', queue], consumerEnv);
  assert.is(consumed.status, 0, consumed.stderr);
  assert.not.match(consumed.stderr, /Killed|unknown status/, 'bash noted no job and every status was read');

  const job = (name: keyof typeof requests, file: string): string => readFileSync(path.join(queue, 'jobs', ids[name], file), 'utf8');
  const outcome = (name: keyof typeof requests): unknown => {
    const receipt = JSON.parse(job(name, 'receipt.json')) as Record<string, unknown>;
    return [receipt['outcome'], receipt['exit_code'], receipt['status']];
  };
  assert.equal(outcome('exit0'), ['succeeded', 0, { exit: 0, signal: null }]);
  assert.equal(outcome('exit137'), ['failed', 137, { exit: 137, signal: null }], 'exit 137 is an exit status');
  assert.equal(outcome('killed'), ['failed', 137, { exit: null, signal: 'SIGKILL' }], 'death by SIGKILL is a signal');
  assert.equal(outcome('equals'), ['succeeded', 0, { exit: 0, signal: null }]);
  const expected = [...Object.entries(env), ['FSJOB_JOB_ID', ids.equals], ['FSJOB_ATTEMPT', '1'], ['FSJOB_QUEUE', queue]].map(([k, v]) => `${k}=${v}`);
  assert.equal(job('equals', 'stdout.1').split('\n').filter((line) => line !== '').sort(), expected.sort(), 'exactly the job environment (EXEC-6)');
  for (const name of Object.keys(requests) as (keyof typeof requests)[]) assert.is(job(name, 'stderr.1'), '', `${name}: no trace of a shell in its stderr`);
  assert.equal(readdirSync(path.join(queue, 'ready')), [], 'every job finished');
});

bashSh.run();
