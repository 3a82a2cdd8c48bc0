#!/usr/bin/env node
// The fsjob command in a checkout of this repository (`node bin/fsjob.js`).
// It runs the built command, dist/bin/fsjob.js, when dist/ is built from the
// sources as they are now (a stat of each input, about a millisecond: see
// tools/build/inputs.mjs). Otherwise it runs the sources themselves through
// tsx, correct but slow (a second or more per start), and says so:
// `npm run build` (or `npm test`, which builds first) makes starts fast again.
// FSJOB_TSX=1 asks for the sources without the note. FSJOB_DIST_KEY=<key>
// vouches for a dist/ whose .source-key is <key>: the test support sets it
// once it has built dist/, so a source edited while the tests run does not
// switch the rest of the run to tsx. The installed package has no such
// choice: its bin is dist/bin/fsjob.js.
//
// A CommonJS script (bin/package.json says so), as dist/bin/fsjob.js is:
// an ES module entry would start node's ES module loader, and with it
// libuv's thread pool, before a line of it ran, so the built command could
// no longer size the pool for `fsjob work` (src/cli/thread-pool.ts); and
// node starts a CommonJS script sooner. It loads the built command with
// require(), which runs it in this process at once. inputs.mjs is an ES
// module without top-level await: require() loads it synchronously,
// without the pool (node 20.19 and later, without a warning). The sources
// through tsx run with libuv's default pool.
'use strict';
const { builtKey, distIsCurrent } = require('../tools/build/inputs.mjs');

const vouched = process.env.FSJOB_DIST_KEY;
const useDist = process.env.FSJOB_TSX !== '1' && ((vouched !== undefined && vouched !== '' && vouched === builtKey()) || distIsCurrent());
if (useDist) {
  require('../dist/bin/fsjob.js');
} else {
  if (process.env.FSJOB_TSX !== '1') process.stderr.write('fsjob: dist/ is not built from these sources; running them through tsx, slowly (npm run build)\n');
  import('tsx/esm/api')
    .then(({ register }) => {
      register();
      return import('./fsjob.mts');
    })
    .catch((error) => {
      process.stderr.write(`fsjob: cannot start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exitCode = 1;
    });
}
