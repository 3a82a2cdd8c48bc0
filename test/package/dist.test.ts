/**
 * dist/ as built (test/support/cli.ts keeps it current): the one module that
 * starts another file at run time, the validator's scan worker, finds its
 * compiled worker beside it (both in dist/bin/chunks/, tools/build/cli-bundle.ts), and the audit it makes in threads is the one
 * it makes inline.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cleanupAll, freshDir } from '../support/helpers.ts';

const DIST = fileURLToPath(new URL('../../dist/', import.meta.url));

const dist = suite('dist/');
dist.after(cleanupAll);

dist('the validator runs its scan in worker threads from dist/ (scan-worker.js), with the findings of the inline scan', async () => {
  assert.ok(existsSync(join(DIST, 'bin', 'chunks', 'scan-worker.js')));
  assert.not.ok(existsSync(join(DIST, 'bin', 'chunks', 'scan-worker-entry.mjs')), 'the tsx shim of the sources is not built');
  const dir = await freshDir('dist-audit');
  const script = join(dir, 'audit.mjs');
  await writeFile(
    script,
    `import { initQueue, enqueue } from ${JSON.stringify(join(DIST, 'src', 'producer', 'index.js'))};
import { auditQueue } from ${JSON.stringify(join(DIST, 'src', 'validator', 'index.js'))};
const queue = await initQueue(process.argv[2]);
for (let i = 0; i < 6; i++) await enqueue(queue, { argv: ['true'] });
const inline = await auditQueue(queue.root, { threads: 1 });
const threaded = await auditQueue(queue.root, { threads: 2, mainThreadScans: false });
process.stdout.write(JSON.stringify({ inline: [inline.jobs, inline.findings], threaded: [threaded.jobs, threaded.findings] }));
`,
  );
  const out = JSON.parse(execFileSync(process.execPath, [script, join(dir, 'q')], { encoding: 'utf8', timeout: 120_000 })) as { inline: unknown; threaded: unknown };
  assert.equal(out.threaded, out.inline);
  assert.is((out.inline as [number, unknown])[0], 6);
});

dist.run();
