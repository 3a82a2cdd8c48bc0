/**
 * How tests start the `fsjob` command: `node bin/fsjob.js`, which runs the
 * built dist/bin/fsjob.js when dist/ is built from the sources as they are.
 * Importing this module (helpers.ts and conformance.ts do) makes dist/
 * current first, once per test process: a JavaScript-only build, about a
 * second, when a source changed since the last one, else a stat of each
 * input. Without it a stale dist/ would send every start through tsx (a
 * second or more each), and the conformance sweeps start thousands.
 */
import { fileURLToPath } from 'node:url';
import { ensureDist } from '../../tools/build/build.ts';
import { builtKey } from '../../tools/build/inputs.mjs';

/** The command in this checkout; spawn it with process.execPath. */
export const FSJOB_BIN = fileURLToPath(new URL('../../bin/fsjob.js', import.meta.url));

await ensureDist({ types: false });
// Every fsjob this run starts (children inherit the variable) runs this dist/, even if a source
// changes meanwhile: the run tests one build, and does not drift into tsx halfway (bin/fsjob.js).
process.env['FSJOB_DIST_KEY'] = builtKey() ?? '';
