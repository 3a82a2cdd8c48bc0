/**
 * A fresh app that installs a packed fsjob tarball the way a user's project
 * would (`npm ci` of a package.json naming the tarball), offline: every
 * dependency comes from the local npm cache, which `npm ci` of this
 * repository filled.
 *
 * `npm install --offline ./fsjob.tgz` cannot do this: resolving the
 * tarball's version ranges needs the registry's package documents, which
 * `npm ci` never fetches (it installs from the lockfile). So the app gets a
 * lockfile too, made from this repository's: the tarball's dependency
 * closure, each package at the location and version it has here, with its
 * integrity, which is all `npm ci --offline` needs to take it from the cache.
 * Used by test/package/ (the CI proof) and bench/package.bench.ts.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import fse from 'fs-extra';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const REPO = fileURLToPath(new URL('../../', import.meta.url));

interface LockEntry {
  version?: string;
  resolved?: string;
  integrity?: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  optional?: boolean;
  dev?: boolean;
  devOptional?: boolean;
  [key: string]: unknown;
}

interface PackageJson {
  name: string;
  version: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  bin?: Record<string, string> | string;
  engines?: Record<string, string>;
  license?: string;
}

/**
 * `npm pack` of this repository into `dest`; resolves to the tarball's path.
 * `ignoreScripts` skips prepare (the caller built dist/) but also prepack,
 * which writes the shipped package.json (tools/package/manifest.mjs): such a
 * tarball still carries the repository's scripts.
 */
export async function packRepo(dest: string, options: { ignoreScripts?: boolean } = {}): Promise<string> {
  const args = ['pack', '--json', '--pack-destination', dest, ...(options.ignoreScripts === true ? ['--ignore-scripts'] : [])];
  const { stdout } = await run('npm', args, { cwd: REPO, maxBuffer: 64 * 1024 * 1024 });
  // npm prints the lifecycle scripts' output before the JSON when it runs them.
  const json = JSON.parse(stdout.slice(stdout.indexOf('[\n'))) as { filename: string }[];
  const name = json[0]?.filename;
  if (name === undefined) throw new Error(`npm pack printed no file name: ${stdout.slice(0, 500)}`);
  return path.join(dest, name);
}

/** Reads package.json out of a tarball (npm's layout: package/package.json). */
async function tarballManifest(tarball: string): Promise<PackageJson> {
  const { stdout } = await run('tar', ['-xzOf', tarball, 'package/package.json'], { maxBuffer: 16 * 1024 * 1024 });
  return JSON.parse(stdout) as PackageJson;
}

/** Where Node would find `name` from the package at `from` (a lockfile location such as node_modules/a). */
function locate(packages: Record<string, LockEntry>, from: string, name: string): string | undefined {
  let base = from;
  for (;;) {
    const candidate = base === '' ? `node_modules/${name}` : `${base}/node_modules/${name}`;
    if (packages[candidate] !== undefined) return candidate;
    if (base === '') return undefined;
    const cut = base.lastIndexOf('/node_modules/');
    base = cut < 0 ? '' : base.slice(0, cut);
  }
}

/** The lockfile entries of `roots` (names the repository root depends on) and everything they depend on. */
function closure(packages: Record<string, LockEntry>, roots: readonly string[]): Map<string, LockEntry> {
  const found = new Map<string, LockEntry>();
  const pending: [string, string, boolean][] = roots.map((name) => ['', name, false]);
  while (pending.length > 0) {
    const [from, name, optional] = pending.pop() as [string, string, boolean];
    const at = locate(packages, from, name);
    if (at === undefined) {
      if (optional) continue; // an optional dependency for another platform
      throw new Error(`${name} (needed by ${from || 'the package'}) is not in package-lock.json: run npm ci`);
    }
    if (found.has(at)) continue;
    const entry = packages[at] as LockEntry;
    found.set(at, entry);
    for (const dep of Object.keys(entry.dependencies ?? {})) pending.push([at, dep, false]);
    for (const dep of Object.keys(entry.optionalDependencies ?? {})) pending.push([at, dep, true]);
  }
  return found;
}

export interface FreshApp {
  dir: string;
  /** The installed package: dir/node_modules/fsjob. */
  packageDir: string;
  /** The installed command: dir/node_modules/.bin/fsjob. */
  bin: string;
  /** What `npm ci` printed (stdout and stderr): a warning about the package shows here. */
  npmOutput: string;
}

/**
 * Makes a new directory under `parent` (default: the system temp dir) with a
 * package.json that depends on `tarball` (plus `extra`, names this repository
 * has in its lockfile, e.g. @types/node for a TypeScript check) and a
 * lockfile for them, and runs `npm ci --offline` there.
 */
export async function freshApp(tarball: string, options: { extra?: readonly string[]; parent?: string; ignoreScripts?: boolean } = {}): Promise<FreshApp> {
  const dir = await mkdtemp(path.join(options.parent ?? tmpdir(), 'fsjob-app-'));
  const manifest = await tarballManifest(tarball);
  const repoLock = JSON.parse(await readFile(path.join(REPO, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const packages = repoLock.packages;
  const runtime = [...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.optionalDependencies ?? {})];
  const extra = options.extra ?? [];
  const spec = `file:${path.basename(tarball)}`;
  const bytes = await readFile(tarball);
  await fse.copy(tarball, path.join(dir, path.basename(tarball)));

  const lockPackages: Record<string, LockEntry> = {
    '': { name: 'app', version: '1.0.0', dependencies: { [manifest.name]: spec, ...Object.fromEntries(extra.map((name) => [name, packages[`node_modules/${name}`]?.version ?? '*'])) } },
    [`node_modules/${manifest.name}`]: {
      version: manifest.version,
      resolved: spec,
      integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`,
      ...(manifest.dependencies === undefined ? {} : { dependencies: manifest.dependencies }),
      ...(manifest.optionalDependencies === undefined ? {} : { optionalDependencies: manifest.optionalDependencies }),
      ...(manifest.bin === undefined ? {} : { bin: typeof manifest.bin === 'string' ? { [manifest.name]: manifest.bin } : manifest.bin }),
      ...(manifest.engines === undefined ? {} : { engines: manifest.engines }),
      ...(manifest.license === undefined ? {} : { license: manifest.license }),
    },
  };
  for (const [at, entry] of closure(packages, [...runtime, ...extra])) {
    const { dev: _dev, devOptional: _devOptional, ...kept } = entry;
    lockPackages[at] = kept;
  }
  const appJson = { name: 'app', version: '1.0.0', private: true, type: 'module', dependencies: lockPackages['']?.dependencies };
  await fse.writeJson(path.join(dir, 'package.json'), appJson, { spaces: 2 });
  await fse.writeJson(path.join(dir, 'package-lock.json'), { name: 'app', version: '1.0.0', lockfileVersion: 3, requires: true, packages: lockPackages }, { spaces: 2 });
  const args = ['ci', '--offline', '--no-audit', '--no-fund', ...(options.ignoreScripts === true ? ['--ignore-scripts'] : [])];
  const { stdout, stderr } = await run('npm', args, { cwd: dir, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, npm_config_update_notifier: 'false' } });
  return { dir, packageDir: path.join(dir, 'node_modules', manifest.name), bin: path.join(dir, 'node_modules', '.bin', manifest.name), npmOutput: `${stdout}${stderr}` };
}
