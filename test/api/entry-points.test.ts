/**
 * The package's entry points as built (dist/src/, what `exports` names): one
 * FsjobError class whichever entry an error comes from, so `instanceof` and
 * isFsjobError hold across them (a consumer's error caught by code that
 * imported the class from the producer entry, and the reverse). Each entry
 * that throws exports the class.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { isFsjobError } from '../../src/base/errors.ts';

const DIST = fileURLToPath(new URL('../../dist/src/', import.meta.url));
const ENTRIES = ['index.js', 'producer/index.js', 'consumer/index.js', 'validator/index.js', 'records/index.js'];

const entries = suite('entry points');

entries('every entry point exports the one FsjobError class, and an error of one is an instance of all', async () => {
  if (!existsSync(`${DIST}index.js`)) {
    console.log('  skipped: dist/ is not built (npm run build)');
    return;
  }
  const loaded = await Promise.all(ENTRIES.map(async (entry) => (await import(`${DIST}${entry}`)) as { FsjobError: new (code: string, message: string) => Error; isFsjobError: (value: unknown) => boolean }));
  const classes = new Set(loaded.map((module) => module.FsjobError));
  assert.is(classes.size, 1, 'one class');
  const producer = loaded[1] as (typeof loaded)[number];
  const consumer = (await import(`${DIST}consumer/index.js`)) as { Worker: new (options: unknown) => unknown };
  let thrown: unknown;
  try {
    new consumer.Worker({ queues: [] });
  } catch (error) {
    thrown = error;
  }
  assert.ok(thrown instanceof producer.FsjobError, "the consumer's error is the producer entry's class");
  for (const module of loaded) assert.ok(module.isFsjobError(thrown));
  // And the sources' brand check knows the built class's errors (another copy of the module).
  assert.ok(isFsjobError(thrown, 'USAGE'));
});

entries.run();
