/**
 * What an app that imports `fsjob/producer` carries when a bundler takes it
 * (issue 27 point 3): esbuild bundles the producer entry, and its metafile
 * says which modules went in. The producer checks the requests, the queue
 * record and the holds it meets by reading the schema documents
 * (src/records/interpret.ts); ajv's compiled validators (715 KB), the
 * consumer, the validator and the suite stay out. README.md ("Use it from
 * Node") states the sizes measured here.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { fileURLToPath } from 'node:url';
import { build, type Metafile } from 'esbuild';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * A bound, not a measurement: the whole entry bundles to about 362 KB (271 KB
 * for an app that only enqueues; the synchronous roads of the hot path,
 * enqueue-now.ts and the *Soon publications, added 12 KB, and the checks of
 * every option at the call, the callbacks' rejections, the pause calls and
 * the refusals' fields 21 KB more, 2026-12-05); the compiled validators alone
 * are 739 KB, so a bundle that took them in would be over a megabyte, far
 * past this bound.
 */
const ENTRY_MAX_BYTES = 400_000;

const NEVER: readonly [RegExp, string][] = [
  [/^src\/records\/generated\/validators\.js$/, "ajv's compiled validators"],
  [/^src\/records\/compiled\.ts$/, 'the module that registers them'],
  [/^src\/consumer\//, 'the consumer'],
  [/^src\/validator\//, 'the validator'],
  [/^src\/cli\//, 'the CLI'],
  [/^conformance\//, 'the conformance suite'],
  [/node_modules\/yargs/, 'yargs'],
];

async function bundle(contents: string, minify = false): Promise<{ bytes: number; inputs: string[] }> {
  const result = await build({
    stdin: { contents, resolveDir: ROOT, sourcefile: 'app.mjs', loader: 'js' },
    bundle: true,
    write: false,
    metafile: true,
    minify,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'silent',
    outfile: 'app.bundle.mjs',
  });
  const outputs = Object.values((result.metafile as Metafile).outputs);
  assert.is(outputs.length, 1);
  const output = outputs[0] as Metafile['outputs'][string];
  return { bytes: output.bytes, inputs: Object.keys(output.inputs) };
}

const producer = suite('fsjob/producer bundled');

producer('the whole entry bundles without the compiled validators, the consumer, the validator, the CLI or the suite', async () => {
  const { bytes, inputs } = await bundle("export * from './src/producer/index.ts';");
  for (const [pattern, what] of NEVER) {
    const found = inputs.filter((input) => pattern.test(input));
    assert.equal(found, [], `${what} is in the producer's bundle`);
  }
  assert.ok(inputs.includes('src/records/generated/documents.js'), 'the schema documents are (the producer checks requests with them)');
  assert.ok(bytes <= ENTRY_MAX_BYTES, `the producer entry bundles to ${bytes} bytes, over ${ENTRY_MAX_BYTES}`);
});

producer('an app that opens a queue and enqueues bundles to less than the whole entry, and smaller again minified', async () => {
  const app = "import { openQueue, enqueue } from './src/producer/index.ts';\nconst queue = await openQueue(process.argv[2]);\nconsole.log((await enqueue(queue, { argv: ['true'] })).id);\n";
  const whole = await bundle("export * from './src/producer/index.ts';");
  const plain = await bundle(app);
  const minified = await bundle(app, true);
  assert.ok(plain.bytes < whole.bytes, `${plain.bytes} < ${whole.bytes}`);
  assert.ok(minified.bytes < plain.bytes, `${minified.bytes} < ${plain.bytes}`);
  assert.not.ok(plain.inputs.some((input) => input.includes('generated/validators')));
});

producer.run();
