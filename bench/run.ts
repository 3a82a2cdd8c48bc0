/**
 * `npm run bench [-- --quick] [options]`: fsjob side by side with the floor
 * (bench/floor.c: the spec's filesystem calls and nothing else), SQLite in
 * WAL mode, the Debian filesystem queues, and node spawning `true`, in one
 * process tree, one measurement after another, round-robin over systems, so
 * drift hits all alike. Prints the tables, writes bench/results/<date>.md and
 * <date>.svg (quick runs: <date>-quick.*, not committed).
 *
 * Options:
 *   --quick          small sizes, one round, no settling: about three minutes on an idle machine
 *   --rounds N       rounds per group (default 3; quick 1)
 *   --only LIST      groups to run: throughput,cpu,commands,enqueue,scale,profile,deletes (default all; quick: all but profile)
 *   --fs fresh|work  where each group's files live. fresh (the default): a new ext4, mkfs defaults
 *                    (with its journal), on a loop device over an image file, made for the group and
 *                    removed after it (lib/fresh-fs.ts); needs root, mkfs.ext4 and loop devices, and
 *                    falls back to work, saying why, when it cannot be made. work: the scratch directory
 *                    itself, on whatever filesystem holds it, after a `sync; sleep 62` (lib/fsstate.ts)
 *   --fs-dir DIR     where the image files go (default: the scratch directory's parent); the scale
 *                    group's takes up to 10 GiB of it, the others' up to 2 GiB
 *   --no-settle      skip the initial `sync; sleep 62` of --fs work (the fs state is then reported as unsettled)
 *   --work DIR       scratch directory (default: a new one under os.tmpdir(), removed at the end);
 *                    without --fs, --work DIR means --fs work, today's files in DIR as they were
 *   --keep           keep the scratch directory (and with --fs fresh each group's image file)
 *   --out DIR        where results go (default bench/results)
 *
 * Assertions about timings are never made: everything here is reported, as
 * medians over rounds and ratios within the run. A missing peer is skipped
 * with a line saying why.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import { dirqSystems, floorCpuSystem, floorSystems, sizes, sqliteSystems } from './lib/baselines.ts';
import { commandJobs, commandPeerSystems, spawnSystems } from './lib/commands.ts';
import { floorBinary, probeDisk, runFloor } from './lib/floor.ts';
import { deleteNearby, settle, type FsState } from './lib/fsstate.ts';
import { freshFsUnavailable, makeFreshFs, removeFreshFs } from './lib/fresh-fs.ts';
import { batchFsyncs, batchSystems, cliSystem, enqueuePlan } from './lib/enqueue.ts';
import { cpuPerJobSystem, fsjobCommandSystems, fsjobCycle, fsjobLibrarySystems, fsjobMissing, fsjobPollSystem } from './lib/fsjob.ts';
import { latencySample, makeCtx, roundRobin, runCycle, type Ctx, type Outcome, type System } from './lib/harness.ts';
import { describeFreshFs, describeMachine, loadNow } from './lib/machine.ts';
import { BENCH_DIR, Peer, tsNode } from './lib/proc.ts';
import { cpuProfiles, syscallsPerJob } from './lib/profile.ts';
import { renderReport, type GroupFs, type Results } from './lib/report.ts';
import { backlogSystems, buildBacklog, buildDepths, depthSystems, scalePlan, validateSystems, workerMemory } from './lib/scale.ts';
import { renderSvg } from './lib/svg.ts';

const GROUPS = ['throughput', 'cpu', 'commands', 'enqueue', 'scale', 'profile', 'deletes'] as const;
type Group = (typeof GROUPS)[number];

interface Args {
  quick: boolean;
  rounds: number;
  only: Set<Group>;
  settle: boolean;
  /** Where the groups' files live; `fsAsked`: named with --fs (fresh then fails instead of falling back). */
  fs: 'fresh' | 'work';
  fsAsked: boolean;
  fsDir: string | undefined;
  work: string | undefined;
  keep: boolean;
  out: string;
}

function parseArgs(argv: readonly string[]): Args {
  const quick = argv.includes('--quick');
  const value = (name: string): string | undefined => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const only = value('--only');
  const groups = new Set<Group>(only === undefined ? (quick ? GROUPS.filter((g) => g !== 'profile') : GROUPS) : (only.split(',') as Group[]));
  for (const g of groups) if (!GROUPS.includes(g)) throw new Error(`--only: unknown group ${g} (groups: ${GROUPS.join(', ')})`);
  const known = new Set(['--quick', '--rounds', '--only', '--fs', '--fs-dir', '--no-settle', '--work', '--keep', '--out']);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (!a.startsWith('--')) continue;
    if (!known.has(a)) throw new Error(`unknown option ${a} (see the header of bench/run.ts)`);
  }
  const fs = value('--fs');
  if (fs !== undefined && fs !== 'fresh' && fs !== 'work') throw new Error(`--fs: ${fs} is neither fresh nor work`);
  const fsDir = value('--fs-dir');
  return {
    quick,
    rounds: Number(value('--rounds') ?? (quick ? 1 : 3)),
    only: groups,
    settle: !quick && !argv.includes('--no-settle'),
    fs: fs ?? (value('--work') === undefined ? 'fresh' : 'work'),
    fsAsked: fs !== undefined,
    fsDir: fsDir === undefined ? undefined : path.resolve(fsDir),
    work: value('--work'),
    keep: argv.includes('--keep'),
    out: path.resolve(value('--out') ?? path.join(BENCH_DIR, 'results')),
  };
}

function today(): string {
  const d = new Date();
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}

async function sqliteVersion(): Promise<string> {
  try {
    const mod = (await import('better-sqlite3')) as { default: new (f: string) => { prepare(s: string): { get(): unknown }; close(): void } };
    const db = new mod.default(':memory:');
    const v = (db.prepare('select sqlite_version() as v').get() as { v: string }).v;
    db.close();
    return v;
  } catch {
    return 'not loadable';
  }
}

/** The systems of the "after deletes" group: each run starts right after a burst of deletes in its own queue directory. */
function afterDeleteSystems(ctx: Ctx, quick: boolean): System[] {
  const jobs = quick ? 500 : 4000;
  const size = sizes(quick);
  const prepared = async (name: string): Promise<string> => {
    const root = path.join(ctx.fresh(`ad-${name}`), 'q');
    await deleteNearby(root, jobs, ctx.fresh('templates'));
    return root;
  };
  return [
    {
      id: 'ad-floor-1t',
      label: 'floor: full job sequence, 1 thread',
      durability: 'fsync per step',
      run: async () => {
        const r = await runFloor(await prepared('floor'), size.floorJobs, 1, 'full');
        const calls: Record<string, number> = {};
        for (const [kind, { n, ns }] of Object.entries(r.calls)) if (n > 0) calls[`_us_${kind}`] = ns / n / 1000;
        return { rate: r.jobs_per_s, p50_us: r.p50_ns / 1000, p99_us: r.p99_ns / 1000, ...calls };
      },
    },
    {
      id: 'ad-fsjob-c2',
      label: 'fsjob: full cycle, 2 consumer processes',
      durability: 'fsync per step',
      skip: fsjobMissing,
      run: async () => fsjobCycle(await prepared('fsjob'), size.fsjobJobs, 2, 1),
    },
    {
      id: 'ad-sqlite-full-c2',
      label: 'SQLite WAL FULL: full cycle, 2 consumer processes',
      durability: 'fsync per commit',
      run: async () => {
        const db = path.join(await prepared('sqlite'), 'queue.db');
        const n = String(size.sqliteJobs);
        const producer = new Peer('sqlite producer', tsNode('sqlite-queue.ts', ['producer', db, 'FULL', n]));
        const cs = [0, 1].map((i) => new Peer(`sqlite consumer ${i}`, tsNode('sqlite-queue.ts', ['consumer', db, 'FULL', n])));
        const r = await runCycle(producer, cs, size.sqliteJobs, false);
        return { rate: r.cycleRate, ...latencySample(r.latencies) };
      },
    },
  ];
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const started = new Date();
  const t0 = performance.now();
  const log = (line: string) => process.stdout.write(line.startsWith('\n') || line.startsWith('#') ? `${line}\n` : `[${((performance.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);
  const fsDir = args.fsDir ?? (args.work === undefined ? os.tmpdir() : path.dirname(path.resolve(args.work)));
  // A fresh filesystem per group unless asked otherwise or it cannot be made here; an explicit --fs fresh fails instead.
  const unavailable = args.fs === 'fresh' ? freshFsUnavailable(fsDir) : null;
  if (unavailable !== null && args.fsAsked) throw new Error(`--fs fresh: cannot make a filesystem in ${fsDir}: ${unavailable}`);
  const fresh = args.fs === 'fresh' && unavailable === null;
  const work = args.work ?? mkdtempSync(path.join(os.tmpdir(), 'fsjob-bench-'));
  mkdirSync(work, { recursive: true });
  const size = sizes(args.quick);
  const date = today();
  const base = `${date}${args.quick ? '-quick' : ''}`;
  log(`fsjob bench (${args.quick ? 'quick' : 'full'} mode, ${args.rounds} round(s)), scratch ${work}`);
  await floorBinary();
  if (unavailable !== null) log(`no fresh filesystem per group (${unavailable}): every group runs in ${work}`);
  const machine = await describeMachine(fresh ? fsDir : work, await sqliteVersion());
  log(`machine: ${machine.cores} cores, ${machine.cpu}; ${fresh ? `each group on a fresh ext4 over an image in ${fsDir}, on` : 'scratch on'} ${machine.filesystem} (journal: ${machine.journal}) on ${machine.disk}; ${machine.kernel}; node ${machine.node}`);

  // A fresh ext4 has a journal, so it never scans past recently deleted inodes: it needs no settling.
  let state: FsState = fresh ? 'fresh' : 'unsettled';
  const groupFilesystems: GroupFs[] = [];
  if (!fresh && args.settle) {
    await settle(log);
    state = 'clean';
  }
  const results: Results = {
    date,
    mode: args.quick ? 'quick' : 'full',
    command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
    startedAt: started.toISOString().replace(/\.\d+Z$/, 'Z'),
    minutes: 0,
    rounds: args.rounds,
    machine,
    placement: fresh ? { fresh: groupFilesystems } : { scratch: work, why: unavailable ?? `asked for with ${args.fsAsked ? '--fs work' : '--work DIR'}` },
    probes: [],
    throughput: [],
    cpuPerJob: [],
    commands: [],
    enqueue: [],
    batchFsyncs: undefined,
    depth: [],
    backlog: [],
    backlogDepths: [],
    validate: [],
    memory: [],
    afterDeletes: [],
    depths: [],
    syscalls: undefined,
    cpu: [],
    notes: [],
  };
  if (!fresh && !args.settle) {
    results.notes.push(
      args.quick
        ? 'Quick mode: no `sync; sleep 62` first, so the fs state is "unsettled" (whatever deletes happened on this disk in the last minute). Figures are for a smoke test, not for comparison with a full run.'
        : 'Run with --no-settle: the fs state at the start is unknown ("unsettled").',
    );
  }
  const probe = async (ctx: Ctx, when: string, s: string) => {
    const p = await probeDisk(ctx.fresh('probe'));
    results.probes.push({ when, state: s, probe: p, load: loadNow() });
    log(`probe (${when}, ${s}): fsync overwrite ${p.fsync_overwrite_us.toFixed(0)} µs, new file ${p.fsync_new_file_us.toFixed(0)} µs, create ${p.create_us.toFixed(1)} µs; load ${loadNow().load1.toFixed(1)}`);
  };
  const group = async (ctx: Ctx, name: string, systems: System[], rounds: number): Promise<Outcome[]> => {
    log(`\n== ${name}`);
    return roundRobin(ctx, systems, rounds);
  };
  const shared = makeCtx(work, args.quick, log);
  /** Runs one group's body in its own fresh filesystem (removed after it, also when it throws) or in the shared scratch. */
  const inGroup = async (name: Group, body: (ctx: Ctx) => Promise<void>): Promise<void> => {
    if (!args.only.has(name)) return;
    if (!fresh) return body(shared);
    const fs = makeFreshFs(path.join(fsDir, `fsjob-bench-${process.pid}-${name}.img`), path.join(work, name), name === 'scale' ? 10 * 2 ** 30 : 2 * 2 ** 30);
    groupFilesystems.push({ group: name, ...describeFreshFs(fs) });
    log(`${name}: a fresh ext4 on ${fs.device} over ${fs.image} (loop direct I/O ${fs.directIo ? 'on' : 'off'}), mounted on ${fs.mountpoint}`);
    try {
      await body(makeCtx(fs.mountpoint, args.quick, log));
    } finally {
      for (const warning of removeFreshFs(fs, args.keep)) log(warning);
      log(`${name}: unmounted ${fs.mountpoint}, detached ${fs.device}, ${args.keep ? `kept ${fs.image}` : `removed ${fs.image}`}`);
    }
  };

  await inGroup('throughput', async (ctx) => {
    await probe(ctx, 'before throughput', state);
    const systems = [
      ...floorSystems(size),
      ...fsjobLibrarySystems(size),
      fsjobPollSystem(args.quick ? 3 : 10),
      ...sqliteSystems(size),
      ...dirqSystems(size),
    ];
    results.throughput = await group(ctx, 'throughput: floor, fsjob (library), SQLite, dirq', systems, args.rounds);
  });
  await inGroup('cpu', async (ctx) => {
    await probe(ctx, 'before CPU per job', state);
    const jobs = args.quick ? 100 : 300;
    results.cpuPerJob = await group(ctx, 'CPU per payload job, beside the floor', [cpuPerJobSystem(jobs), floorCpuSystem(Math.max(jobs, 300))], args.rounds);
  });
  await inGroup('commands', async (ctx) => {
    await probe(ctx, 'before command jobs', state);
    const n = commandJobs(args.quick);
    results.commands = await group(ctx, 'command jobs `true`', [...spawnSystems(n), ...fsjobCommandSystems(n, args.quick ? 5 : 20), ...commandPeerSystems(n)], args.rounds);
  });
  await inGroup('enqueue', async (ctx) => {
    await probe(ctx, 'before enqueue', state);
    const plan = enqueuePlan(args.quick);
    results.enqueue = await group(ctx, 'enqueue: the `fsjob enqueue` command against `node -e 0`, enqueueBatch by batch size', [cliSystem(plan.cliCalls), ...batchSystems(plan)], args.rounds);
    if ((await fsjobMissing()) === null) {
      log('\n== enqueue: fsyncs per job of enqueueBatch (strace)');
      try {
        results.batchFsyncs = await batchFsyncs(ctx, plan);
        if (typeof results.batchFsyncs !== 'string') log(`  fsyncs per job by batch size: ${Object.entries(results.batchFsyncs).map(([k, v]) => `${k}: ${v.toFixed(2)}`).join(', ')}`);
      } catch (error) {
        results.batchFsyncs = `strace failed: ${error instanceof Error ? error.message.slice(0, 400) : String(error)}`;
      }
    }
  });
  await inGroup('scale', async (ctx) => {
    const plan = scalePlan(args.quick);
    results.depths = plan.depths;
    results.backlogDepths = plan.backlogDepths;
    log('\n== scale: building queues');
    const roots = await buildDepths(ctx, plan.depths);
    const backlog = await buildBacklog(ctx, plan);
    await probe(ctx, 'before scale', state);
    const scaleRounds = args.quick ? 1 : Math.min(2, args.rounds);
    // One run per depth: at 100,000 jobs a run takes minutes.
    results.validate = await group(ctx, 'scale: fsjob validate QUEUE', validateSystems(plan, roots), 1);
    results.depth = await group(ctx, 'scale: claim latency by depth', depthSystems(plan, roots), scaleRounds);
    results.backlog = await group(ctx, 'scale: deep backlog (Worker, fsjob status, enqueue)', backlogSystems(plan, backlog, roots), scaleRounds);
    if ((await fsjobMissing()) === null) {
      log('\n== scale: worker memory');
      for (const jobs of [0, plan.memoryJobs]) {
        try {
          const sample = await workerMemory(ctx, jobs, plan.memorySeconds);
          results.memory.push({ jobs, sample });
          log(`  fsjob work with ${jobs} queued jobs: max RSS ${sample['max_rss_mib']?.toFixed(0)} MiB, registered after ${sample['startup_s']?.toFixed(1)} s, ${sample['finished_in_window']} finished in the next ${plan.memorySeconds} s`);
        } catch (error) {
          results.notes.push(`worker memory with ${jobs} queued jobs failed: ${error instanceof Error ? error.message.slice(0, 400) : String(error)}`);
        }
      }
    }
  });
  await inGroup('profile', async (ctx) => {
    log('\n== where the time goes: strace -c and --cpu-prof');
    try {
      results.syscalls = await syscallsPerJob(ctx, args.quick);
    } catch (error) {
      results.syscalls = `strace failed: ${error instanceof Error ? error.message.slice(0, 400) : String(error)}`;
    }
    try {
      results.cpu = await cpuProfiles(ctx, args.quick);
    } catch (error) {
      results.notes.push(`cpu profile failed: ${error instanceof Error ? error.message.slice(0, 400) : String(error)}`);
    }
  });
  await inGroup('deletes', async (ctx) => {
    await probe(ctx, 'before after-deletes', state);
    results.afterDeletes = await group(ctx, 'after deletes: floor, fsjob, SQLite right after a burst of deletes in their queue directory', afterDeleteSystems(ctx, args.quick), args.rounds);
    await probe(ctx, 'after the after-deletes group', 'after deletes');
  });

  results.minutes = (performance.now() - t0) / 60_000;
  mkdirSync(args.out, { recursive: true });
  const mdPath = path.join(args.out, `${base}.md`);
  const svgPath = path.join(args.out, `${base}.svg`);
  // A hand-written analysis kept between the markers survives a rerun of the same day.
  const previous = existsSync(mdPath) ? readFileSync(mdPath, 'utf8') : '';
  const kept = /<!-- analysis -->[\s\S]*?<!-- \/analysis -->/.exec(previous)?.[0] ?? '';
  const md = renderReport(results, path.basename(svgPath), kept);
  // Each result file is replaced whole (write-file-atomic): a bench stopped while writing keeps the
  // previous report, and with it the hand-written analysis above.
  await writeFileAtomic(mdPath, md.endsWith('\n') ? md : `${md}\n`);
  await writeFileAtomic(svgPath, renderSvg(results));
  const raw = path.join(args.out, 'raw');
  mkdirSync(raw, { recursive: true });
  await writeFileAtomic(
    path.join(raw, `${base}.json`),
    JSON.stringify(
      {
        ...results,
        throughput: strip(results.throughput),
        cpuPerJob: strip(results.cpuPerJob),
        commands: strip(results.commands),
        enqueue: strip(results.enqueue),
        depth: strip(results.depth),
        validate: strip(results.validate),
        backlog: strip(results.backlog),
        afterDeletes: strip(results.afterDeletes),
      },
      null,
      1,
    ),
  );
  log(`\n${md}`);
  log(`written: ${path.relative(process.cwd(), mdPath)}, ${path.relative(process.cwd(), svgPath)}`);
  if (!args.keep && args.work === undefined) {
    log(fresh ? `removing ${work}` : `removing ${work} (this deletes many inodes: the next minute of this disk is in the "after deletes" state)`);
    rmSync(work, { recursive: true, force: true });
    log('removed');
  }
}

function strip(outcomes: Outcome[]) {
  return outcomes.map((o) => ({ id: o.system.id, label: o.system.label, samples: o.samples, skipped: o.skipped, error: o.error }));
}

await main();
process.exit(0);
