/**
 * src/fs/flush.ts: where an fsync runs. Inline (no thread hand-off) only
 * while at most one operation of the process is in flight; the steps of
 * `together` overlap on the pool but for the last; FSJOB_INLINE_FSYNC=0
 * turns the inline path off.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { beginOperation, fsyncFd, inlineNow, operationsInFlight, together } from '../../src/fs/flush.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';

const rule = suite('fsync inline or on the pool (flush.ts)');
rule.after(cleanupAll);

rule('one operation in flight may fsync inline; a second one sends every fsync to the pool until it ends', () => {
  const base = operationsInFlight();
  const first = beginOperation();
  assert.is(inlineNow(), base === 0);
  const second = beginOperation();
  assert.is(inlineNow(), false);
  second();
  second(); // a second end changes nothing
  assert.is(operationsInFlight(), base + 1);
  first();
  assert.is(operationsInFlight(), base);
});

rule('a pipelined batch (weight 2) never fsyncs inline, even alone', () => {
  const batch = beginOperation(2);
  assert.is(inlineNow(), false);
  batch();
});

rule('together: every step but the last starts with the inline path off; all are awaited, the first failure in order is thrown', async () => {
  const seen: boolean[] = [];
  const step = (fail?: string) => async (): Promise<void> => {
    seen.push(inlineNow());
    if (fail !== undefined) throw new Error(fail);
  };
  await together([step(), step(), step()]);
  assert.equal(seen, [false, false, operationsInFlight() <= 1]);
  let caught: unknown;
  try {
    await together([step(), step('second'), step('third')]);
  } catch (error) {
    caught = error;
  }
  assert.is((caught as Error).message, 'second');
});

rule('fsyncFd resolves for an open file and rejects with the errno for a bad descriptor, inline and on the pool alike', async () => {
  const dir = await freshDir('flush');
  for (const busy of [false, true]) {
    const other = busy ? beginOperation(2) : () => undefined;
    try {
      assert.is(inlineNow(), !busy && operationsInFlight() <= 1);
      const fd = openSync(join(dir, `f${busy}`), 'wx', 0o600);
      await fsyncFd(fd);
      closeSync(fd);
      const error = await fsyncFd(fd).then(
        () => undefined,
        (e: unknown) => e as NodeJS.ErrnoException,
      );
      assert.is(error?.code, 'EBADF', `a closed descriptor (${busy ? 'pool' : 'inline'})`);
    } finally {
      other();
    }
  }
});

rule('FSJOB_INLINE_FSYNC=0 turns the inline path off for the whole process', () => {
  const script = `import { inlineNow } from ${JSON.stringify(new URL('../../src/fs/flush.ts', import.meta.url).pathname)}; process.stdout.write(String(inlineNow()));`;
  const run = (value: string): string =>
    execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { env: { ...process.env, FSJOB_INLINE_FSYNC: value }, encoding: 'utf8' });
  assert.is(run('0'), 'false');
  assert.is(run('1'), 'true');
});

rule.run();
