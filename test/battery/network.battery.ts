/**
 * Battery over a real network filesystem client (issue 19, `npm run
 * battery:network`, opt-in; CI can run it as root). An sshd on 127.0.0.1
 * exports one directory; sshfs mounts it twice, each mount with its own
 * attribute and entry caches. Two "hosts" are two pid namespaces
 * (`unshare --pid --fork --mount-proc`), each running FSJOB_NETWORK_WORKERS
 * `fsjob work` processes on its own mount: to the protocol they are two
 * hosts (same boot_id, another pid_ns: every claim of the other is foreign,
 * judged by its lease alone, ID-6/ID-7).
 *
 * First the mount is checked for what the spec needs (a hard link that fails
 * with EEXIST over an existing name, rename over a file, fsync); a mount
 * lacking one is reported and the run skipped. Then FSJOB_NETWORK_JOBS jobs
 * (max_attempts 1) are enqueued through both mounts while both hosts work,
 * and one host is SIGKILLed whole (its namespace's init) every
 * FSJOB_NETWORK_KILL_SECONDS and started again. At the end a recover and a
 * drain from the surviving host finish what the dead ones left, and:
 * exactly one receipt per job, no max_attempts=1 job started twice (each
 * command appends its id to a local log), validate clean from either mount.
 *
 * validate runs through each mount right after the drain; when it warns,
 * it runs again once sshfs's caches have expired (CACHE_EXPIRY_MS), and the
 * battery prints both tallies: a warning that went away was a mount's stale
 * cache, one that stays fails the run (validate must see a clean queue).
 *
 * What this does not test. There is no NFS client on this kernel (no nfs or
 * nfsd modules), and sshfs is not NFS: it has no close-to-open consistency
 * (NFS revalidates a file's attributes when it is opened and flushes it when
 * it is closed), no silly rename (NFS renames a file that is unlinked while
 * open to .nfsXXXX until the last close), no NFS attribute cache
 * (acregmin/acregmax, acdirmin/acdirmax) or lookup cache (lookupcache), no
 * retransmitted non-idempotent calls (the duplicate reply cache: a link()
 * that succeeded, retried, answers EEXIST, which FS-3 handles), and no
 * lockd. Its hard links do not keep inode numbers (each name has its own,
 * and st_nlink reads 1), so FS-3's check falls back on the bytes. A queue on
 * NFS needs what spec section 4.9 asks of any filesystem (FS-1..FS-3): hard
 * links and rename over a file (NFSv3 and v4 have both), fsync of files and
 * directories durable on the server (a `sync` export, not `async`), and
 * `hard` mounts (a `soft` mount turns a slow server into EIO mid-publish,
 * which is reported and retried, RCPT-7, but stalls jobs). `fsjob init` and
 * every worker start probe FS-1 and FS-2 and refuse what is missing. Caching
 * is a matter of delay, not of safety (FS-1: a stale cache can delay a break
 * or a start, never make two, since every claim is the server's `link()`):
 * the default attribute cache (`actimeo`, up to 60 s for directories) and
 * lookup cache can hold a new job back or keep a dead owner's claim that
 * much longer. `lookupcache=positive` (a cached negative lookup hides a name
 * another host just made) and a short `actimeo` (`actimeo=1`) keep starts
 * and recoveries prompt; none of this is probed.
 *
 * Skipped with a printed reason where root, sshd, sshfs, /dev/fuse or
 * unshare is missing.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');
const FSJOB = join(ROOT, 'bin', 'fsjob.js');
const JOBS = Number(process.env['FSJOB_NETWORK_JOBS'] ?? 2000);
const WORKERS = Number(process.env['FSJOB_NETWORK_WORKERS'] ?? 4);
const KILL_SECONDS = Number(process.env['FSJOB_NETWORK_KILL_SECONDS'] ?? 10);
const LEASE = '3s';

function sh(argv: string[], options: { input?: string; env?: NodeJS.ProcessEnv; timeout?: number } = {}): { status: number | null; out: string; stdout: string } {
  const done = spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8', input: options.input, env: { ...process.env, ...options.env }, timeout: options.timeout ?? 600_000 });
  return { status: done.status, stdout: done.stdout ?? '', out: `${done.stdout ?? ''}${done.stderr ?? ''}${done.error?.message ?? ''}`.trim() };
}

function has(program: string): boolean {
  return sh(['sh', '-c', `command -v ${program} || test -x /usr/sbin/${program}`]).status === 0;
}

/** Why this machine cannot run the battery, or undefined. */
function missing(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root (sshd and pid namespaces need it)';
  for (const [program, pkg] of [['sshd', 'openssh-server'], ['sshfs', 'sshfs'], ['unshare', 'util-linux'], ['ssh-keygen', 'openssh-client']]) {
    if (!has(program as string)) return `${program} is missing (Debian package ${pkg})`;
  }
  if (!existsSync('/dev/fuse')) return '/dev/fuse is missing (FUSE)';
  return undefined;
}

interface Net {
  scratch: string;
  export: string;
  mounts: [string, string];
  sshd: ChildProcess;
}

function startNet(): Net {
  const scratch = mkdtempSync(join(tmpdir(), 'fsjob-net-'));
  const keys = join(scratch, 'keys');
  mkdirSync(keys, { mode: 0o700 });
  for (const name of ['host', 'user']) {
    const k = sh(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f', join(keys, name)]);
    if (k.status !== 0) throw new Error(`ssh-keygen: ${k.out}`);
  }
  writeFileSync(join(keys, 'authorized'), readFileSync(join(keys, 'user.pub')));
  const port = 20_000 + (process.pid % 20_000);
  writeFileSync(
    join(scratch, 'sshd_config'),
    [`Port ${port}`, 'ListenAddress 127.0.0.1', `HostKey ${join(keys, 'host')}`, `AuthorizedKeysFile ${join(keys, 'authorized')}`, 'PermitRootLogin prohibit-password', 'PasswordAuthentication no', 'StrictModes no', 'UsePAM no', `PidFile ${join(scratch, 'sshd.pid')}`, 'Subsystem sftp internal-sftp', ''].join('\n'),
  );
  mkdirSync('/run/sshd', { recursive: true });
  const sshd = spawn('/usr/sbin/sshd', ['-D', '-e', '-f', join(scratch, 'sshd_config')], { stdio: 'ignore' });
  const exported = join(scratch, 'export');
  mkdirSync(exported, { mode: 0o755 });
  const mounts: [string, string] = [join(scratch, 'm1'), join(scratch, 'm2')];
  for (const dir of mounts) {
    mkdirSync(dir);
    let mounted = { status: 1 as number | null, out: '' };
    for (let tries = 0; tries < 50 && mounted.status !== 0; tries++) {
      if (tries > 0) spawnSync('sleep', ['0.2']);
      mounted = sh(['sshfs', '-p', String(port), '-o', `IdentityFile=${join(keys, 'user')},StrictHostKeyChecking=no,UserKnownHostsFile=/dev/null,reconnect`, `root@127.0.0.1:${exported}`, dir]);
    }
    if (mounted.status !== 0) throw new Error(`sshfs ${dir}: ${mounted.out}`);
  }
  return { scratch, export: exported, mounts, sshd };
}

function stopNet(net: Net): void {
  for (const dir of net.mounts) sh(['fusermount', '-u', '-z', dir]);
  net.sshd.kill('SIGTERM');
  rmSync(net.scratch, { recursive: true, force: true });
}

/** What the spec needs of the filesystem (LAYOUT, PUB-1..PUB-5), checked on `dir`; the first thing missing, or undefined. */
function lacks(dir: string): string | undefined {
  const probe = join(dir, 'probe');
  const script = [
    `set -e; mkdir ${probe}; cd ${probe}`,
    'echo a > f; ln f g || { echo "no hard links"; exit 1; }',
    'echo b > h; if ln h g 2>/dev/null; then echo "link over an existing name did not fail"; exit 1; fi',
    'mv -f h f || { echo "no rename over a file"; exit 1; }',
    'test "$(cat f)" = b || { echo "rename over a file did not replace it"; exit 1; }',
    `python3 -c "import os; fd=os.open('f', os.O_RDWR); os.fsync(fd); d=os.open('.', os.O_RDONLY); os.fsync(d)" || { echo "no fsync of a file or directory"; exit 1; }`,
  ].join('\n');
  const done = sh(['sh', '-c', script]);
  rmSync(probe, { recursive: true, force: true });
  return done.status === 0 ? undefined : done.out;
}

/** One host: a pid namespace running WORKERS workers on `mount`'s queue. */
function startHost(queue: string, log: string): ChildProcess {
  const workers = Array.from({ length: WORKERS }, () => `${process.execPath} ${FSJOB} work --queue ${queue} --lease ${LEASE} >>${log} 2>&1 &`).join('\n');
  return spawn('unshare', ['--pid', '--fork', '--mount-proc', 'sh', '-c', `${workers}\nwait`], { stdio: 'ignore' });
}

/** SIGKILL of a whole host: the init of its pid namespace (the kernel then kills every process in it). */
function killHost(host: ChildProcess): Promise<void> {
  const init = readFileSync(`/proc/${host.pid}/task/${host.pid}/children`, 'utf8').trim().split(/\s+/)[0];
  if (init !== undefined && init !== '') process.kill(Number(init), 'SIGKILL');
  return new Promise((done) => (host.exitCode !== null || host.signalCode !== null ? done() : host.once('close', () => done())));
}

interface Audit {
  summary: { errors: number; warnings: number };
  findings: { code: string; severity: string; message: string; path: string }[];
}

/** sshfs's cache_timeout (20 s by default) and a margin: after it, each mount reads the export afresh. */
const CACHE_EXPIRY_MS = 25_000;

/** The findings of an audit that are not infos, counted by severity and code. */
function tally(audit: Audit): string {
  const counts: Record<string, number> = {};
  for (const f of audit.findings) if (f.severity !== 'info') counts[`${f.severity} ${f.code}`] = (counts[`${f.severity} ${f.code}`] ?? 0) + 1;
  return JSON.stringify(counts);
}

function receipts(queue: string): Map<string, { outcome: string; reason?: string }> {
  const found = new Map<string, { outcome: string; reason?: string }>();
  for (const id of readdirSync(join(queue, 'jobs'))) {
    try {
      found.set(id, JSON.parse(readFileSync(join(queue, 'jobs', id, 'receipt.json'), 'utf8')) as { outcome: string; reason?: string });
    } catch {
      // not finished (yet)
    }
  }
  return found;
}

const network = suite('battery: two hosts over a network filesystem (sshfs)');
const why = missing();

network(`two hosts x ${WORKERS} workers over ${JOBS} jobs, hosts SIGKILLed whole: one start and one receipt each, validate clean from either mount`, async () => {
  if (why !== undefined) {
    console.log(`SKIP battery:network: ${why}`);
    return;
  }
  const net = startNet();
  const hosts: ChildProcess[] = [];
  try {
    const lacking = net.mounts.map(lacks).find((reason) => reason !== undefined);
    if (lacking !== undefined) {
      console.log(`SKIP battery:network: the sshfs mount lacks what the spec needs: ${lacking}`);
      return;
    }
    const [q1, q2] = net.mounts.map((m) => join(m, 'q')) as [string, string];
    assert.is(sh([process.execPath, FSJOB, 'init', '--queue', q1]).status, 0);
    const starts = join(net.scratch, 'starts');
    writeFileSync(starts, '');
    const t0 = Date.now();
    hosts.push(startHost(q1, join(net.scratch, 'host-a.log')), startHost(q2, join(net.scratch, 'host-b.log')));
    // Enqueue in batches through both mounts while both hosts work.
    // Each command logs its start, then runs for a second, so a host killed whole takes running commands with it.
    const request = JSON.stringify({ argv: ['sh', '-c', `echo "$FSJOB_JOB_ID" >> ${starts}; sleep 1`], cwd: '/' });
    const accepted: string[] = [];
    for (let sent = 0, turn = 0; sent < JOBS; turn++) {
      const n = Math.min(100, JOBS - sent);
      const done = sh([process.execPath, FSJOB, 'enqueue', '--queue', turn % 2 === 0 ? q1 : q2, '--batch', '-'], { input: `${Array(n).fill(request).join('\n')}\n` });
      assert.is(done.status, 0, done.out);
      accepted.push(...done.stdout.trim().split('\n'));
      sent += n;
    }
    // Chaos: one host at a time SIGKILLed whole, then started again, until most jobs are finished.
    let kills = 0;
    for (let victim = 0; receipts(q1).size < JOBS * 0.9 && Date.now() - t0 < 30 * 60_000; victim = 1 - victim) {
      await new Promise((done) => setTimeout(done, KILL_SECONDS * 1000));
      await killHost(hosts[victim] as ChildProcess);
      kills += 1;
      hosts[victim] = startHost(victim === 0 ? q1 : q2, join(net.scratch, `host-${victim === 0 ? 'a' : 'b'}.log`));
    }
    for (const host of hosts) await killHost(host);
    // The end: recover and drain from one mount finish what the dead hosts left (their claims are foreign: broken after the lease).
    const drained = Date.now();
    for (let round = 0; receipts(q1).size < accepted.length && round < 10; round++) {
      sh([process.execPath, FSJOB, 'recover', '--queue', q2]);
      sh(['unshare', '--pid', '--fork', '--mount-proc', process.execPath, FSJOB, 'work', '--drain', '--queue', q2, '--lease', LEASE, '--concurrency', '4']);
    }
    const finished = receipts(q1);
    const started = readFileSync(starts, 'utf8').trim().split('\n').filter((line) => line !== '');
    const perJob = new Map<string, number>();
    for (const id of started) perJob.set(id, (perJob.get(id) ?? 0) + 1);
    const twice = [...perJob].filter(([, n]) => n > 1);
    const outcomes: Record<string, number> = {};
    for (const r of finished.values()) outcomes[`${r.outcome}${r.reason ? `:${r.reason}` : ''}`] = (outcomes[`${r.outcome}${r.reason ? `:${r.reason}` : ''}`] ?? 0) + 1;
    // What validate sees through each mount, right after the drain and, when that shows warnings, again
    // once sshfs's caches have expired (cache_timeout, 20 s by default): a warning that goes away was the
    // mount's stale attribute or entry cache, one that stays is the queue's (and fails the battery).
    const validate = (): { status: number | null; out: string; report: Audit }[] =>
      [q1, q2].map((q) => {
        const run = sh([process.execPath, FSJOB, 'validate', '--json', q]);
        return { ...run, report: JSON.parse(run.stdout) as Audit };
      });
    let validations = validate();
    const fresh = validations.map((v) => tally(v.report));
    if (validations.some((v) => v.report.summary.warnings > 0)) {
      await new Promise((done) => setTimeout(done, CACHE_EXPIRY_MS));
      validations = validate();
    }
    const errors = validations.map((v) => v.report.summary);
    for (const [i, v] of validations.entries()) {
      const first = v.report.findings.filter((f) => f.severity !== 'info').slice(0, 3).map((f) => `${f.code} ${f.path}: ${f.message}`);
      console.log(`  validate m${i + 1}: right after the drain ${fresh[i]}, now ${tally(v.report)}${first.length === 0 ? '' : `; first: ${first.join(' | ')}`}`);
    }
    console.log(
      `\n  network: ${accepted.length} jobs over sshfs, 2 hosts x ${WORKERS} workers (pid namespaces), ${kills} whole-host SIGKILLs; ${started.length} starts, ` +
        `${twice.length} jobs started twice, receipts ${finished.size} ${JSON.stringify(outcomes)}; validate m1 ${JSON.stringify(errors[0])}, m2 ${JSON.stringify(errors[1])}; ` +
        `${((drained - t0) / 1000).toFixed(0)} s of chaos, ${((Date.now() - drained) / 1000).toFixed(0)} s to finish`,
    );
    assert.equal(twice, [], 'no max_attempts=1 job started twice (I2)');
    assert.is(finished.size, accepted.length, 'exactly one receipt for every accepted job (I3)');
    for (const v of validations) {
      assert.is(v.status, 0, `validate: ${v.out.slice(0, 2000)}`);
      assert.is(v.report.summary.warnings, 0, `validate warns of what no cache explains: ${tally(v.report)}`);
    }
  } finally {
    for (const host of hosts) if (host.exitCode === null && host.signalCode === null) await killHost(host).catch(() => undefined);
    stopNet(net);
  }
});

network.run();
