/**
 * The spawner of a worker (spec/design-spawner.md): one
 * small long-lived /bin/sh per worker that starts every command job, so
 * that this process, 60 to 200 MiB, never forks for a command. libuv has no
 * posix_spawn: every `spawn()` copies this process's page tables on the
 * main thread. spawner.sh says what runs where and why.
 *
 * - A request is a line of shell words, each single-quoted: argv and
 *   environment travel as the bytes given (a string as its UTF-8), without
 *   a length to parse in sh, which has no substring by length; the shell's
 *   parser reads them from an 8 KiB buffer.
 * - The three FIFOs of an attempt (stdout, stderr, release) come from a
 *   stock made ahead, and are used once (spawner-fifos.ts). This process
 *   opens the read ends of the outputs and the write end of the release
 *   before the request goes out, and holds the only write end of the
 *   release (EXEC-2).
 * - EXEC-2 and EXEC-3 are as with node's own spawn: the leader, in its own
 *   group (made by bash's job control, or by setsid(1) with a session too),
 *   reports its pid and waits; the caller records the group and only then
 *   releases it.
 * - The exit status comes on the reply pipe (shell-status.ts reads it):
 *   from bash's spawner itself, which reaps the gates of the bash chain,
 *   or from the leader's waiter, a subshell of the spawner (the sh chain).
 * - A spawner that dies takes the exit status of every bash-chain command
 *   it started with it, and a waiter that dies its command's: that attempt
 *   ends `lost` (checked every second while attempts run), and the caller
 *   stops its group as a dead owner's (command.ts, RECOV-1). Requests not
 *   yet answered fail (nothing of them runs: their release end is closed),
 *   and `healthy` is false until `ensure()` started a new spawner; the
 *   worker claims no command job meanwhile, as while its guardian is down
 *   (WORKER-2).
 */
import { spawn } from 'node:child_process';
import { closeSync, constants as fsConstants, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import type net from 'node:net';
import path from 'node:path';
import { deferred } from '../base/deferred.ts';
import { FsjobError } from '../base/errors.ts';
import { directLauncher, type Launcher, type LaunchRequest, type Leader, type LeaderEnd } from './launch.ts';
import { checkHolders, type Attempt, type Generation } from './spawner-attempts.ts';
import { FifoStock } from './spawner-fifos.ts';
import { FifoOutputs } from './spawner-output.ts';
import { defaultShell, fifoParent, SPAWNER_PATH } from './spawner-host.ts';
import { bashChainFits, frameRequest, PROMPT, runRequest, spawnerError, type Chain } from './spawner-request.ts';
import { parseJobsLine, waitStatus, type ShellStatus } from './shell-status.ts';

declare const __FSJOB_SPAWNER_SCRIPT: string | undefined;

/** The text of spawner.sh: written into the compiled module by the build (as guardian.sh is), read beside the sources otherwise. */
const SPAWNER_SCRIPT: string =
  typeof __FSJOB_SPAWNER_SCRIPT === 'string' ? __FSJOB_SPAWNER_SCRIPT : readFileSync(new URL('./spawner.sh', import.meta.url), 'utf8');

/** What a process listing shows: /bin/sh -s fsjob-spawner. */
export const SPAWNER_NAME = 'fsjob-spawner';
/** How long a new spawner may take to say `ready`. */
const START_LIMIT_MS = 15_000;
/** How long close() waits for the spawner to exit. */
const CLOSE_LIMIT_MS = 2_000;
/** How often the waiters of running attempts are looked at. */
const WAITER_CHECK_MS = 1_000;

/**
 * A worker's spawner: `start()` it before the first command (the worker
 * does, with the guardian), `launch()` each command, `close()` at the end.
 */
export class Spawner implements Launcher {
  /** The shell that runs spawner.sh. */
  private readonly shell: string;
  private current: Generation | undefined;
  private dir: string | undefined;
  private seq = 0;
  private readonly attempts = new Map<number, Attempt>();
  /** The running attempts by their leader's pid: whose `jobs -l` lines to keep. */
  private readonly leaders = new Map<number, Attempt>();
  /** The final `jobs -l` status of each leader pid, until its `x` line takes it. */
  private readonly statuses = new Map<number, ShellStatus>();
  private readonly fifos = new FifoStock(() => this.holdAlive());
  private checker: NodeJS.Timeout | undefined;
  private checking = false;

  /** How long a spawner may take to say `ready`, and a request to be answered. */
  private readonly startLimitMs: number;

  /**
   * @param options.shell the shell that runs spawner.sh @default bash where installed, else /bin/sh
   * @param options.startLimitMs how long a spawner may take to say `ready`, and a request whose waiter never named itself to be answered @default START_LIMIT_MS
   */
  constructor(options: { shell?: string; startLimitMs?: number } = {}) {
    this.shell = options.shell ?? defaultShell();
    this.startLimitMs = options.startLimitMs ?? START_LIMIT_MS;
  }

  /** The spawner process's pid while it runs. */
  get pid(): number | undefined {
    return this.healthy ? this.current?.child.pid : undefined;
  }

  /** The 0700 directory of this worker's FIFOs, once started. */
  get directory(): string | undefined {
    return this.dir;
  }

  /** The chains the running spawner offers (spawner.sh): `bash` for one exec per command, `sh`. */
  get chains(): ReadonlySet<Chain> {
    return this.healthy ? (this.current as Generation).chains : new Set();
  }

  /** True while a spawner process is there to take requests. */
  get healthy(): boolean {
    return this.current !== undefined && !this.current.exited;
  }

  /**
   * Starts a spawner process and waits for its `ready` (its checks passed:
   * env --default-signal and setsid(1) work here). Resolves with null when
   * it is ready, or with the reason it cannot run on this system (the
   * worker then forks each command itself); rejects with IO when the
   * process could not be started or did not answer.
   */
  async start(): Promise<string | null> {
    this.dir ??= mkdtempSync(path.join(fifoParent(), `${SPAWNER_NAME}-`));
    mkdirSync(this.dir, { recursive: true, mode: 0o700 }); // a spawner that exited removed it
    // bash reads a script from a pipe one byte per read(2) (it must not read past the command it runs), dash 8 KiB
    // at a time: bash gets the script in its environment and each request framed, its length in eight digits then its bytes, which it
    // takes with one `read -N` (spawner.sh); dash reads the requests as the rest of its script.
    const framed = path.basename(this.shell) === 'bash';
    const env: NodeJS.ProcessEnv = { PATH: SPAWNER_PATH, LC_ALL: 'C', FSJOB_SPAWNER_DIR: this.dir };
    if (framed) Object.assign(env, { FSJOB_SPAWNER_INPUT: 'framed', FSJOB_SPAWNER_SCRIPT: SPAWNER_SCRIPT });
    // --norc: bash sources ~/.bashrc when its standard input is a socket (it takes itself for a shell started
    // by sshd), and node's pipes are socket pairs: the user's start-up file must not run in the spawner.
    const child = spawn(this.shell, framed ? ['--norc', '-c', 'eval "$FSJOB_SPAWNER_SCRIPT"', SPAWNER_NAME] : ['-s', SPAWNER_NAME], {
      cwd: '/',
      detached: true, // its own session: a signal to the worker's terminal group does not reach it
      stdio: ['pipe', 'pipe', 'pipe'],
      env,
    });
    const generation: Generation = {
      child,
      framed,
      dir: this.dir,
      ready: deferred(),
      chains: new Set(),
      exited: false,
      stderr: '',
      prompting: false,
      // One request line, framed with its length where the spawner is bash.
      send: (request) => void child.stdin?.write(framed ? frameRequest(request) : request),
    };
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', (error) => reject(spawnerError(`could not start the spawner (${this.shell}): ${error.message}`)));
    });
    this.attach(generation);
    if (!framed) child.stdin?.write(SPAWNER_SCRIPT);
    const limit = setTimeout(() => generation.ready.reject(spawnerError(`the spawner did not answer within ${this.startLimitMs} ms`)), this.startLimitMs);
    let unavailable: string | null;
    try {
      unavailable = await generation.ready.promise;
    } catch (error) {
      child.kill('SIGKILL');
      throw error;
    } finally {
      clearTimeout(limit);
    }
    if (unavailable !== null) return unavailable;
    // Neither the spawner nor its pipes keep this process alive: running attempts hold their own.
    child.unref();
    for (const stream of [child.stdout, child.stderr] as (net.Socket | null)[]) stream?.unref();
    (child.stdin as unknown as net.Socket | null)?.unref?.();
    this.current = generation;
    this.checker ??= setInterval(() => void this.checkWaiters(), WAITER_CHECK_MS).unref();
    this.fifos.ahead(generation);
    return null;
  }

  /** Starts a new spawner if the last one died; as start(). */
  async ensure(): Promise<string | null> {
    return this.healthy ? null : this.start();
  }

  /**
   * Clean exit, once no attempt runs: the spawner reads end of file, removes
   * its FIFO directory and exits; this waits for that (at most
   * CLOSE_LIMIT_MS), so that its CPU is counted in this process's children
   * and nothing of it is left when the worker's run() returns.
   */
  async close(): Promise<void> {
    clearInterval(this.checker);
    this.checker = undefined;
    const generation = this.current;
    this.current = undefined;
    this.fifos.discard();
    if (generation !== undefined && !generation.exited) {
      const exited = new Promise<void>((resolve) => generation.child.once('exit', () => resolve()));
      generation.child.stdin?.end();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([exited, new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_LIMIT_MS)))]);
      clearTimeout(timer);
    }
    // For a spawner that was killed, or is slow to go.
    if (this.dir !== undefined) {
      try {
        rmSync(this.dir, { recursive: true, force: true, maxRetries: 3 });
      } catch {
        // being removed by the spawner
      }
    }
  }

  async launch(request: LaunchRequest): Promise<Leader> {
    const generation = this.current;
    if (generation === undefined || generation.exited) throw spawnerError('the spawner is not running; no command starts until a new one answers');
    const chain: Chain | undefined = generation.chains.has('bash') && bashChainFits(request.env) ? 'bash' : generation.chains.has('sh') ? 'sh' : undefined;
    // Only bash's chain runs here, and this job's environment needs the other: node forks this one.
    if (chain === undefined) return directLauncher.launch(request);
    const fifos = await this.fifos.take(generation);
    const attempt: Attempt = {
      id: ++this.seq,
      generation,
      chain,
      fifos,
      outFd: null,
      errFd: null,
      relFd: null,
      phase: 'starting',
      started: deferred(),
      end: deferred(),
      waiterGone: false,
      sentMs: 0,
    };
    let request_: Buffer;
    try {
      // Read ends before the request: the waiter's opens never wait for a reader. The release's write
      // end too (read-write: a FIFO so opened never blocks): the gate's read then waits for this
      // process's line or its death, never for a writer to appear.
      attempt.outFd = openSync(fifos.out, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
      attempt.errFd = openSync(fifos.err, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
      attempt.relFd = openSync(fifos.rel, fsConstants.O_RDWR | fsConstants.O_NONBLOCK);
      request_ = runRequest(attempt.id, attempt.fifos, request, chain);
    } catch (error) {
      this.release(attempt);
      if (error instanceof FsjobError) throw error;
      throw spawnerError(`could not open the FIFOs of the command in ${this.dir}: ${(error as Error).message}`);
    }
    this.track(attempt);
    attempt.sentMs = performance.now();
    generation.send(request_);
    const pid = await attempt.started.promise;
    return this.leader(attempt, pid);
  }

  private leader(attempt: Attempt, pid: number): Leader {
    // bash's spawner looks for ended gates 1 ms apart only after a prompt: the release (a `true` ends within a
    // few ms of it), the release closed unread (the gate ends at once), and a running command's outputs at end of
    // file; a gate that waits for its release is looked at every 128 ms.
    const prompt = (): void => {
      if (attempt.chain === 'bash' && attempt.phase === 'running') this.prompt(attempt.generation);
    };
    const outputs = new FifoOutputs(attempt, prompt);
    const closeRelease = (): void => {
      if (attempt.relFd === null) return;
      closeSync(attempt.relFd);
      attempt.relFd = null;
      prompt();
    };
    return {
      pid,
      ...(attempt.leaderStart === undefined ? {} : { start: attempt.leaderStart }),
      connect: (stdout, stderr) => outputs.connect(stdout, stderr),
      drain: (clock) => outputs.drain(clock),
      release() {
        if (attempt.relFd === null) return;
        try {
          writeSync(attempt.relFd, 'go\n');
        } finally {
          closeRelease();
        }
        outputs.arm();
      },
      withhold: closeRelease,
      ended: attempt.end.promise,
      dispose: () => {
        outputs.stop();
        this.release(attempt);
      },
    };
  }

  /** Prompts bash's spawner to look for ended gates; the prompts of one tick go as one. */
  private prompt(generation: Generation): void {
    if (generation.prompting || generation.exited) return;
    generation.prompting = true;
    process.nextTick(() => {
      generation.prompting = false;
      if (!generation.exited) generation.send(PROMPT);
    });
  }

  /** Closes what the attempt still holds of its FIFOs and removes them. */
  private release(attempt: Attempt): void {
    for (const key of ['outFd', 'errFd', 'relFd'] as const) {
      const fd = attempt[key];
      if (fd === null) continue;
      attempt[key] = null;
      try {
        closeSync(fd);
      } catch {
        // already closed
      }
    }
    for (const file of [attempt.fifos.out, attempt.fifos.err, attempt.fifos.rel]) {
      try {
        unlinkSync(file);
      } catch {
        // gone with the directory of a spawner that exited
      }
    }
  }

  /**
   * While an attempt or a FIFO batch is out, the waiter check's timer holds
   * this process alive, as a child process handle did: the answer comes
   * through the spawner's pipe, which is unreferenced.
   */
  private track(attempt: Attempt): void {
    this.attempts.set(attempt.id, attempt);
    this.holdAlive();
  }

  private untrack(attempt: Attempt): void {
    this.attempts.delete(attempt.id);
    if (attempt.leaderPid !== undefined && this.leaders.get(attempt.leaderPid) === attempt) this.leaders.delete(attempt.leaderPid);
    this.holdAlive();
  }

  private holdAlive(): void {
    if (this.attempts.size + this.fifos.pending > 0) this.checker?.ref();
    else this.checker?.unref();
  }

  private failStart(attempt: Attempt, reason: string): void {
    if (attempt.phase !== 'starting') return;
    attempt.phase = 'done';
    this.untrack(attempt);
    this.release(attempt); // the release end closes: a gate that still appears reads end of file and exits 125
    attempt.started.reject(spawnerError(`could not start the command group: ${reason}`));
  }

  private finish(attempt: Attempt, end: LeaderEnd): void {
    if (attempt.phase !== 'running') return;
    attempt.phase = 'done';
    this.untrack(attempt);
    attempt.end.resolve(end);
  }

  private attach(generation: Generation): void {
    const { child } = generation;
    let pending = '';
    child.stdout?.setEncoding('latin1').on('data', (chunk: string) => {
      pending += chunk;
      for (let nl = pending.indexOf('\n'); nl >= 0; nl = pending.indexOf('\n')) {
        const text = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        this.onLine(generation, text);
      }
    });
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      generation.stderr = (generation.stderr + chunk).slice(-2000);
    });
    // A write to a spawner that died surfaces through 'exit', not as an unhandled stream error.
    child.stdin?.on('error', () => undefined);
    child.once('exit', (code, signal) => this.onExit(generation, code, signal));
  }

  private onExit(generation: Generation, code: number | null, signal: NodeJS.Signals | null): void {
    generation.exited = true;
    const how = signal === null ? `status ${code}` : signal;
    const said = generation.stderr.trim() === '' ? '' : `: ${generation.stderr.trim().slice(-300)}`;
    generation.ready.reject(spawnerError(`the spawner exited (${how}) before it was ready${said}`));
    // Its FIFOs went with its directory (spawner.sh removes it on exit); the next spawner makes new ones.
    this.fifos.lost();
    for (const attempt of this.attempts.values()) {
      if (attempt.generation === generation) this.failStart(attempt, `the spawner exited (${how}) before the command group started${said}`);
    }
    void this.checkWaiters();
  }

  private onLine(generation: Generation, text: string): void {
    const [kind, a, b, c] = text.split(' ');
    const attempt = (): Attempt | undefined => this.attempts.get(Number(a));
    switch (kind) {
      case 'ready':
        generation.chains = new Set(text.split(' ').slice(2).filter((c): c is Chain => c === 'bash' || c === 'sh'));
        generation.ready.resolve(null);
        return;
      case 'fail':
        generation.ready.resolve(text.slice('fail '.length));
        return;
      case 'm':
        this.fifos.answered(a as string, b === 'ok');
        return;
      case 'w': {
        // Its start is read at the first check that finds it alive: most waiters are done before one.
        const found = attempt();
        if (found !== undefined) found.waiter = { pid: Number(b), start: null };
        return;
      }
      case 'p': {
        const found = attempt();
        if (found === undefined || found.phase !== 'starting') return;
        found.phase = 'running';
        found.leaderPid = Number(b);
        this.leaders.set(found.leaderPid, found);
        // bash's gate reads its own start (ID-2).
        if (c !== undefined && /^\d+$/.test(c)) found.leaderStart = c;
        found.started.resolve(found.leaderPid);
        return;
      }
      case 'x': {
        // x ID PID STATUS: the waiter's `wait` returned.
        const pid = Number(b);
        const status = this.statuses.get(pid) ?? waitStatus(Number(c));
        this.statuses.delete(pid);
        const found = attempt();
        if (found === undefined) return;
        if (found.phase === 'starting') this.failStart(found, `its gate exited with status ${c} before it reported (${found.chain === 'bash' ? 'its FIFOs, the job\'s stdin or its /proc/self/stat could not be opened' : 'is /bin/sh there?'})`);
        else this.finish(found, status);
        return;
      }
      case 'e': {
        const found = attempt();
        if (found !== undefined) this.failStart(found, `the spawner could not enter the working directory or open the command's FIFOs`);
        if (generation.framed) this.prompt(generation); // its gate exits: reaped at once
        return;
      }
      default: {
        // bash's spawner lists every job that changed: its waiters, and gates as they start ("Running").
        const jobs = parseJobsLine(text);
        if (jobs?.status != null && this.leaders.has(jobs.pid)) this.statuses.set(jobs.pid, jobs.status);
      }
    }
  }

  /** Every second while attempts run, and when a spawner exits: the processes that hold their exit statuses (spawner-attempts.ts). */
  private async checkWaiters(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      await checkHolders([...this.attempts.values()], this.startLimitMs, {
        failStart: (attempt, reason) => this.failStart(attempt, reason),
        finish: (attempt, end) => this.finish(attempt, end),
      });
    } finally {
      this.checking = false;
    }
  }
}
