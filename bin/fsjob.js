#!/usr/bin/env node
// The fsjob command in a checkout of this repository (`node bin/fsjob.js`).
// It runs the built command, dist/bin/fsjob.js, when dist/ is built from the
// sources as they are now (a stat of each input, about a millisecond: see
// tools/build/inputs.mjs). Otherwise it runs the sources themselves through
// tsx, correct but slow (a second or more per start), and says so:
// `npm run build` (or `npm test`, which builds first) makes starts fast again.
// FSJOB_TSX=1 asks for the sources without the note. The installed package
// has no such choice: its bin is dist/bin/fsjob.js.
import { distIsCurrent } from '../tools/build/inputs.mjs';

if (process.env.FSJOB_TSX !== '1' && distIsCurrent()) {
  await import('../dist/bin/fsjob.js');
} else {
  if (process.env.FSJOB_TSX !== '1') process.stderr.write('fsjob: dist/ is not built from these sources; running them through tsx, slowly (npm run build)\n');
  const { register } = await import('tsx/esm/api');
  register();
  await import('./fsjob.ts');
}
