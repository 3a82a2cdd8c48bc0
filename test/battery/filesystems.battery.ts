/**
 * Battery on several real filesystems (issue 19, `npm run battery:filesystems`,
 * opt-in; CI runs it as root). For each of ext4 (with its journal), xfs and
 * btrfs on a loop-mounted 512 MiB image, and tmpfs, with every temporary
 * directory of the runs on that filesystem (TMPDIR):
 *
 * - load: the battery's load test, shortened (FSJOB_BATTERY_JOBS jobs, 8
 *   consumer processes): exactly one receipt each, starts within attempts,
 *   lanes serial, validate clean;
 * - chaos: the soak test for FSJOB_SOAK_SECONDS under SIGKILL/SIGTERM;
 * - crash: `fsjob conformance --crash quick --case crash/` (kill -9 at a
 *   spread of mutating calls of every role, then recovery and the invariants);
 * - walker: the hostile walker (planted symlinks, FIFOs, sockets, hard
 *   links, wide modes, foreign owners): every one of its planted objects (the
 *   whole cross product, about 530) on each filesystem, since each plants
 *   onto that filesystem's own semantics; FSJOB_FILESYSTEMS_SAMPLE=1 plants
 *   the sample npm test plants (18) instead;
 * - probe: the bench's fsync probe (bench/floor.c: fsync of an overwrite and
 *   of a new file) and the protocol's floor in jobs/s at 1 and 16 threads.
 *
 * A filesystem whose tools or mount are missing is skipped with the reason
 * printed; a missing Debian package is installed with apt-get first when
 * running as root. The results go to stdout and to
 * bench/results/filesystems-latest.json.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { floorBinary, probeDisk, runFloor } from '../../bench/lib/floor.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const JOBS = process.env['FSJOB_BATTERY_JOBS'] ?? '150';
const SOAK_SECONDS = process.env['FSJOB_SOAK_SECONDS'] ?? '15';
const IMAGE_BYTES = 512 * 1024 * 1024;
const ONLY = process.env['FSJOB_FILESYSTEMS']?.split(',');

interface Filesystem {
  name: string;
  /** Debian package and the program it provides, when the filesystem needs one. */
  tool?: { program: string; pkg: string };
  /** Mounts the filesystem on `dir` (an empty directory); returns the device to detach, if any. */
  mount(dir: string, scratch: string): void;
}

function sh(argv: string[]): { status: number | null; out: string } {
  const done = spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8' });
  return { status: done.status, out: `${done.stdout ?? ''}${done.stderr ?? ''}${done.error?.message ?? ''}`.trim() };
}

function must(argv: string[]): void {
  const done = sh(argv);
  if (done.status !== 0) throw new Error(`${argv.join(' ')} failed (exit ${String(done.status)}): ${done.out}`);
}

function loopImage(mkfs: string[]): Filesystem['mount'] {
  return (dir, scratch) => {
    const image = join(scratch, 'image');
    writeFileSync(image, '');
    must(['truncate', '-s', String(IMAGE_BYTES), image]);
    must([...mkfs, image]);
    must(['mount', '-o', 'loop', image, dir]);
  };
}

const FILESYSTEMS: Filesystem[] = [
  { name: 'ext4', tool: { program: 'mkfs.ext4', pkg: 'e2fsprogs' }, mount: loopImage(['mkfs.ext4', '-q', '-F', '-O', 'has_journal']) },
  { name: 'xfs', tool: { program: 'mkfs.xfs', pkg: 'xfsprogs' }, mount: loopImage(['mkfs.xfs', '-q', '-f']) },
  { name: 'btrfs', tool: { program: 'mkfs.btrfs', pkg: 'btrfs-progs' }, mount: loopImage(['mkfs.btrfs', '-q', '-f']) },
  { name: 'tmpfs', mount: (dir) => must(['mount', '-t', 'tmpfs', '-o', `size=${IMAGE_BYTES},mode=0755`, 'tmpfs', dir]) },
];

/** The program, installing its package once if it is missing and we are root; a reason when it stays missing. */
function ensureTool(tool: { program: string; pkg: string }): string | undefined {
  const has = (): boolean => sh(['sh', '-c', `command -v ${tool.program} || test -x /usr/sbin/${tool.program} || test -x /sbin/${tool.program}`]).status === 0;
  if (has()) return undefined;
  if (process.getuid?.() !== 0) return `${tool.program} is missing (Debian package ${tool.pkg}) and we are not root to install it`;
  console.log(`  installing ${tool.pkg} (apt-get) for ${tool.program}`);
  const install = sh(['apt-get', 'install', '-y', '-q', tool.pkg]);
  if (install.status !== 0) sh(['apt-get', 'update', '-q']);
  if (!has() && sh(['apt-get', 'install', '-y', '-q', tool.pkg]).status !== 0) return `apt-get install ${tool.pkg} failed`;
  return has() ? undefined : `${tool.program} is still missing after installing ${tool.pkg}`;
}

interface Step {
  name: string;
  ok: boolean;
  seconds: number;
  /** The run's own summary line(s), for the results. */
  figures: string;
  output: string;
}

/** Runs a child with every temporary directory on the filesystem under test; never throws. */
function step(name: string, argv: string[], env: NodeJS.ProcessEnv, figures: (output: string) => string): Promise<Step> {
  const t0 = performance.now();
  return new Promise((done) => {
    const child = spawn(argv[0] as string, argv.slice(1), { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const watchdog = setTimeout(() => child.kill('SIGKILL'), 30 * 60_000);
    child.on('close', (status) => {
      clearTimeout(watchdog);
      done({ name, ok: status === 0, seconds: (performance.now() - t0) / 1000, figures: figures(output), output: output.slice(-4000) });
    });
  });
}

const uvu = (file: string): string[] => [process.execPath, '--import', 'tsx', 'node_modules/uvu/bin.js', 'test', `battery/${file}\\.test\\.ts$`];
/** The run's summary line: the first match of `pattern`, else its last non-empty line. */
const line = (pattern: RegExp) => (output: string): string => {
  const plain = output.replace(/\x1b\[[0-9;]*m/g, '');
  return plain.match(pattern)?.[0].trim() ?? plain.trim().split('\n').at(-1)?.trim() ?? '';
};

/** The conformance run's counts: cases passed and failed, and the crash points (kills) checked. */
function crashFigures(output: string): string {
  const plain = output.replace(/\x1b\[[0-9;]*m/g, '');
  return [plain.match(/\d+ passed[^\n]*/)?.[0], plain.match(/\d+ crash points checked/)?.[0]].filter((x) => x !== undefined).join('; ');
}

interface Result {
  filesystem: string;
  skipped?: string;
  steps: Omit<Step, 'output'>[];
  probe?: {
    fsync_overwrite_us: number;
    fsync_new_file_us: number;
    create_us: number;
    /** The fsyncs one job costs in the floor (enqueue, claim, exec, receipt: 9 of them), on one thread, and their count. */
    fsync_per_job_us: number;
    fsyncs_per_job: number;
    floor_jobs_per_s: Record<string, number>;
  };
}

const results: Result[] = [];
const battery = suite('battery: several real filesystems');

battery.after(() => {
  const file = join(ROOT, 'bench', 'results', 'filesystems-latest.json');
  mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
  writeFileSync(file, `${JSON.stringify({ date: new Date().toISOString(), jobs: Number(JOBS), soak_seconds: Number(SOAK_SECONDS), results }, null, 2)}\n`);
  console.log('\n  filesystem  held                                   fsync overwrite / new file / one job   floor jobs/s (1 / 16 threads)');
  for (const r of results) {
    if (r.skipped !== undefined) {
      console.log(`  ${r.filesystem.padEnd(10)}  SKIPPED: ${r.skipped}`);
      continue;
    }
    const held = r.steps.map((s) => `${s.name} ${s.ok ? 'ok' : 'FAIL'}`).join(', ');
    const p = r.probe;
    const probe = p === undefined ? '-' : `${p.fsync_overwrite_us.toFixed(0)} / ${p.fsync_new_file_us.toFixed(0)} / ${p.fsync_per_job_us.toFixed(0)} µs`;
    const floor = p === undefined ? '-' : `${p.floor_jobs_per_s['1']?.toFixed(0) ?? '?'} / ${p.floor_jobs_per_s['16']?.toFixed(0) ?? '?'}`;
    console.log(`  ${r.filesystem.padEnd(10)}  ${held.padEnd(37)}  ${probe.padEnd(37)}  ${floor}`);
  }
  console.log(`  (written to ${file})`);
});

for (const fs of FILESYSTEMS.filter((f) => ONLY === undefined || ONLY.includes(f.name))) {
  battery(`${fs.name}: load, chaos, crash and walker hold; the fsync probe and the floor are measured`, async () => {
    const missing = fs.tool === undefined ? undefined : ensureTool(fs.tool);
    if (missing !== undefined) {
      console.log(`SKIP ${fs.name}: ${missing}`);
      results.push({ filesystem: fs.name, skipped: missing, steps: [] });
      return;
    }
    const scratch = mkdtempSync(join(tmpdir(), `fsjob-fs-${fs.name}-`));
    const dir = join(scratch, 'mnt');
    mkdirSync(dir, { mode: 0o755 });
    try {
      fs.mount(dir, scratch);
    } catch (error) {
      const reason = `cannot mount ${fs.name} here (${error instanceof Error ? error.message : String(error)}); this needs root, loop devices and mount(2)`;
      console.log(`SKIP ${fs.name}: ${reason}`);
      results.push({ filesystem: fs.name, skipped: reason, steps: [] });
      rmSync(scratch, { recursive: true, force: true });
      return;
    }
    try {
      const tmp = join(dir, 'tmp');
      mkdirSync(tmp, { mode: 0o700 });
      const env = { TMPDIR: tmp, FSJOB_BATTERY_JOBS: JOBS, FSJOB_SOAK_SECONDS: SOAK_SECONDS };
      console.log(`\n  ${fs.name} on ${dir} (${sh(['findmnt', '-no', 'SOURCE,FSTYPE,OPTIONS', dir]).out})`);
      const steps: Step[] = [];
      const run = async (s: Promise<Step>): Promise<void> => {
        const done = await s;
        console.log(`    ${done.name}: ${done.ok ? 'ok' : 'FAILED'} in ${done.seconds.toFixed(0)} s${done.figures === '' ? '' : `: ${done.figures}`}`);
        if (!done.ok) console.log(done.output);
        steps.push(done);
      };
      await run(step('load', uvu('load'), env, line(/load: [^\n]*/)));
      await run(step('chaos', uvu('soak'), env, line(/soak: [^\n]*/)));
      await run(step('crash', [process.execPath, join(ROOT, 'bin', 'fsjob.js'), 'conformance', '--crash', 'quick', '--case', 'crash/', '--parallel', '2'], env, crashFigures));
      const walkerEnv = { ...env, FSJOB_BATTERY_LONG: process.env['FSJOB_FILESYSTEMS_SAMPLE'] === '1' ? '0' : '1' };
      await run(step('walker', uvu('walker'), walkerEnv, line(/walker: [^\n]*planted[^\n]*/)));
      const result: Result = { filesystem: fs.name, steps: steps.map(({ output: _, ...rest }) => rest) };
      try {
        await floorBinary();
        const probe = await probeDisk(mkdtempSync(join(tmp, 'probe-')));
        const floor: Record<string, number> = {};
        let perJob = { us: 0, n: 0 };
        for (const threads of [1, 16]) {
          const run = await runFloor(mkdtempSync(join(tmp, 'floor-')), 400, threads);
          floor[String(threads)] = run.jobs_per_s;
          if (threads === 1) {
            const fsyncs = [run.calls['fsync_file'], run.calls['fsync_dir']].filter((c) => c !== undefined);
            perJob = { us: fsyncs.reduce((t, c) => t + c.ns, 0) / 1000 / run.jobs, n: fsyncs.reduce((t, c) => t + c.n, 0) / run.jobs };
          }
        }
        result.probe = {
          fsync_overwrite_us: probe.fsync_overwrite_us,
          fsync_new_file_us: probe.fsync_new_file_us,
          create_us: probe.create_us,
          fsync_per_job_us: perJob.us,
          fsyncs_per_job: perJob.n,
          floor_jobs_per_s: floor,
        };
        console.log(
          `    probe: fsync overwrite ${probe.fsync_overwrite_us.toFixed(0)} µs, new file ${probe.fsync_new_file_us.toFixed(0)} µs; one job's ${perJob.n.toFixed(0)} fsyncs ${perJob.us.toFixed(0)} µs; ` +
            `floor ${floor['1']?.toFixed(0)} jobs/s on 1 thread, ${floor['16']?.toFixed(0)} on 16`,
        );
      } catch (error) {
        console.log(`    probe: not measured (${error instanceof Error ? error.message : String(error)}; it needs cc for bench/floor.c)`);
      }
      results.push(result);
      for (const s of steps) assert.ok(s.ok, `${fs.name}: ${s.name} failed:\n${s.output}`);
    } finally {
      sh(['umount', '-l', dir]);
      rmSync(scratch, { recursive: true, force: true });
    }
  });
}

battery.run();


