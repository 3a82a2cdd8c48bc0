/**
 * How a job ended, as a shell's `jobs -l` says it (spec EXEC-10): "Done",
 * "Done(130)" (dash, ash, bash as sh), "Exit 130" (bash), or the C
 * library's description of the signal that killed it ("Interrupt",
 * "Killed", "Segmentation fault (core dumped)"). A shell's `wait` gives 130
 * both for `exit 130` and for a death by SIGINT; this line is the one a
 * shell script can read that tells them apart. The spawner runs with
 * LC_ALL=C, so the descriptions are the C locale's: glibc's, and musl's
 * where they differ.
 */
import os from 'node:os';

export type ShellStatus = { exit: number; signal: null } | { exit: null; signal: NodeJS.Signals };

/** The descriptions of the signals whose default action ends a process. */
const DESCRIPTIONS: Readonly<Record<string, string>> = {
  Hangup: 'SIGHUP',
  Interrupt: 'SIGINT',
  Quit: 'SIGQUIT',
  'Illegal instruction': 'SIGILL',
  'Trace/breakpoint trap': 'SIGTRAP',
  Aborted: 'SIGABRT',
  'Bus error': 'SIGBUS',
  'Floating point exception': 'SIGFPE',
  'Arithmetic exception': 'SIGFPE',
  Killed: 'SIGKILL',
  'User defined signal 1': 'SIGUSR1',
  'Segmentation fault': 'SIGSEGV',
  'User defined signal 2': 'SIGUSR2',
  'Broken pipe': 'SIGPIPE',
  'Alarm clock': 'SIGALRM',
  Terminated: 'SIGTERM',
  'Stack fault': 'SIGSTKFLT',
  'CPU time limit exceeded': 'SIGXCPU',
  'File size limit exceeded': 'SIGXFSZ',
  'Virtual timer expired': 'SIGVTALRM',
  'Profiling timer expired': 'SIGPROF',
  'I/O possible': 'SIGIO',
  'Power failure': 'SIGPWR',
  'Bad system call': 'SIGSYS',
};

/** Longest first, so that no description is read as a shorter one it begins with. */
const BY_LENGTH = Object.keys(DESCRIPTIONS).sort((a, b) => b.length - a.length);

const SIGNALS = os.constants.signals as Readonly<Record<string, number | undefined>>;

/** One line of `jobs -l`: `[1] + 4711 Done(130)`, with any command text after the status. */
export interface JobsLine {
  pid: number;
  /** The status, or null while the job runs (or is stopped). */
  status: ShellStatus | null;
}

/** Parses a `jobs -l` line; undefined when the line is not one, or its status is not understood. */
export function parseJobsLine(line: string): JobsLine | undefined {
  const match = /^\[\d+\]\s*[+-]?\s*(\d+)\s+(.*)$/.exec(line);
  if (match === null) return undefined;
  const pid = Number(match[1]);
  const text = (match[2] as string).trimStart();
  // Signals that stop or continue a job, or that nobody dies of, describe a job still there.
  if (/^(Running|Stopped|Continued)/.test(text)) return { pid, status: null };
  const done = /^Done(?:\((\d+)\))?(?:\s|$)/.exec(text) ?? /^Exit (\d+)(?:\s|$)/.exec(text);
  if (done !== null) return { pid, status: { exit: done[1] === undefined ? 0 : Number(done[1]), signal: null } };
  const description = BY_LENGTH.find((d) => text === d || text.startsWith(`${d} `));
  if (description === undefined) return undefined;
  return { pid, status: { exit: null, signal: DESCRIPTIONS[description] as NodeJS.Signals } };
}

/**
 * The status `wait` gave, when no jobs line said more: a shell's
 * convention, 128 + n for a death by signal n. Exact below 129; above, an
 * `exit 130` reads as SIGINT.
 */
export function waitStatus(code: number): ShellStatus {
  if (code > 128) {
    const name = Object.keys(SIGNALS).find((signal) => SIGNALS[signal] === code - 128);
    if (name !== undefined) return { exit: null, signal: name as NodeJS.Signals };
  }
  return { exit: code, signal: null };
}
