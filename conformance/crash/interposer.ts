// Builds the LD_PRELOAD crash injector (interpose*.c) on demand. It is compiled at run time
// rather than shipped because it must match the machine's libc, and cached by
// content hash so reruns and parallel test files share a single build.
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { access, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';

// As ../../conformance/crash/: this module is two levels below the root in the checkout and in dist/, where it may be in a chunk (tools/build/cli-bundle.ts).
const CRASH_DIR = fileURLToPath(new URL('../../conformance/crash/', import.meta.url));
const HEADER = 'interpose.h';
const SOURCES = ['interpose.c', 'interpose-trace.c', 'interpose-calls.c', 'interpose-clock.c'];
// Only the wrappers are exported (EXPORT in interpose.h); the library's own
// helpers stay out of the programs' symbol namespace.
const CC_ARGS = ['-shared', '-fPIC', '-O2', '-U_FORTIFY_SOURCE', '-Wall', '-fvisibility=hidden'];

let pending: Promise<string> | undefined;

/** Absolute path of the compiled interposer (.so), compiling it if needed. */
export async function interposerPath(): Promise<string> {
  // A failed build is not memoised, so a later call can retry after the
  // caller installs a compiler.
  pending ??= build().catch((error: unknown) => {
    pending = undefined;
    throw error;
  });
  return pending;
}

/** A C file of the injector: name in a checkout, name.gz in dist/ (tools/build/build.ts ships them gzipped); plain when it is there as is, so cc can compile it in place. */
async function cFile(name: string): Promise<{ name: string; plain: boolean; text: Buffer }> {
  const file = path.join(CRASH_DIR, name);
  if (await exists(file)) return { name, plain: true, text: await readFile(file) };
  return { name, plain: false, text: gunzipSync(await readFile(`${file}.gz`)) };
}

async function build(): Promise<string> {
  const files = await Promise.all([HEADER, ...SOURCES].map(cFile));
  const hash = createHash('sha256');
  for (const file of files) hash.update(file.text);
  const key = hash
    .update(JSON.stringify([CC_ARGS, process.platform, process.arch]))
    .digest('hex')
    .slice(0, 32);
  const uid = typeof process.getuid === 'function' ? process.getuid() : 'user';
  const dir = path.join(os.tmpdir(), `fsjob-crash-interposer-${uid}`);
  const target = path.join(dir, `interpose-${key}.so`);
  // LD_PRELOAD splits on spaces and colons, so such a path cannot be preloaded.
  if (/[\s:]/.test(target)) {
    throw new Error(`fsjob crash injector: cache path ${JSON.stringify(target)} contains a space or colon, which LD_PRELOAD cannot carry; set TMPDIR to a plain directory`);
  }
  if (await exists(target)) return target;

  await mkdir(dir, { recursive: true, mode: 0o700 });
  // Each compile writes its own temporary name; rename is atomic, so a
  // concurrent reader sees either no library or a complete one.
  const temp = path.join(dir, `.interpose-${key}.${process.pid}.${randomBytes(6).toString('hex')}.tmp.so`);
  // Gzipped sources are compiled from plain copies in a directory of this compile's own (the header beside them).
  const sourceDir = files.every((file) => file.plain) ? CRASH_DIR : `${temp}.src`;
  try {
    if (sourceDir !== CRASH_DIR) {
      await mkdir(sourceDir, { mode: 0o700 });
      for (const file of files) await writeFile(path.join(sourceDir, file.name), file.text);
    }
    await compile([...CC_ARGS, '-o', temp, ...SOURCES.map((name) => path.join(sourceDir, name)), '-ldl']);
    await rename(temp, target);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  } finally {
    if (sourceDir !== CRASH_DIR) await rm(sourceDir, { recursive: true, force: true });
  }
  return target;
}

function compile(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('cc', args, { maxBuffer: 16 * 1024 * 1024 }, (error, _stdout, stderr) => {
      if (!error) return resolve();
      const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
      const detail = missing ? '`cc` was not found on PATH' : `cc ${args.join(' ')} failed:\n${stderr}`;
      reject(new Error(`fsjob crash injector: compiling the LD_PRELOAD interposer needs a working C compiler \`cc\` (e.g. gcc or clang with libc headers); ${detail}`, { cause: error }));
    });
  });
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}
