/**
 * Bytes that are not UTF-8 (SPEC-3; issue 28 point 1): a command's
 * arguments and environment values are bytes, a record is UTF-8 text, so
 * such bytes travel in the byte form {"base64": ...} and arrive as
 * themselves, never as U+FFFD.
 *
 * producer/argv-bytes: the produce role gets requests whose argv and env hold
 * byte forms. The published spec must hold the same byte forms (the bytes
 * exactly, in the one form SPEC-3 allows); a request with a byte form SPEC-3
 * forbids (bytes that are UTF-8, base64 that is not canonical) is refused
 * with nothing published.
 *
 * consumer/argv-bytes: one job's argument and environment value are byte
 * forms of bytes that a shell or a decoder could get wrong (%, \, a trailing
 * newline, a lone 0xff beside a valid sequence); its command writes them to
 * files, which must hold exactly those bytes. Four more jobs hold what cannot
 * be those bytes: an argument written in spec.json as a raw byte that is not
 * UTF-8 (a reader that decodes with replacement would run U+FFFD), byte forms
 * of bytes that are UTF-8, of base64 that is not canonical, and of bytes with
 * a NUL. Each must be rejected invalid_spec and never run.
 */
import { readFile, unlink } from 'node:fs/promises';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { serializeRecord, type JobRequest } from '../../src/records/codec.ts';
import { type CaseContext, type ConformanceCase } from '../runner/case.ts';
import { listing } from '../runner/inspect.ts';
import { describeExit } from '../runner/process.ts';
import { plantBytes, reopen, stageJob } from '../runner/stage.ts';
import { sh } from './jobs.ts';

/** An argument whose decoding is easy to get wrong: a printf directive, a backslash, a byte that is not UTF-8 beside one that is, a trailing newline. */
const ARG = Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x20, 0x25, 0x73, 0x5c, 0x6e, 0xff, 0xc3, 0xa9, 0x0a]);
const VALUE = Buffer.from([0xfe, 0x3d, 0x25, 0x25, 0x0a, 0x0a]);
const form = (bytes: Buffer): { base64: string } => ({ base64: bytes.toString('base64') });

async function producerCase(ctx: CaseContext): Promise<void> {
  const root = await ctx.newQueue('bytes-produce');
  const work = await ctx.subdir('bytes-produce/work');
  const request: JobRequest = { argv: ['printf', '%s', form(ARG)], env: { X: form(VALUE), PLAIN: 'caf\u00e9' }, cwd: work };
  const produced = await ctx.produce(root, request);
  if (produced.id === undefined) {
    ctx.fail(['SPEC-3', 'REQ-1'], `produce must accept a request whose argv and env hold byte forms (bytes that are not UTF-8): ${describeExit(produced.result)}`, listing(await ctx.snapshot(root)));
    return;
  }
  const text = await readFile(path.join(root, 'jobs', produced.id, 'spec.json'), 'utf8').catch(() => '');
  let spec: { argv?: unknown; env?: unknown } = {};
  try {
    spec = JSON.parse(text) as typeof spec;
  } catch {
    // reported below: the spec is not what was asked
  }
  ctx.check(
    isDeepStrictEqual(spec.argv, request.argv) && isDeepStrictEqual(spec.env, request.env),
    ['SPEC-3'],
    `the spec must carry the bytes it was given exactly, in the byte form of SPEC-3: argv ${JSON.stringify(request.argv)} and env ${JSON.stringify(request.env)}; got argv ${JSON.stringify(spec.argv)}, env ${JSON.stringify(spec.env)}`,
    [`spec.json: ${text.slice(0, 600)}`],
  );
  const before = (await ctx.snapshot(root)).jobs.size;
  for (const [what, bad] of [
    ['a byte form of bytes that are UTF-8 ("ok")', form(Buffer.from('ok'))],
    ['a byte form whose base64 is not canonical ("/x==")', { base64: '/x==' }],
  ] as const) {
    const refused = await ctx.produce(root, { argv: ['echo', bad], cwd: work });
    const after = (await ctx.snapshot(root)).jobs.size;
    ctx.check(
      refused.id === undefined && refused.result.code !== 0 && refused.result.code !== 3 && after === before,
      ['SPEC-3', 'ENQ-1'],
      `produce must refuse a request holding ${what} (one form per value, SPEC-3) and publish nothing: ${describeExit(refused.result)}, jobs ${before} -> ${after}`,
    );
  }
}

async function consumerCase(ctx: CaseContext): Promise<void> {
  const root = await ctx.newQueue('bytes-consume');
  const work = await ctx.subdir('bytes-consume/work');
  const queue = await reopen(root);
  const out = { arg: path.join(work, 'arg'), value: path.join(work, 'value') };
  const good = await stageJob(queue, { argv: [...sh('printf %s "$1" > "$2"; printf %s "$X" > "$3"'), form(ARG), out.arg, out.value], env: { X: form(VALUE) }, cwd: work });
  // What cannot be the bytes a consumer would pass: each job, if run, leaves its marker.
  const bad: { what: string; id: string; marker: string }[] = [];
  const plant = async (what: string, element: unknown, raw?: (bytes: Buffer) => Buffer): Promise<void> => {
    const marker = path.join(work, `ran-${bad.length}`);
    const job = await stageJob(queue, { argv: [...sh('touch "$1"', marker), 'placeholder'], cwd: work });
    const spec = { ...job.spec, argv: [...(job.spec.argv ?? []).slice(0, -1), element] };
    const file = path.join(job.dir, 'spec.json');
    await unlink(file);
    await plantBytes(file, raw === undefined ? serializeRecord(spec) : raw(serializeRecord(spec)));
    bad.push({ what, id: job.id, marker });
  };
  await plant('an argument written as a raw byte that is not UTF-8 (spec.json is not UTF-8)', 'caf\u00e9', (bytes) => Buffer.from(bytes.toString('latin1').replace('caf\u00c3\u00a9', 'caf\u00e9'), 'latin1'));
  await plant('a byte form of bytes that are UTF-8', form(Buffer.from('ok')));
  await plant('a byte form whose base64 is not canonical', { base64: '/x==' });
  await plant('a byte form of bytes holding a NUL', form(Buffer.from([0xff, 0x00, 0x41])));
  const run = await ctx.role('consume', { queue: root });
  const snapshot = await ctx.snapshot(root);
  const evidence = [describeExit(run), ...listing(snapshot, new Set([good.id, ...bad.map((b) => b.id)]))];
  const got = { arg: await readFile(out.arg).catch(() => undefined), value: await readFile(out.value).catch(() => undefined) };
  ctx.check(
    got.arg?.equals(ARG) === true && got.value?.equals(VALUE) === true,
    ['SPEC-3', 'EXEC-4', 'EXEC-6'],
    `the command must get exactly the bytes the spec's byte forms hold: argument ${ARG.toString('hex')} and X ${VALUE.toString('hex')}; it got ${got.arg?.toString('hex') ?? 'nothing'} and ${got.value?.toString('hex') ?? 'nothing'}`,
    evidence,
  );
  for (const b of bad) {
    const receipt = snapshot.jobs.get(b.id)?.receipt;
    const ran = await readFile(b.marker).then(() => true, () => false);
    ctx.check(
      !ran && receipt?.outcome === 'rejected' && receipt.reason === 'invalid_spec',
      ['SPEC-3', 'REC-1', 'CLAIM-6'],
      `a spec holding ${b.what} cannot be read as the bytes to pass: the job must be rejected invalid_spec and never run; it ${ran ? 'ran' : 'did not run'}, receipt ${receipt === undefined ? 'none' : `${receipt.outcome} ${receipt.reason ?? ''}`}`,
      evidence,
    );
  }
}

export const bytesCases: ConformanceCase[] = [
  { name: 'producer/argv-bytes', clauses: ['SPEC-3', 'ENQ-1'], level: 'producer', strength: 'MUST', run: producerCase },
  { name: 'consumer/argv-bytes', clauses: ['SPEC-3', 'REC-1', 'CLAIM-6', 'EXEC-4', 'EXEC-6'], level: 'consumer', strength: 'MUST', run: consumerCase },
];
