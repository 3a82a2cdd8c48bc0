/** The version of this fsjob package (package.json), for `fsjob --version` and reports. */
import { readFileSync } from 'node:fs';
import { srcPath } from './source-dir.ts';

let toolVersion: string | undefined;

export function fsjobVersion(): string {
  toolVersion ??= (JSON.parse(readFileSync(srcPath('..', 'package.json'), 'utf8')) as { version: string }).version;
  return toolVersion;
}
