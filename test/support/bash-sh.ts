/**
 * Running programs where /bin/sh is bash (Fedora, Arch and others ship
 * /bin/sh -> bash): bash bound over /bin/sh in a private mount namespace
 * (`unshare -m` as root, `-Urm` otherwise), so that everything started
 * inside runs bash in sh mode, and nothing outside sees the change. A test
 * skips with a printed reason where this cannot be done (no bash, no
 * unshare, user namespaces disabled).
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';

export const BASH = ['/bin/bash', '/usr/bin/bash'].find((file) => spawnSync(file, ['-c', ':']).status === 0);
/** unshare's options for a private mount namespace (a user namespace too, unless root). */
const UNSHARE = process.getuid?.() === 0 ? ['-m'] : ['-Urm'];

export interface BashShOptions {
  env?: NodeJS.ProcessEnv;
  /** Kill it after this long. @default 120_000 */
  timeoutMs?: number;
  /** More `mount --bind SOURCE TARGET` in the same namespace (to take a program away: /bin/false over it). */
  binds?: readonly (readonly [source: string, target: string])[];
}

/** Runs ARGS where /bin/sh is bash. */
export function underBashSh(args: readonly string[], options: BashShOptions = {}): SpawnSyncReturns<string> {
  const binds = [[BASH ?? 'bash', '/bin/sh'], ...(options.binds ?? [])].flat();
  // The binding loop runs in the host's sh, before /bin/sh is bash.
  const script = 'while [ "$1" != -- ]; do mount --bind "$1" "$2" || exit 125; shift 2; done; shift; exec "$@"';
  return spawnSync('unshare', [...UNSHARE, 'sh', '-c', script, 'bash-sh', ...binds, '--', ...args], {
    encoding: 'utf8',
    timeout: options.timeoutMs ?? 120_000,
    env: options.env ?? process.env,
  });
}

/** Why bash cannot be bound over /bin/sh here, or undefined where it can. */
export function bashShUnavailable(): string | undefined {
  if (BASH === undefined) return 'bash is not installed';
  const probe = underBashSh(['/bin/sh', '-c', 'printf %s "$BASH_VERSION"']);
  if (probe.status !== 0 || probe.stdout === '') return `cannot bind bash over /bin/sh in a mount namespace (unshare ${UNSHARE.join(' ')}: ${probe.stderr.trim() || probe.error?.message})`;
  return undefined;
}
