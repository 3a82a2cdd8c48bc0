/**
 * What a worker needs before it may run a command job (WORKER-2, fail
 * closed): its guardian, which stops the recorded groups if the worker dies,
 * and its spawner, which forks every command (spawner.ts). Both start before
 * the first command; one that dies is started again, and no command job is
 * claimed until it answers. Where the spawner cannot run at all (no
 * setsid(1), an env(1) without --default-signal) node forks each command
 * itself (launch.ts), and the worker says so once.
 */
import { FsjobError } from '../base/errors.ts';
import type { Context } from './context.ts';
import type { Guardian } from './guardian.ts';
import { directLauncher, type Launcher } from './launch.ts';
import type { Spawner } from './spawner.ts';

export class CommandSupport {
  readonly guardian: Guardian;
  private readonly spawner: Spawner;
  private readonly ctx: Context;
  /** The queue an error event names (the worker's first). */
  private readonly queue: () => string;
  /** Who forks the commands: the spawner, or node itself where the spawner cannot run. */
  private forker: Launcher;
  private guardianDown = false;
  private spawnerDown = false;

  constructor(guardian: Guardian, spawner: Spawner, ctx: Context, queue: () => string) {
    this.guardian = guardian;
    this.spawner = spawner;
    this.ctx = ctx;
    this.queue = queue;
    this.forker = spawner;
  }

  get launcher(): Launcher {
    return this.forker;
  }

  /** True while a command may start: the guardian runs, and so does the spawner (unless node forks). */
  get ready(): boolean {
    return this.guardian.healthy && (this.forker !== this.spawner || this.spawner.healthy);
  }

  /**
   * Starts the guardian (a failure is the worker's: it rejects) and the
   * spawner; a spawner that cannot start now is tried again by ensure().
   */
  async start(): Promise<void> {
    await this.guardian.start();
    try {
      this.adopt(await this.spawner.start());
    } catch (error) {
      this.spawnerDown = true;
      this.ctx.emit({ type: 'spawner', state: 'down', reason: error instanceof Error ? error.message : String(error) });
    }
  }

  /** Restarts whichever died; until it is back, `ready` is false. */
  async ensure(): Promise<void> {
    if (!this.guardian.healthy) {
      if (!this.guardianDown) this.ctx.emit({ type: 'guardian', state: 'down' });
      this.guardianDown = true;
      try {
        await this.guardian.ensure();
        this.guardianDown = false;
        this.ctx.emit({ type: 'guardian', state: 'restarted' });
      } catch (error) {
        this.fail(error, 'the guardian cannot be restarted', 'WORKER-2');
      }
    }
    if (this.forker === this.spawner && !this.spawner.healthy) {
      if (!this.spawnerDown) this.ctx.emit({ type: 'spawner', state: 'down' });
      this.spawnerDown = true;
      try {
        const unavailable = await this.spawner.ensure();
        this.spawnerDown = false;
        if (unavailable === null) this.ctx.emit({ type: 'spawner', state: 'restarted' });
        this.adopt(unavailable);
      } catch (error) {
        this.fail(error, 'the spawner cannot be restarted', 'EXEC-2');
      }
    }
  }

  /** Clean exit, once no attempt runs: nothing is tracked, so the guardian exits without signalling; the spawner exits. */
  async close(): Promise<void> {
    this.guardian.close();
    await this.spawner.close();
  }

  /** A spawner that cannot run here (`unavailable` says why) hands the forking to node, once. */
  private adopt(unavailable: string | null): void {
    if (unavailable === null) return;
    this.forker = directLauncher;
    this.ctx.emit({ type: 'spawner', state: 'unavailable', reason: unavailable });
  }

  private fail(error: unknown, what: string, clause: string): void {
    const failure = error instanceof FsjobError ? error : new FsjobError('IO', `${what}: ${String(error)}`, { clause });
    this.ctx.emit({ type: 'error', queue: this.queue(), job_id: null, error: failure });
  }
}
