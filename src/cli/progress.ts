/**
 * Progress of long work, on a terminal (issue 29 point 4): after a second
 * of work, one line on standard error, rewritten in place, with the count
 * done and the rate ("validate: 42,100 of 100,000 jobs, 21,300/s"); gone
 * when the work ends. Nothing at all under --json or --quiet, or when
 * standard error is not a terminal (a pipe, a file, a journal): there the
 * line would be noise in a log.
 *
 * A few lines rather than a library: what is drawn is one line of text
 * (no bar widths, colours or multi-line layouts to get right), and each
 * package a start loads costs every command (the reason the CLI is bundled
 * at all; tools/build/cli-bundle.ts).
 *
 * FSJOB_PROGRESS_AFTER_MS sets the delay before the line shows (default
 * 1000): the tests set 0 to see the line on work that takes less.
 */
import type { CliIo } from './command.ts';

/** One long piece of work being counted. */
export interface Progress {
  /** Counts `n` more done (default 1). */
  add(n?: number): void;
  /** The total, once known. */
  total(n: number): void;
  /** The io to write through while the line may be showing: each write clears the line first (it is drawn again on the next tick). */
  readonly io: CliIo;
  /** Ends the work: the line is cleared for good. */
  end(): void;
}

/** Whether a command's progress line may show: stderr is a terminal and neither --json nor --quiet was given. */
export function progressWanted(io: CliIo, args: Record<string, unknown>): boolean {
  return io.stderrIsTerminal?.() === true && args['json'] !== true && args['quiet'] !== true;
}

const REDRAW_MS = 200;
const CLEAR = '\r\x1b[K';

/** How long work runs before its line shows. */
export function progressDelayMs(): number {
  const given = Number(process.env['FSJOB_PROGRESS_AFTER_MS']);
  return Number.isFinite(given) && given >= 0 ? given : 1000;
}

function grouped(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/**
 * Starts counting `unit` (plural, "jobs") for `what` ("validate"). With
 * `shown` false the returned Progress counts nothing and draws nothing, and
 * its io is `io` itself.
 */
export function startProgress(io: CliIo, what: string, unit: string, shown: boolean): Progress {
  if (!shown) return { add: () => undefined, total: () => undefined, io, end: () => undefined };
  const started = Date.now();
  const after = progressDelayMs();
  let done = 0;
  let all: number | undefined;
  let drawn = false;
  let ended = false;
  const draw = (): void => {
    if (ended) return;
    const elapsed = Date.now() - started;
    if (elapsed < after) return;
    const rate = elapsed > 0 ? (done * 1000) / elapsed : 0;
    const units = (all ?? done) === 1 ? unit.replace(/s$/, '') : unit;
    const count = all === undefined ? `${grouped(done)} ${units}` : `${grouped(done)} of ${grouped(all)} ${units}`;
    io.stderr(`${CLEAR}${what}: ${count}, ${grouped(rate)}/s`);
    drawn = true;
  };
  const clear = (): void => {
    if (drawn) io.stderr(CLEAR);
    drawn = false;
  };
  const timer = setInterval(draw, REDRAW_MS);
  timer.unref();
  let lastDraw = 0;
  return {
    add(n = 1) {
      done += n;
      const now = Date.now();
      // The timer redraws while work goes on; a count also redraws, at most every REDRAW_MS.
      if (now - lastDraw >= REDRAW_MS) {
        lastDraw = now;
        draw();
      }
    },
    total(n) {
      all = n;
    },
    io: {
      ...io,
      stdout: (text) => {
        // Output to another place than the terminal leaves the line alone.
        if (io.stdoutIsTerminal?.() !== false) clear();
        io.stdout(text);
      },
      stderr: (text) => {
        clear();
        io.stderr(text);
      },
    },
    end() {
      ended = true;
      clearInterval(timer);
      clear();
    },
  };
}
