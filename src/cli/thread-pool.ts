/**
 * libuv's thread pool for `fsjob work` (spec/design-hot-path.md, "Pool
 * size"). Every fsync of a Worker holds a pool thread for a journal commit,
 * and a command job makes about seven; libuv's default pool of 4 threads
 * queues the fsyncs of a worker running 16 or 64 jobs behind each other.
 * libuv sizes its pool once, from UV_THREADPOOL_SIZE, when the first task
 * is queued, and node queues one as soon as it loads an ES module (its
 * loader reads files through the pool): no library code can size it. The
 * command's entry (bin/fsjob.mts, a CommonJS script once built) can: it
 * sets UV_THREADPOOL_SIZE for `fsjob work` before it imports the CLI, in
 * the same process (no second node start). A UV_THREADPOOL_SIZE the user
 * set always wins.
 *
 * No imports but command-name.ts: the entry bundles this and runs it on
 * every start.
 */
import { commandName } from './command-name.ts';

/** libuv's own pool size, which every other command keeps and `fsjob work` never goes below. */
const LIBUV_DEFAULT = 4;

/**
 * The most threads `fsjob work` asks for. Measured on a 2-core machine
 * (spec/design-hot-path.md, "Pool size"): 32 threads ran no faster than 16
 * at --concurrency 32 or 64, and a wider pool wakes more threads for the
 * same fsyncs. A machine with more cores may want more: UV_THREADPOOL_SIZE
 * says so.
 */
export const POOL_CAP = 16;

/** The pool a Worker running `concurrency` jobs at once gets: a thread per job, at least libuv's 4, at most POOL_CAP. */
export function poolSizeFor(concurrency: number): number {
  return Math.max(LIBUV_DEFAULT, Math.min(POOL_CAP, concurrency));
}

/** The option read here: work.ts's `concurrency`, which has no alias, and yargs there reads no environment or config file. */
const OPTION = '--concurrency';

/**
 * The --concurrency of a `fsjob work` command line, read as yargs reads
 * it (`--concurrency N`, `--concurrency=N`, anywhere before "--"), or
 * undefined when the line is no `fsjob work`, or gives no value that work
 * accepts (an integer from 1 to 1024: then work refuses it itself, or runs
 * its default of 1, and the pool stays libuv's). This is deliberately one
 * option, not a second parser beside yargs: the pool is a performance
 * setting, and a line read differently here (an odd spelling yargs also
 * takes) costs speed only, never what the command does, which yargs alone
 * decides. Given twice, yargs makes a list, which work refuses.
 */
export function workConcurrency(argv: readonly string[]): number | undefined {
  if (commandName(argv) !== 'work') return undefined;
  const end = argv.indexOf('--');
  const own = end === -1 ? argv : argv.slice(0, end);
  let value: string | undefined;
  let given = 0;
  for (let i = 0; i < own.length; i++) {
    const arg = own[i] as string;
    if (arg.startsWith(`${OPTION}=`)) value = arg.slice(OPTION.length + 1);
    else if (arg === OPTION) value = own[i + 1];
    else continue;
    given += 1;
  }
  if (given !== 1 || value === undefined || value.trim() === '') return undefined;
  const n = Number(value);
  return Number.isSafeInteger(n) && n >= 1 && n <= 1024 ? n : undefined;
}

/**
 * Sets UV_THREADPOOL_SIZE in `env` (the process's own environment, which
 * libuv reads) for a `fsjob work` whose concurrency wants more than
 * libuv's default; nothing when the user set it (even to an empty string),
 * or for any other command. Effective only before the pool starts: the
 * entry calls it before it imports anything through the ES module loader.
 */
export function sizeThreadPool(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): void {
  if (env['UV_THREADPOOL_SIZE'] !== undefined) return;
  const concurrency = workConcurrency(argv);
  if (concurrency === undefined) return;
  const size = poolSizeFor(concurrency);
  if (size > LIBUV_DEFAULT) env['UV_THREADPOOL_SIZE'] = String(size);
}
