/**
 * The start-up cache of `fsjob enqueue` (issue 29 target 2: a call costs at
 * most 1.5x a `node -e 0`). Loading code, not running it, was most of a
 * call: node 20 compiles every module on every start (it has no compile
 * cache; module.enableCompileCache is node 22), and its ES module loader
 * resolves, reads and links each of the ~25 files the command needs one by
 * one. A V8 code cache is the one lever left, and V8 takes one only for a
 * classic script (vm.Script's cachedData; an ES module needs
 * --experimental-vm-modules). So the build makes the enqueue command,
 * main.ts and yargs into one classic script (src/cli/start-script.ts is
 * its entry), and a call runs that script with the code V8 compiled for
 * it on an earlier call, as v8-compile-cache does for CommonJS.
 *
 * The package ships the script compressed (dist/bin/enqueue-start.js.br,
 * brotli, ~85 KB; it holds again code that dist/bin/chunks/ holds as ES modules
 * for the library, and the install stays under 3 MB). The first call
 * writes it out into the user's cache directory, $XDG_CACHE_HOME/fsjob
 * or ~/.cache/fsjob, and after the command the code V8 compiled for it
 * (V8's createCachedData, which holds what ran); later calls read both.
 * File names carry the script's digest (the build's), and the code's also
 * node's and V8's versions and the architecture; V8 itself refuses code of
 * another V8 or other flags (cachedDataRejected), which is then written
 * anew.
 *
 * A cache is never worth a failed command: any error here (no HOME, a
 * read-only or full disk, a directory that is not ours) makes the call
 * take the ES modules of dist/bin/chunks/, as every other command does.
 * FSJOB_NO_CACHE=1 asks for that path always. What is read must be ours:
 * the directory is made mode 0700, lstat-ed (a symlink is refused) and
 * must be owned by this user and writable by nobody else; each file is
 * opened O_NOFOLLOW and fstat-ed the same way (a file owned by this user
 * cannot have been put there by another), and the script must have the
 * size the build wrote. Files are written whole: a temporary, fsync,
 * rename. Old scripts are pruned: the newest KEEP_SCRIPTS stay.
 *
 * Only node: built-ins here, and nothing heavy: this runs on every
 * enqueue, before anything else is loaded. (dist/bin/fsjob.js, which
 * bundles it, is a CommonJS script: its imports of built-ins are
 * require()s; an ES module's would make each built-in's facade, which
 * reads every export, and node:fs's ReadStream getter loads node's
 * streams.)
 */
import { closeSync, constants, fstatSync, fsyncSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Script } from 'node:vm';
import { commandName } from './command-name.ts';

/** What the build says of the start-up script it made (tools/build/cli-bundle.ts); absent when run from the sources. */
export interface StartScript {
  /** The command it serves, and the stem of its files. */
  name: string;
  /** The first 16 hex digits of its SHA-256. */
  hash: string;
  /** Its length in bytes (ASCII). */
  bytes: number;
}

/** How many scripts (with their code) the cache directory keeps: one per build of fsjob in use. */
const KEEP_SCRIPTS = 8;

/**
 * Whether the start-up script serves this command line: the command is
 * `enqueue`, wherever yargs finds it (after options and their values too,
 * command-name.ts), and no help is asked for (the script lays out no
 * help: its yargs has no layout modules, tools/build/cli-bundle.ts). Any
 * other command line loads the ES modules; both run the same code.
 */
export function servedByStartScript(argv: readonly string[]): boolean {
  if (commandName(argv) !== 'enqueue') return false;
  const end = argv.indexOf('--');
  return !(end === -1 ? argv : argv.slice(0, end)).some((arg) => arg === '--help' || arg === '-h' || arg.startsWith('--help='));
}

/** $XDG_CACHE_HOME where it names a directory by an absolute path (XDG: a relative one is ignored). */
function xdgCacheHome(env: NodeJS.ProcessEnv): string | undefined {
  const xdg = env['XDG_CACHE_HOME'];
  // resolve: the directory's dirname is compared with it (a trailing slash, a "..").
  return xdg !== undefined && path.isAbsolute(xdg) ? path.resolve(xdg) : undefined;
}

/** The cache directory, or undefined when the environment names none (or FSJOB_NO_CACHE asks for none). */
export function cacheDirectory(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const off = env['FSJOB_NO_CACHE'];
  if (off !== undefined && off !== '' && off !== '0') return undefined;
  const xdg = xdgCacheHome(env);
  if (xdg !== undefined) return path.join(xdg, 'fsjob');
  const home = env['HOME'];
  return home !== undefined && path.isAbsolute(home) ? path.join(home, '.cache', 'fsjob') : undefined;
}

/** Refuses what another user could have written: not ours, or writable by group or others. */
function checkOurs(stats: { uid: number; mode: number }, what: string): void {
  const uid = process.getuid?.();
  if ((uid !== undefined && stats.uid !== uid) || (stats.mode & 0o022) !== 0) throw new Error(`${what} is not this user's alone`);
}

/** mkdir (mode 0700) where nothing is; throws when the parent is missing. */
function makeDirectory(dir: string): void {
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (made) {
    if ((made as NodeJS.ErrnoException).code !== 'EEXIST') throw made;
  }
}

/**
 * The cache directory, made (mode 0700) when missing, with its parent:
 * $XDG_CACHE_HOME with whatever it needs (the user named it; XDG asks
 * that it be made), ~/.cache only in a HOME that exists: a missing HOME
 * (nobody's /nonexistent, a service's) is not made, and the call runs
 * without a cache. Throws when it is not a directory of ours.
 */
function openDirectory(dir: string, env: NodeJS.ProcessEnv = process.env): void {
  let stats = lstatSync(dir, { throwIfNoEntry: false });
  if (stats === undefined) {
    const parent = path.dirname(dir);
    if (parent === xdgCacheHome(env)) mkdirSync(parent, { recursive: true, mode: 0o700 });
    else makeDirectory(parent);
    makeDirectory(dir);
    stats = lstatSync(dir);
  }
  if (!stats.isDirectory()) throw new Error(`${dir} is not a directory`);
  checkOurs(stats, dir);
}

/** The bytes of a file of ours, or undefined when there is none (or, with `bytes`, not of that size). */
function readOwn(file: string, bytes?: number): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw new Error(`${file} is not a file`);
    checkOurs(stats, file);
    if (bytes !== undefined && stats.size !== bytes) return undefined;
    const buffer = Buffer.allocUnsafe(stats.size);
    let at = 0;
    while (at < buffer.length) {
      const read = readSync(fd, buffer, at, buffer.length - at, at);
      if (read === 0) return undefined;
      at += read;
    }
    return buffer;
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes what `data()` makes as `file`, whole or not at all: a temporary of
 * ours (mode 0600), fsync, rename; returns it. The temporary is made
 * first, so that a directory that takes no file costs no `data()`.
 */
function writeOwn<T extends Uint8Array>(file: string, data: () => T): T {
  const temporary = `${file}.${process.pid}.${Math.random().toString(16).slice(2, 10)}.tmp`;
  const fd = openSync(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  let open = true;
  try {
    const bytes = data();
    for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, bytes.length - at);
    fsyncSync(fd);
    open = false;
    closeSync(fd);
    renameSync(temporary, file);
    return bytes;
  } catch (error) {
    if (open) closeSync(fd);
    unlinkSync(temporary);
    throw error;
  }
}

/** Removes the files of all but the KEEP_SCRIPTS newest scripts of `name` (and every stale temporary). */
function prune(dir: string, name: string): void {
  const stem = new RegExp(`^${name}-([0-9a-f]{16})[.-]`);
  const newest = new Map<string, number>();
  const files: { file: string; hash: string }[] = [];
  for (const file of readdirSync(dir)) {
    const match = stem.exec(file);
    if (match === null) continue;
    const hash = match[1] as string;
    const at = path.join(dir, file);
    const mtime = lstatSync(at).mtimeMs;
    if (file.endsWith('.tmp') && mtime < Date.now() - 3_600_000) unlinkSync(at);
    else files.push({ file: at, hash });
    newest.set(hash, Math.max(newest.get(hash) ?? 0, mtime));
  }
  const kept = new Set([...newest].sort((a, b) => b[1] - a[1]).slice(0, KEEP_SCRIPTS).map(([hash]) => hash));
  for (const { file, hash } of files) if (!kept.has(hash)) unlinkSync(file);
}

/**
 * The script's require(), which it calls for node's built-in modules only
 * (the build checks): each comes as a stand-in that loads the module when
 * the script first uses it. The script requires every built-in that any of
 * its modules imports, at the top as ES modules do, but a call uses few of
 * them; node loads a built-in that is not in its start-up snapshot by
 * compiling it (node:crypto, with its 20 internal modules, costs ~4 ms, a
 * tenth of node's own start), so one that is not used is one not paid for.
 * A stand-in answers every question about the module (its keys, its
 * prototype) from the module itself, loading it first.
 */
function lazyRequire(real: NodeJS.Require): (id: string) => unknown {
  const made = new Map<string, object>();
  return (id) => {
    let standIn = made.get(id);
    if (standIn === undefined) {
      let loaded: Record<PropertyKey, unknown> | undefined;
      const load = (): Record<PropertyKey, unknown> => (loaded ??= real(id) as Record<PropertyKey, unknown>);
      standIn = new Proxy(
        {},
        {
          get: (_target, key) => load()[key],
          has: (_target, key) => key in load(),
          ownKeys: () => Reflect.ownKeys(load()),
          getOwnPropertyDescriptor: (_target, key) => {
            const descriptor = Reflect.getOwnPropertyDescriptor(load(), key);
            // A proxy may not report a property as non-configurable that its (empty) target lacks.
            return descriptor === undefined ? undefined : { ...descriptor, configurable: true };
          },
          getPrototypeOf: () => Reflect.getPrototypeOf(load()),
        },
      );
      made.set(id, standIn);
    }
    return standIn;
  };
}

/** The script's text from the package's compressed copy, checked against the build's digest. */
function expand(compressed: URL, script: StartScript): Buffer {
  const { brotliDecompressSync } = process.getBuiltinModule('node:zlib');
  const { createHash } = process.getBuiltinModule('node:crypto');
  const text = brotliDecompressSync(readFileSync(compressed));
  if (text.length !== script.bytes || createHash('sha256').update(text).digest('hex').slice(0, 16) !== script.hash) throw new Error(`${fileURLToPath(compressed)} is not the script this fsjob was built with`);
  return text;
}

/**
 * Runs the command from the start-up script when the cache can serve it:
 * resolves to the exit status, or to undefined (nothing has run) when it
 * cannot, and the caller loads the ES modules instead. `entry` is the
 * URL of dist/bin/fsjob.js, beside which the compressed script lies.
 */
export async function runFromCache(script: StartScript, entry: string): Promise<number | undefined> {
  let run: () => Promise<number>;
  let compiled: Script;
  let codeFile: string;
  let dir: string;
  let codeWanted: boolean;
  try {
    const found = cacheDirectory();
    if (found === undefined) return undefined;
    dir = found;
    openDirectory(dir);
    const scriptFile = path.join(dir, `${script.name}-${script.hash}.js`);
    codeFile = path.join(dir, `${script.name}-${script.hash}-node${process.versions.node}-v8${process.versions.v8}-${process.arch}.code`);
    let text = readOwn(scriptFile, script.bytes);
    if (text === undefined) {
      text = writeOwn(scriptFile, () => expand(new URL(`./${script.name}-start.js.br`, entry), script));
      prune(dir, script.name);
    }
    const code = readOwn(codeFile);
    // The build made the script ASCII (esbuild escapes every other character), so latin1 decodes it as UTF-8 would, into V8's one-byte form.
    // node:vm when it is used: `fsjob --version` and the other commands need not load it.
    const { Script: VmScript } = process.getBuiltinModule('node:vm');
    compiled = new VmScript(text.toString('latin1'), { filename: scriptFile, ...(code === undefined ? {} : { cachedData: code }) });
    codeWanted = code === undefined || compiled.cachedDataRejected === true;
    // The script is a function of what a CommonJS module gets; the paths it finds files by are its chunks' in dist/.
    const chunk = new URL('./chunks/start-script.js', entry);
    const module: { exports: { run?: () => Promise<number> } } = { exports: {} };
    (compiled.runInThisContext() as (...args: unknown[]) => void)(module, lazyRequire(createRequire(chunk)), fileURLToPath(chunk), fileURLToPath(new URL('.', chunk)), chunk.href);
    if (typeof module.exports.run !== 'function') throw new Error(`${scriptFile} has no run()`);
    run = module.exports.run;
  } catch {
    return undefined;
  }
  // From here the command runs: whatever happens is its outcome, never a reason to run it again.
  const status = await run();
  // Only after a call that enqueued: one that failed (a usage error, a queue
  // that is not there) compiled part of the path, and its code, once taken,
  // would make every later call compile the rest again.
  if (codeWanted && status === 0) {
    try {
      // After the command: the code then holds every function the call compiled, not only the top level.
      writeOwn(codeFile, () => compiled.createCachedData());
      prune(dir, script.name);
    } catch {
      // A cache that cannot be written costs the next call its compilation, nothing more.
    }
  }
  return status;
}
