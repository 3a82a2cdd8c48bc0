/**
 * A queue whose tmp/ is not on the mount of jobs/ (issue 19 point 7,
 * LAYOUT-3): a real second filesystem (a tmpfs) mounted over tmp/, and a bind
 * mount of the same filesystem (equal st_dev, but rename(2) still fails with
 * EXDEV). `fsjob validate` reports it (QUEUE_TMP_OTHER_FS, exit 1), enqueue
 * fails with a message that names the cause and leaves nothing behind, and
 * once the mount is gone the queue is clean again. Skipped, with the reason
 * printed, where mount(2) is not allowed.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { assertNoCrash, fsjobCli } from '../support/faults.ts';

/** Mounts over `target` (mount(8) arguments before the target); false, with the reason printed, where that is not allowed. */
function mountOver(target: string, args: string[], label: string): boolean {
  const done = spawnSync('mount', [...args, target], { encoding: 'utf8' });
  if (done.status === 0) return true;
  console.log(`SKIP ${label}: mount ${args.join(' ')} failed (exit ${String(done.status)}: ${(done.stderr ?? done.error?.message ?? '').trim()}); this needs root and mount(2)`);
  return false;
}

const layout = suite('hostile: tmp/ on another mount than jobs/ (LAYOUT-3)');
layout.after(cleanupAll);

const MOUNTS: [string, (scratch: string) => string[], boolean][] = [
  ['a tmpfs mounted over tmp/ (another st_dev)', () => ['-t', 'tmpfs', '-o', 'size=1m,mode=0700', 'tmpfs'], true],
  ['a bind mount of the same filesystem over tmp/ (equal st_dev)', (scratch) => ['--bind', scratch], false],
];

for (const [what, args, otherDevice] of MOUNTS) {
  layout(`${what}: validate reports QUEUE_TMP_OTHER_FS, enqueue fails naming EXDEV and leaves nothing; clean once unmounted`, async () => {
    const dir = await freshDir('fsjob-layout3');
    const root = join(dir, 'q');
    const scratch = join(dir, 'elsewhere');
    mkdirSync(scratch, { mode: 0o700 });
    assert.is(fsjobCli(['init', '--queue', root]).status, 0);
    const tmp = join(root, 'tmp');
    if (!mountOver(tmp, args(scratch), what)) return;
    try {
      assert.is(statSync(tmp).dev !== statSync(join(root, 'jobs')).dev, otherDevice, 'the device numbers are as the case says');
      const audit = fsjobCli(['validate', '--json', root]);
      assertNoCrash(audit, 'validate');
      assert.is(audit.status, 1, audit.stdout);
      const findings = (JSON.parse(audit.stdout) as { findings: { code: string; clause: string; path: string }[] }).findings;
      assert.equal(findings.map((f) => [f.code, f.clause, f.path]), [['QUEUE_TMP_OTHER_FS', 'LAYOUT-3', tmp]]);
      const enqueued = fsjobCli(['enqueue', '--queue', root, '--', 'true']);
      assertNoCrash(enqueued, 'enqueue');
      assert.is(enqueued.status, 1, enqueued.stderr);
      assert.match(enqueued.stderr, /EXDEV.*tmp\/ and jobs\/ must be on one filesystem/);
      assert.equal(readdirSync(join(root, 'jobs')), [], 'no job was published');
      assert.equal(readdirSync(tmp), [], 'nothing was left staged');
    } finally {
      spawnSync('umount', [tmp]);
    }
    assert.is(fsjobCli(['validate', root]).status, 0, 'clean once unmounted');
  });
}

layout.run();
