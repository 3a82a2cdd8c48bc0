/**
 * `fsjob logs --json` says whether the job is finished beside the bytes it
 * read. A job that finishes while they are read (its last bytes appended,
 * then its receipt published, RCPT-2 before RCPT-3) must not be reported
 * finished beside the part read before: a script that polls until
 * `finished` and then takes `text` would lose the end of the output. The
 * interleaving is forced through the filesystem seam: the job finishes the
 * moment the output file is closed after its read.
 */
import { appendFileSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import * as nodeFs from 'node:fs/promises';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { logsJson } from '../../src/cli/commands/logs-run.ts';
import { realReads, type SafeFsSeam } from '../../src/fs/safefs.ts';
import { selfIdentity } from '../../src/model/identity.ts';
import { enqueue } from '../../src/producer/index.ts';
import { encodeRecord } from '../../src/records/codec.ts';
import { receiptRecord } from '../../conformance/runner/fixtures.ts';
import { cleanupAll } from '../support/helpers.ts';
import { freshQueue, withSeam, writeClaim, writeExec, writeOutput } from '../support/producer.ts';

const logs = suite('logs --json: finished only beside the whole output');
logs.after(cleanupAll);

logs('the job finishes while its output is read: finished false with the part read, or true with every byte', async () => {
  const queue = await freshQueue('fsjob-logs-json');
  const { id } = await enqueue(queue, { argv: ['true'] });
  await writeClaim(queue, id, 1);
  await writeExec(queue, id, 1, 1);
  await (await writeOutput(queue, id, 'stdout', 1, 'out\n')).close();
  const whole = 'out\nmore\n';
  const receipt = encodeRecord(
    'receipt',
    receiptRecord(id, 1, await selfIdentity(), {
      stdout: { gen: 1, bytes_total: whole.length, bytes_kept: whole.length, truncated: false, sha256: createHash('sha256').update(whole).digest('hex') },
      stderr: null,
    }),
  );
  const output = queue.paths.jobFile(id, 'stdout.1');
  const opened = new Set<number>();
  let finished = false;
  const seam: SafeFsSeam = {
    ...(nodeFs as unknown as SafeFsSeam),
    reads: {
      ...realReads,
      open: (path, flags) => {
        const fd = realReads.open(path, flags);
        if (path === output) opened.add(fd);
        return fd;
      },
      close: (fd) => {
        realReads.close(fd);
        // The first read of the output is done: the job writes its last bytes and finishes (RCPT-2, RCPT-3).
        if (opened.delete(fd) && !finished) {
          finished = true;
          appendFileSync(output, 'more\n');
          writeFileSync(queue.paths.jobFile(id, 'receipt.json'), receipt, { mode: 0o600 });
        }
      },
    },
  };
  const report = (await logsJson(await withSeam(queue.root, seam), id, 'stdout')) as { finished: boolean; text: string };
  assert.ok(finished, 'the job finished during the read');
  assert.ok(!report.finished || report.text === whole, `finished ${String(report.finished)} beside ${JSON.stringify(report.text)}`);
  assert.is(report.text.startsWith('out\n'), true);
});

logs.run();
