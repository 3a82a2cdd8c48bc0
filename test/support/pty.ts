/**
 * Running a command with its standard error on a pseudo-terminal, as a
 * person at a terminal would: python3's pty module opens the pair, the
 * command gets the terminal as stderr (stdout stays a pipe, stdin is
 * /dev/null), and what it wrote to the terminal comes back as bytes. Tests
 * that need one skip with the reason where python3 is missing.
 */
import { spawnSync } from 'node:child_process';

/** Why a pseudo-terminal cannot be had here, or undefined when it can. */
export const NO_PTY: string | undefined = (() => {
  const probe = spawnSync('python3', ['-c', 'import os, pty; m, s = os.openpty(); print(os.isatty(s))'], { encoding: 'utf8' });
  if (probe.error !== undefined) return `python3 is not available (${probe.error.message})`;
  return probe.stdout.trim() === 'True' ? undefined : `python3 could not open a pseudo-terminal: ${probe.stderr.trim()}`;
})();

const RUNNER = String.raw`
import os, subprocess, sys, json
master, slave = os.openpty()
child = subprocess.Popen(json.loads(sys.argv[1]), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=json.loads(sys.argv[2]))
os.close(slave)
seen = b''
while True:
    try:
        data = os.read(master, 65536)
    except OSError:
        break
    if not data:
        break
    seen += data
out = child.stdout.read()
status = child.wait()
sys.stdout.write(json.dumps({'status': status, 'stdout': out.decode('utf-8', 'replace'), 'terminal': seen.decode('utf-8', 'replace')}))
`;

export interface TerminalRun {
  status: number;
  stdout: string;
  /** What the command wrote to its standard error, the terminal (line ends as the terminal translated them). */
  terminal: string;
}

/** Runs argv to its end with stderr on a pseudo-terminal. */
export function runOnTerminal(argv: readonly string[], env: NodeJS.ProcessEnv): TerminalRun {
  const run = spawnSync('python3', ['-c', RUNNER, JSON.stringify(argv), JSON.stringify(env)], { encoding: 'utf8', timeout: 180_000, maxBuffer: 1 << 26 });
  if (run.status !== 0) throw new Error(`the pty runner failed (${run.status}): ${run.stderr}`);
  return JSON.parse(run.stdout) as TerminalRun;
}
