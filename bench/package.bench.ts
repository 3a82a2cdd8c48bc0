/**
 * The installed package, as a user's app gets it: how big it is, how many
 * packages it brings, and how fast the installed `fsjob` starts.
 *
 *   node --import tsx bench/package.bench.ts                  # packs this checkout (runs the build)
 *   node --import tsx bench/package.bench.ts --tarball F.tgz  # or measures a tarball made earlier (another commit)
 *   options: --runs N (default 10), --json
 *
 * It installs the tarball into a fresh app offline (tools/package/app.ts)
 * and times, round-robin so that the machine's other load hits each alike,
 * `node -e 0`, `fsjob --version`, `fsjob enqueue` and `fsjob status` (a
 * queue of 20 jobs), median of N wall times each (and of the CPU time each
 * used, which a loaded machine distorts less), and the same commands
 * from an unwritable install: run as the user nobody, who cannot write the
 * app (root owns it), when this runs as root; else that part is skipped with
 * the reason. One warm-up round is not counted (an install that compiles
 * itself on first use does it then, as its first user's first call would).
 * Timing belongs here, never in a test.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, lstatSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freshApp, packRepo } from '../tools/package/app.ts';
import { timeCommand } from './lib/timed.ts';

const NOBODY = 65534;

function option(name: string): string | undefined {
  const at = process.argv.indexOf(`--${name}`);
  return at < 0 ? undefined : process.argv[at + 1];
}

/** Bytes of the files under dir (apparent sizes, symlinks counted as links), the disk they take as `du` counts it (blocks of every file and directory, dir included), and the number of files. */
function treeSize(dir: string): { bytes: number; disk: number; files: number } {
  let bytes = 0;
  let disk = lstatSync(dir).blocks * 512;
  let files = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const at = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      const sub = treeSize(at);
      bytes += sub.bytes;
      disk += sub.disk;
      files += sub.files;
    } else {
      const stat = lstatSync(at);
      bytes += stat.size;
      disk += stat.blocks * 512;
      files += 1;
    }
  }
  return { bytes, disk, files };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

interface Probe {
  name: string;
  argv: string[];
  uid?: number;
}

/** Wall and CPU (user + system) milliseconds of one run; cpu is NaN without /usr/bin/time. */
function timeOnce(probe: Probe, cwd: string): { wall: number; cpu: number } {
  const t = timeCommand(probe.argv, { cwd, ...(probe.uid === undefined ? {} : { uid: probe.uid, env: { ...process.env, HOME: '/nonexistent' } }) });
  return { wall: t.wall_ms, cpu: t.cpu_ms };
}

async function main(): Promise<void> {
  const runs = Number(option('runs') ?? 10);
  const work = mkdtempSync(path.join(tmpdir(), 'fsjob-package-bench-'));
  chmodSync(work, 0o755);
  try {
    const tarball = option('tarball') ?? (await packRepo(work));
    const app = await freshApp(tarball, { parent: work });
    chmodSync(app.dir, 0o755);
    rmSync(path.join(app.dir, path.basename(tarball)));
    const lock = JSON.parse(readFileSync(path.join(app.dir, 'package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
    // Optional packages for other platforms are in the lockfile but not installed.
    const installed = Object.keys(lock.packages).filter((at) => at !== '' && existsSync(path.join(app.dir, at, 'package.json'))).length;
    const size = treeSize(path.join(app.dir, 'node_modules'));
    const own = treeSize(app.packageDir);
    const tarBytes = lstatSync(tarball).size;

    const asRoot = process.getuid?.() === 0;
    const queue = path.join(work, 'q');
    const fsjob = (args: string[]): Probe => ({ name: `fsjob ${args[0]}`, argv: [app.bin, ...args] });
    const init = spawnSync(app.bin, ['init', '--queue', queue], { encoding: 'utf8' });
    if (init.status !== 0) throw new Error(`fsjob init failed: ${init.stderr}`);
    for (let i = 0; i < 20; i++) spawnSync(app.bin, ['enqueue', '--queue', queue, '--', 'true']);
    const probes: Probe[] = [
      { name: 'node -e 0', argv: [process.execPath, '-e', '0'] },
      fsjob(['--version']),
      fsjob(['enqueue', '--queue', queue, '--', 'true']),
      fsjob(['status', '--queue', queue]),
    ];
    let skipped: string | undefined;
    if (asRoot) {
      // A second install that root never runs: whatever it would do on first use, nobody cannot.
      // nobody's own queue is in a directory it owns; the app stays root's and unwritable to nobody.
      const readOnly = await freshApp(tarball, { parent: work });
      chmodSync(readOnly.dir, 0o755);
      const theirs = path.join(work, 'nobody');
      mkdirSync(theirs, { mode: 0o700 });
      chownSync(theirs, NOBODY, NOBODY);
      const nobodyQueue = path.join(theirs, 'q');
      const made = spawnSync(readOnly.bin, ['init', '--queue', nobodyQueue], { encoding: 'utf8', uid: NOBODY, gid: NOBODY });
      if (made.status !== 0) skipped = `fsjob init as nobody failed: ${made.stderr.trim()}`;
      else {
        for (let i = 0; i < 20; i++) spawnSync(readOnly.bin, ['enqueue', '--queue', nobodyQueue, '--', 'true'], { uid: NOBODY, gid: NOBODY });
        const theirsProbe = (args: string[], name: string): Probe => ({ name, argv: [readOnly.bin, ...args], uid: NOBODY });
        probes.push(
          theirsProbe(['--version'], 'fsjob --version (unwritable)'),
          theirsProbe(['enqueue', '--queue', nobodyQueue, '--', 'true'], 'fsjob enqueue (unwritable)'),
          theirsProbe(['status', '--queue', nobodyQueue], 'fsjob status (unwritable)'),
        );
      }
    } else skipped = 'not root: cannot run the commands as another user to make the install unwritable';

    for (const probe of probes) timeOnce(probe, app.dir); // warm-up, not counted
    const times = new Map<string, { wall: number; cpu: number }[]>(probes.map((probe) => [probe.name, []]));
    for (let round = 0; round < runs; round++) for (const probe of probes) times.get(probe.name)?.push(timeOnce(probe, app.dir));

    const wallOf = (name: string): number => median((times.get(name) ?? []).map((t) => t.wall));
    const cpuOf = (name: string): number => median((times.get(name) ?? []).map((t) => t.cpu));
    const base = wallOf('node -e 0');
    const baseCpu = cpuOf('node -e 0');
    const rows = probes.map((probe) => {
      const ms = wallOf(probe.name);
      const cpu = cpuOf(probe.name);
      return {
        name: probe.name,
        median_ms: Math.round(ms),
        over_node_ms: Math.round(ms - base),
        ratio_to_node: Number((ms / base).toFixed(2)),
        cpu_ms: Math.round(cpu),
        cpu_ratio_to_node: Number((cpu / baseCpu).toFixed(2)),
      };
    });
    const result = {
      tarball: path.basename(tarball),
      tarball_bytes: tarBytes,
      installed_bytes: size.bytes,
      installed_disk_bytes: size.disk,
      installed_files: size.files,
      package_bytes: own.bytes,
      package_disk_bytes: own.disk,
      packages: installed,
      runs,
      load: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
      starts: rows,
      ...(skipped === undefined ? {} : { unwritable_skipped: skipped }),
    };
    if (process.argv.includes('--json')) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    else {
      const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(2)} MB`;
      process.stdout.write(
        `${result.tarball}: tarball ${mb(tarBytes)}; installed in a fresh app ${mb(size.bytes)} in ${size.files} files, ${result.packages} packages, ${mb(size.disk)} of disk as du counts it (fsjob itself ${mb(own.bytes)}, ${mb(own.disk)} of disk)\n` +
          `start-up, median of ${runs} (load ${result.load}):\n` +
          rows
            .map((row) => `  ${row.name.padEnd(32)} ${String(row.median_ms).padStart(5)} ms wall (+${row.over_node_ms} ms over node -e 0, x${row.ratio_to_node}), ${String(row.cpu_ms).padStart(4)} ms CPU (x${row.cpu_ratio_to_node})`)
            .join('\n') +
          '\n' +
          (skipped === undefined ? '' : `unwritable install: skipped (${skipped})\n`),
      );
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
