/** The version of this fsjob package (package.json), for `fsjob --version` and reports. */
import { readFileSync } from 'node:fs';

declare const __FSJOB_VERSION: string | undefined;

let toolVersion: string | undefined;

/**
 * package.json's version. The build (tools/build/build.ts) writes it into the
 * compiled module, so dist/ and a bundle of it need no package.json beside
 * the code; run from the sources, it is read from the checkout's.
 */
export function fsjobVersion(): string {
  if (typeof __FSJOB_VERSION === 'string') return __FSJOB_VERSION;
  toolVersion ??= (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  return toolVersion;
}
