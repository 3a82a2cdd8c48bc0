// Installs the benchmark's own dependencies (bench/package.json) into
// bench/node_modules once, with `npm ci --prefix bench`; `npm run bench`
// runs this first. better-sqlite3 is a native addon: where no prebuilt
// binary can be fetched its install script compiles it, which needs a C++
// toolchain. It lives here, not in the repository's package.json, so that
// `npm ci` there never needs one. A failed install is reported and the bench
// goes on: the SQLite baseline is then skipped with the reason.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BENCH = fileURLToPath(new URL('.', import.meta.url));

if (existsSync(join(BENCH, 'node_modules', 'better-sqlite3', 'package.json'))) process.exit(0);
process.stdout.write('bench/setup.mjs: installing the bench dependencies (better-sqlite3) into bench/node_modules\n');
const run = spawnSync('npm', ['ci', '--prefix', BENCH, '--no-audit', '--no-fund'], { stdio: 'inherit' });
if (run.status !== 0) {
  process.stdout.write('bench/setup.mjs: the install failed (see above); the SQLite baseline will be skipped\n');
}
