/**
 * `fsjob work`: run a consumer (src/consumer Worker) over one or more queues.
 * This module declares its options and help; work-run.ts runs it, loaded only then.
 */
import type { FsjobCommand } from '../command.ts';

const SYSTEMD_UNIT = `Keep a worker running under systemd (a user unit, ~/.config/systemd/user/fsjob-work.service):

  [Unit]
  Description=fsjob worker
  [Service]
  Type=exec
  ExecStart=/usr/bin/env fsjob work --queue %h/.local/state/fsjob/default --concurrency 2 --shutdown-grace 10m
  Restart=on-failure
  RestartSec=2
  # SIGTERM to the worker alone: it claims nothing more and lets running jobs finish
  # (--shutdown-grace). The default KillMode=control-group would SIGTERM the jobs too.
  KillMode=mixed
  # The service's cgroup becomes the worker's: --cgroup auto contains each job in a child of it (EXEC-16).
  Delegate=yes
  # Longer than --shutdown-grace plus the longest kill grace (5s by default); after it,
  # systemd SIGKILLs everything left and the next worker recovers those jobs.
  TimeoutStopSec=11min
  [Install]
  WantedBy=default.target

then: systemctl --user enable --now fsjob-work. systemctl restart waits for the running jobs
(up to the grace) before the new worker starts. If the worker is killed, its guardian stops
its commands within 10 s (WORKER-2) and the next worker recovers the orphaned jobs (RECOV-2).`;

const CGROUP_HOWTO = `Containment (EXEC-16) is on by default where it is safe: --cgroup auto uses the worker's own cgroup v2 directory when
it is delegated to the worker (cgroup v2 at /sys/fs/cgroup, or /sys/fs/cgroup/unified in hybrid mode; a non-root worker
that owns its cgroup). systemd makes one: Delegate=yes in the unit above, or
  systemd-run --user --scope -p Delegate=yes fsjob work
Root gets no automatic cgroup (it could write into a subtree a service manager owns): name one, for example
  mkdir /sys/fs/cgroup/fsjob && fsjob work --cgroup /sys/fs/cgroup/fsjob
The start-up line says which cgroup contains the commands, or why none does. Without containment a process that
leaves its job's process group (setsid, a daemon) outlives the job; its receipt says so when it kept an output open.
A --cgroup DIR that is not on cgroup2, not writable, or where no child can be created is refused before anything runs.`;

export const workCommand: FsjobCommand = {
  builder: (yargs) =>
    yargs
      .option('queue', {
        alias: 'q',
        describe: 'Queue directory to serve; repeat to serve several round-robin (default: $FSJOB_QUEUE, else ~/.local/state/fsjob/default)',
        type: 'string',
        array: true,
      })
      .option('concurrency', {
        describe: "Jobs run at once (1 to 1024). The worker's pool of threads for file calls (fsyncs) gets one per job, 4 to 16, unless UV_THREADPOOL_SIZE is set",
        type: 'number',
        default: 1,
      })
      .option('drain', { describe: 'Exit 0 once no job remains that this worker can make progress on (retry delays are waited out; jobs held by other live consumers are not); the summary counts the held and blocked jobs left', type: 'boolean' })
      .option('once', { describe: 'Run one job, then exit 0', type: 'boolean' })
      .conflicts('drain', 'once')
      .option('allow', {
        describe: `Run only commands this glob allows; repeatable. A pattern without "/" matches argv[0] as written, which then runs as found in this worker's own PATH (never the job's); a pattern with "/" matches that resolved path, or an argv[0] written with a "/". Jobs setting LD_*, DYLD_*, GCONV_PATH, BASH_ENV or ENV are refused (EXEC-15). "*" and "?" stop at "/", "**" crosses it, [a-z] and [!a-z] are sets. Refused jobs get a rejected receipt (not_allowed, EXEC-9)`,
        type: 'string',
        array: true,
      })
      .option('max-output', { describe: 'Bytes kept per output stream at most (1048576, 64k, 1M; at most 64M); a job keeps min(its max_output_bytes, this)', type: 'string' })
      .option('lease', { describe: 'Lease of claims and of the worker registration: seconds or 30s, 2m (3s to 1h)', type: 'string', default: '30' })
      .option('shutdown-grace', {
        describe: 'On SIGTERM, SIGINT or SIGHUP: claim nothing more and give running jobs this long to finish (10s, 10m, 2h; at most 7d) before stopping them; a second signal stops them at once',
        type: 'string',
        default: '10s',
      })
      .option('cgroup', {
        describe:
          "Where each attempt's processes are contained (EXEC-16): DIR, a cgroup v2 directory this worker may create children in (each attempt runs in DIR/fsjob-<id>-<gen>, and whatever is left there when it ends, such as a process that left the job's group by setsid or a daemon, is killed and counted in the receipt); auto (the default): this worker's own cgroup when it is delegated to it (a non-root worker under systemd's Delegate=yes), else none, and the start-up line says why; off: only the process group is stopped",
        type: 'string',
        default: 'auto',
      })
      .option('log-time', {
        describe: 'What begins each log line on stderr: iso, the time as 2026-12-01T18:30:00.123Z; none, nothing (under journald or another logger that stamps lines itself)',
        choices: ['iso', 'none'],
        type: 'string',
        default: 'iso',
      })
      .option('json', { describe: 'Progress as JSON lines on stderr (each with time_ms) and the summary as JSON on stdout', type: 'boolean', default: false })
      .example('$0 work --drain', 'run everything runnable in the default queue, then exit')
      .example("$0 work --queue /srv/q --concurrency 4 --allow 'make' --allow '/usr/local/bin/*'", 'serve a queue, running only make and /usr/local/bin/* commands')
      .example('$0 work -q /srv/q --shutdown-grace 30m', 'a restart (SIGTERM) lets running jobs finish for up to 30 minutes first')
      .epilog(`${SYSTEMD_UNIT}\n\n${CGROUP_HOWTO}\n\nExit status: 0 when drained, after --once, and after a clean shutdown on SIGTERM, SIGINT or SIGHUP; 1 when the queue cannot be used, when the filesystem refused an operation fsjob needs (FS-2: no hard links, no rename over), or when the worker leaves a job it claimed unfinished (its receipt could not be written: the log says why; fsjob recover ends it once the worker is gone).`),
  run: async (args, io) => (await import('./work-run.ts')).runWork(args, io),
};
