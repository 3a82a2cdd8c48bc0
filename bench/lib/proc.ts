/**
 * Child processes of the bench. Every system under test runs in children of
 * the one `npm run bench` process, one measurement after another, so drift of
 * the disk or of the other load on the machine hits every system alike.
 *
 * Children that need a common start (a producer and its consumers) speak a
 * line protocol on stdin/stdout: each prints `READY` once it is set up, the
 * parent writes `GO` to all of them at once, each prints one JSON line with
 * its result and exits; `STOP` asks a serving child to finish. Start-up time
 * (node, tsx, opening a database) is therefore never measured.
 */
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

export const BENCH_DIR = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
export const REPO_DIR = path.dirname(BENCH_DIR);

/** argv that runs a TypeScript file of the bench in a fresh node with the tsx loader. */
export function tsNode(file: string, args: readonly string[] = [], nodeFlags: readonly string[] = []): string[] {
  return [process.execPath, ...nodeFlags, '--import', 'tsx', path.join(BENCH_DIR, file), ...args];
}

export interface RunResult {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  wallMs: number;
}

/** Runs a command to its end, capturing output. Never throws for a non-zero exit. */
export function run(argv: readonly string[], options: SpawnOptions & { input?: string; timeoutMs?: number } = {}): Promise<RunResult> {
  const [cmd, ...args] = argv;
  if (cmd === undefined) throw new Error('run: empty argv');
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { ...options, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = options.timeoutMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
    child.on('error', (error) => {
      if (timer !== undefined) clearTimeout(timer);
      reject(error);
    });
    child.on('close', (status, signal) => {
      if (timer !== undefined) clearTimeout(timer);
      resolve({ status, signal, stdout, stderr, wallMs: performance.now() - started });
    });
    // A child that exits at once (or never reads) must not kill the bench with EPIPE.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(options.input ?? '');
  });
}

/** Runs a command and parses the last line of its stdout as JSON; throws with its stderr when it fails. */
export async function runJson<T>(argv: readonly string[], options: SpawnOptions & { input?: string; timeoutMs?: number } = {}): Promise<T> {
  const result = await run(argv, options);
  const lines = result.stdout.trim().split('\n');
  const last = lines[lines.length - 1] ?? '';
  if (result.status !== 0 || !last.startsWith('{')) {
    throw new Error(`${argv.join(' ')} failed (status ${result.status}, signal ${result.signal}): ${result.stderr.trim().slice(-2000)}`);
  }
  return JSON.parse(last) as T;
}

export function commandExists(name: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0;
}

/** A child that speaks the READY/GO/STOP protocol. */
export class Peer {
  readonly child: ChildProcess;
  private readonly lines: string[] = [];
  private waiters: Array<() => void> = [];
  private exited = false;
  private stderr = '';
  readonly name: string;
  /** Called for every line that is not READY or the final JSON (progress lines such as `D ...`). */
  onLine: ((line: string) => void) | undefined;

  constructor(name: string, argv: readonly string[], options: SpawnOptions = {}) {
    this.name = name;
    const [cmd, ...args] = argv;
    if (cmd === undefined) throw new Error('Peer: empty argv');
    this.child = spawn(cmd, args, { ...options, stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stdin!.on('error', () => undefined);
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      if (this.onLine !== undefined && !line.startsWith('{') && line !== 'READY') this.onLine(line);
      else this.lines.push(line);
      this.wake();
    });
    this.child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-8000);
    });
    this.child.on('exit', () => {
      this.exited = true;
      this.wake();
    });
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  private async waitFor(pred: () => boolean, what: string, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!pred()) {
      if (this.exited && !pred()) throw new Error(`${this.name} exited before ${what}: ${this.stderr.trim().slice(-2000)}`);
      if (Date.now() > deadline) throw new Error(`${this.name}: no ${what} within ${timeoutMs} ms: ${this.stderr.trim().slice(-2000)}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 200);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  ready(timeoutMs = 120_000): Promise<void> {
    return this.waitFor(() => this.lines.includes('READY'), 'READY', timeoutMs);
  }

  send(line: string): void {
    if (!this.exited) this.child.stdin!.write(`${line}\n`);
  }

  async result<T>(timeoutMs = 600_000): Promise<T> {
    await this.waitFor(() => this.lines.some((l) => l.startsWith('{')), 'result', timeoutMs);
    const line = this.lines.find((l) => l.startsWith('{')) as string;
    return JSON.parse(line) as T;
  }

  async exit(timeoutMs = 30_000): Promise<void> {
    await this.waitFor(() => this.exited, 'exit', timeoutMs).catch(() => {
      this.child.kill('SIGKILL');
    });
  }

  kill(signal: NodeJS.Signals = 'SIGTERM'): void {
    if (!this.exited) this.child.kill(signal);
  }

  get stderrTail(): string {
    return this.stderr;
  }
}

/** Starts peers, waits until all are READY, then says GO to all at once. */
export async function startTogether(peers: readonly Peer[]): Promise<void> {
  try {
    await Promise.all(peers.map((p) => p.ready()));
  } catch (error) {
    for (const p of peers) p.kill('SIGKILL');
    throw error;
  }
  for (const p of peers) p.send('GO');
}

/** One child of the protocol alone: started, told GO once READY, its result awaited. */
export async function oneShot<T>(name: string, argv: readonly string[], exitMs = 30_000): Promise<T> {
  const peer = new Peer(name, argv);
  await peer.ready();
  peer.send('GO');
  const r = await peer.result<T>();
  await peer.exit(exitMs);
  return r;
}

/** Child side: print READY, wait for GO (or STOP) on stdin; returns a function telling whether STOP arrived. */
export function childProtocol(): { go: Promise<void>; stopped: () => boolean; onStop: (fn: () => void) => void } {
  let stopped = false;
  const stopHandlers: Array<() => void> = [];
  let resolveGo: () => void = () => {};
  const go = new Promise<void>((resolve) => (resolveGo = resolve));
  const rl = createInterface({ input: process.stdin });
  rl.on('line', (line) => {
    if (line === 'GO') resolveGo();
    if (line === 'STOP') {
      stopped = true;
      resolveGo();
      for (const fn of stopHandlers) fn();
    }
  });
  rl.on('close', () => {
    stopped = true;
    resolveGo();
    for (const fn of stopHandlers) fn();
  });
  process.stdout.write('READY\n');
  return { go, stopped: () => stopped, onStop: (fn) => stopHandlers.push(fn) };
}

/** Child side: print the one result line and let the process end. */
export function childResult(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}
