/**
 * Where this checkout's src/ is, for the files the code reads beside itself
 * (the guardian script, the validator's worker entry, the precompiled
 * validators, schemas/, package.json).
 *
 * Run through tsx, each module sits in its own place and this file's URL
 * tells. Run from the compiled CLI bundle (bin/compiled.js), every module
 * shares the bundle's URL, so the bundle's first line declares the real
 * src/ directory as __FSJOB_SRC_DIR instead.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

declare const __FSJOB_SRC_DIR: string | undefined;

export const SRC_DIR: string = typeof __FSJOB_SRC_DIR === 'string' ? __FSJOB_SRC_DIR : fileURLToPath(new URL('../', import.meta.url));

/** A path below src/, e.g. srcPath('consumer', 'guardian.sh'). */
export function srcPath(...parts: string[]): string {
  return join(SRC_DIR, ...parts);
}
