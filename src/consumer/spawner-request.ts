/**
 * How a request travels to the worker's spawner (spawner.sh): one line of
 * shell words calling one of its functions. Each argument of argv, each
 * environment value and each path is one word, its bytes in single quotes
 * with every quote written '\'' : the shell's parser hands the function
 * exactly those bytes, whatever they are (non-UTF-8 ones, quotes, line
 * feeds, the bytes dash uses internally), NUL excepted, which neither argv
 * nor the environment can hold. A string is its UTF-8, as node's own spawn
 * would pass it; a Uint8Array is passed as it is.
 *
 * Why not length-prefixed fields: POSIX sh has no substring by length, and
 * its `read` takes one system call per byte; a quoted word is parsed by the
 * shell in C from an 8 KiB buffer and is exact for every byte but NUL.
 */
import { FsjobError } from '../base/errors.ts';
import { envTakesForAssignment, type LaunchRequest } from './launch.ts';

/** The FIFOs of one attempt, in the worker's directory. */
export interface Fifos {
  out: string;
  err: string;
  rel: string;
}

export const spawnerError = (message: string): FsjobError => new FsjobError('IO', message, { clause: 'EXEC-2' });

const bytesOf = (value: string | Uint8Array): Buffer => (typeof value === 'string' ? Buffer.from(value, 'utf8') : Buffer.from(value.buffer, value.byteOffset, value.byteLength));

/** A shell word: the bytes in single quotes, each quote as '\''. NUL cannot be carried by argv or environ. */
function word(value: string | Uint8Array, what: string): Buffer {
  const bytes = bytesOf(value);
  if (bytes.includes(0)) throw spawnerError(`${what} contains a NUL byte, which no argument or environment value can hold`);
  const parts: Buffer[] = [QUOTE];
  let from = 0;
  for (let at = bytes.indexOf(0x27); at >= 0; at = bytes.indexOf(0x27, from)) {
    parts.push(bytes.subarray(from, at), ESCAPED_QUOTE);
    from = at + 1;
  }
  parts.push(bytes.subarray(from), QUOTE);
  return Buffer.concat(parts);
}
const QUOTE = Buffer.from("'");
const ESCAPED_QUOTE = Buffer.from("'\\''");

/** Joins words with spaces into one request line. */
function line(words: readonly Buffer[]): Buffer {
  const parts: Buffer[] = [];
  for (const w of words) parts.push(w, SPACE);
  parts[parts.length - 1] = NEWLINE;
  return Buffer.concat(parts);
}
const SPACE = Buffer.from(' ');
const NEWLINE = Buffer.from('\n');
const raw = (text: string): Buffer => Buffer.from(text, 'latin1');

/** How the gate of an attempt is made (spawner.sh): bash's job control, or setsid, sh and env. */
export type Chain = 'bash' | 'sh';

/**
 * Names the bash chain cannot hand over exactly, as bash's gate sets them
 * with `unset -v NAME; export NAME=VALUE` before `exec`: bash's read-only
 * variables (export fails), those bash sets again after every command
 * (`_`, PIPESTATUS) or on a function call (FUNCNAME, BASH_*), and
 * EXECIGNORE, which changes how `exec` searches PATH. A job with one of them
 * takes the sh chain, which hands env(1) the words as they are.
 */
const BASH_SPECIAL = /^(?:_|BASH\w*|SHELLOPTS|EUID|UID|PPID|PIPESTATUS|FUNCNAME|GROUPS|DIRSTACK|COMP_\w+|EXECIGNORE|HISTCMD)$/;
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Whether the bash chain hands this environment over exactly: every name a plain shell variable (the schema's names are identifiers). */
export function bashChainFits(env: LaunchRequest['env']): boolean {
  for (const name of Object.keys(env)) if (!IDENTIFIER.test(name) || BASH_SPECIAL.test(name)) return false;
  return true;
}

/** The most bytes a framed request's eight-digit length can say (far above ARG_MAX, which bounds what a gate can exec). */
const FRAME_MAX = 99_999_999;

/**
 * The request line of one attempt: `fsjob_run ID CWD STDIN OUT ERR REL`
 * then the gate's command line, setsid and sh, then env(1) with the
 * environment as its words (the sh chain); or `fsjob_start ID CWD STDIN OUT
 * ERR REL N NAME... NAME=VALUE... ARGV...` (the bash chain, spawner.sh).
 */
export function runRequest(id: number, fifos: Fifos, request: LaunchRequest, chain: Chain): Buffer {
  const tag = String(id);
  const entries = Object.entries(request.env);
  const env = entries.map(([name, value]) => word(Buffer.concat([Buffer.from(`${name}=`, 'utf8'), bytesOf(value)]), `environment variable ${name}`));
  const stdin = request.stdinFd === null ? '/dev/null' : `/proc/${process.pid}/fd/${request.stdinFd}`;
  const argv = request.argv.map((arg, i) => word(arg, `argv[${i}]`));
  const gate =
    chain === 'bash'
      ? [raw(String(entries.length)), ...entries.map(([name]) => raw(name)), ...env, ...argv]
      : [raw('"$X" -- "$B" -c "$G" fsjob-gate'), word(tag, 'id'), raw('"$E" -i --default-signal --'), ...env, ...(envTakesForAssignment(request.argv[0]) ? [raw('"$N" -n 0 --')] : []), ...argv];
  const request_ = line([
    raw(chain === 'bash' ? 'fsjob_start' : 'fsjob_run'),
    word(tag, 'id'),
    word(request.cwd, 'the working directory'),
    word(stdin, 'stdin'),
    word(fifos.out, 'FIFO'),
    word(fifos.err, 'FIFO'),
    word(fifos.rel, 'FIFO'),
    ...gate,
  ]);
  if (request_.length > FRAME_MAX) throw spawnerError(`the command's request is ${request_.length} bytes, more than the spawner reads (${FRAME_MAX})`);
  return request_;
}

/** An empty request: bash's spawner, woken by it, looks for the gates that ended at once and 1 ms apart for a while (spawner.sh's loop). */
export const PROMPT: Buffer = Buffer.from(':');

/**
 * A request as bash's spawner reads it (spawner.sh's loop): the prompt as
 * its one byte; any other request as its length in eight digits, then its
 * bytes, so that the spawner takes each with one `read -N` (a length line
 * cost a read(2) per byte). runRequest refuses a longer request.
 */
export function frameRequest(request: Buffer): Buffer {
  if (request === PROMPT) return PROMPT;
  return Buffer.concat([Buffer.from(String(request.length).padStart(8, '0'), 'latin1'), request]);
}

/** The request that makes a batch of FIFO triples, answered `m TAG ok|fail`. */
export function fifosRequest(tag: string, batch: readonly Fifos[]): Buffer {
  return line([raw('fsjob_fifos'), word(tag, 'tag'), ...batch.flatMap((f) => [f.out, f.err, f.rel]).map((path) => word(path, 'FIFO'))]);
}
