// Builds the LD_PRELOAD crash injector (interpose*.c) on demand. It is compiled at run time
// rather than shipped because it must match the machine's libc, and cached by
// content hash so reruns and parallel test files share a single build.
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { access, mkdir, readFile, rename, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// As ../../conformance/crash/: this module is two levels below the root in the checkout and in dist/, where it may be in a chunk (tools/build/cli-bundle.ts).
const SOURCES = ['interpose.c', 'interpose-trace.c', 'interpose-calls.c', 'interpose-clock.c'].map((name) => fileURLToPath(new URL(`../../conformance/crash/${name}`, import.meta.url)));
const HEADER = fileURLToPath(new URL('../../conformance/crash/interpose.h', import.meta.url));
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

async function build(): Promise<string> {
  const hash = createHash('sha256');
  for (const file of [HEADER, ...SOURCES]) hash.update(await readFile(file));
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
  try {
    await compile([...CC_ARGS, '-o', temp, ...SOURCES, '-ldl']);
    await rename(temp, target);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
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
