/**
 * Conformance manifests (spec/tools.md): how the runner finds the roles of
 * an implementation under test. A manifest is checked against
 * schemas/manifest.schema.json, its relative paths are resolved against its
 * own directory, and its argv templates are filled with {queue}, {request}
 * and {id} just before a role runs.
 *
 * "Relative paths in the manifest are relative to the manifest's own
 * directory" (MANIFEST-1) is applied two ways, so that both spellings work:
 * an argument that starts with "./" or "../" (and a program name that
 * contains a "/") is made absolute, and every role runs with the manifest's
 * directory as its working directory.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FsjobError } from '../../src/base/errors.ts';
import type { ConformanceManifest } from '../../src/records/generated/types.ts';
import { schemaErrors } from '../../src/records/schemas.ts';

export const ROLES = ['init', 'produce', 'consume', 'cancel', 'cancel_force', 'release', 'recover', 'validate'] as const;
export type Role = (typeof ROLES)[number];

/** MANIFEST-2: a role's time limit when the manifest gives none. */
export const DEFAULT_TIMEOUT_S = 60;

/** The optional features of spec/README.md, by level. */
export const PRODUCER_FEATURES = ['dedupe', 'gates'] as const;
export const CONSUMER_FEATURES = ['lanes', 'slots', 'preemption', 'gates', 'payload', 'workers', 'policy'] as const;
export type Feature = (typeof PRODUCER_FEATURES)[number] | (typeof CONSUMER_FEATURES)[number];
export type Level = 'producer' | 'consumer' | 'validator';

/** What an implementation claims (MANIFEST-3): the levels, and the features of each. */
export interface Profile {
  levels: ReadonlySet<Level>;
  /** Every feature claimed, at any level. */
  features: ReadonlySet<Feature>;
  /** The features claimed per level (`gates` is a feature of both). */
  byLevel: Readonly<Record<Level, ReadonlySet<Feature>>>;
  /** Whether the manifest said so (1.1) or the 1.0 default applies. */
  explicit: boolean;
}

export interface Manifest {
  name: string;
  profile: Profile;
  /** Absolute path of the manifest file. */
  file: string;
  /** Its directory: relative paths and the roles' working directory. */
  dir: string;
  /** Templates with relative paths already resolved. */
  roles: Partial<Record<Role, readonly string[]>>;
  env: Readonly<Record<string, string>>;
  timeoutMs: number;
}

/** The manifest of the reference implementation (bin/fsjob.js); as ../../conformance/, which holds from a chunk of dist/ too (tools/build/cli-bundle.ts). */
export const REFERENCE_MANIFEST = fileURLToPath(new URL('../../conformance/impls/reference/manifest.json', import.meta.url));

function resolveArg(arg: string, index: number, dir: string): string {
  if (arg.startsWith('./') || arg.startsWith('../')) return path.resolve(dir, arg);
  // A program named with a slash is a path; a bare name is looked up in PATH.
  if (index === 0 && arg.includes('/') && !path.isAbsolute(arg) && !arg.includes('{')) return path.resolve(dir, arg);
  return arg;
}

/** Parses and checks a manifest (MANIFEST-1). Throws USAGE naming the file and the first problem. */
export function parseManifest(text: string, file: string): Manifest {
  const absolute = path.resolve(file);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new FsjobError('USAGE', `${absolute} is not JSON: ${(error as Error).message}`, { path: absolute, clause: 'MANIFEST-1' });
  }
  const errors = schemaErrors('manifest', value);
  if (errors.length > 0) {
    const first = errors[0];
    const where = first?.instancePath === '' ? 'the manifest' : first?.instancePath;
    throw new FsjobError('USAGE', `${absolute} is not a valid manifest (schemas/manifest.schema.json): ${where} ${first?.message ?? 'is invalid'}`, {
      path: absolute,
      clause: 'MANIFEST-1',
    });
  }
  const manifest = value as ConformanceManifest;
  const profile = profileOf(manifest);
  const needed: [Level, Role][] = [
    ['producer', 'produce'],
    ['consumer', 'consume'],
    ['validator', 'validate'],
  ];
  for (const [level, role] of needed) {
    if (profile.levels.has(level) && (manifest.roles as Partial<Record<Role, unknown>>)[role] === undefined) {
      throw new FsjobError('USAGE', `${absolute} claims the ${level} level but has no ${role} role (MANIFEST-1, MANIFEST-3)`, { path: absolute, clause: 'MANIFEST-3' });
    }
  }
  for (const needsLanes of ['preemption', 'slots'] as const) {
    if (profile.byLevel.consumer.has(needsLanes) && !profile.byLevel.consumer.has('lanes')) {
      throw new FsjobError('USAGE', `${absolute} claims ${needsLanes} without lanes (spec/README.md: ${needsLanes} needs lanes)`, { path: absolute, clause: 'MANIFEST-3' });
    }
  }
  if (profile.byLevel.producer.has('gates') && manifest.roles.release === undefined) {
    throw new FsjobError('USAGE', `${absolute} claims the producer's gates feature but has no release role (MANIFEST-1)`, { path: absolute, clause: 'MANIFEST-1' });
  }
  const dir = path.dirname(absolute);
  const roles: Partial<Record<Role, readonly string[]>> = {};
  for (const role of ROLES) {
    const template = (manifest.roles as Partial<Record<Role, string[]>>)[role];
    if (template !== undefined) roles[role] = template.map((arg, index) => resolveArg(arg, index, dir));
  }
  return {
    name: manifest.name,
    profile,
    file: absolute,
    dir,
    roles,
    env: { ...(manifest.env ?? {}) },
    timeoutMs: (manifest.timeout_s ?? DEFAULT_TIMEOUT_S) * 1000,
  };
}

/**
 * MANIFEST-3: the profile a manifest claims. Without `profile` (1.0): the
 * producer and consumer levels with every feature but policy, and the
 * validator level when there is a validate role.
 */
function profileOf(manifest: ConformanceManifest): Profile {
  const claimed = manifest.profile;
  if (claimed === undefined) {
    // The features 1.0 had (MANIFEST-3).
    const levels = new Set<Level>(['producer', 'consumer']);
    if (manifest.roles.validate !== undefined) levels.add('validator');
    const producer = new Set<Feature>(['dedupe']);
    const consumer = new Set<Feature>(['lanes', 'preemption', 'payload', 'workers']);
    return { levels, features: new Set([...producer, ...consumer]), byLevel: { producer, consumer, validator: new Set() }, explicit: false };
  }
  const levels = new Set<Level>();
  const producer = new Set<Feature>(claimed.producer ?? []);
  const consumer = new Set<Feature>(claimed.consumer ?? []);
  if (claimed.producer !== undefined) levels.add('producer');
  if (claimed.consumer !== undefined) levels.add('consumer');
  if (claimed.validator !== undefined) levels.add('validator');
  return { levels, features: new Set([...producer, ...consumer]), byLevel: { producer, consumer, validator: new Set() }, explicit: true };
}

export function loadManifest(file: string): Manifest {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new FsjobError('USAGE', `cannot read the manifest ${file}: ${(error as Error).message}`, { path: file });
  }
  return parseManifest(text, file);
}

export interface Placeholders {
  queue?: string;
  request?: string;
  id?: string;
}

/** The argv of a role with {queue}, {request} and {id} replaced; throws when the role is missing or a placeholder has no value. */
export function roleArgv(manifest: Manifest, role: Role, values: Placeholders): string[] {
  const template = manifest.roles[role];
  if (template === undefined) throw new FsjobError('USAGE', `${manifest.name} has no ${role} role`);
  return template.map((arg) =>
    arg.replace(/\{(queue|request|id)\}/g, (whole, name: keyof Placeholders) => {
      const value = values[name];
      if (value === undefined) throw new FsjobError('USAGE', `the ${role} role of ${manifest.name} uses ${whole}, which this step does not provide`);
      return value;
    }),
  );
}

export function hasRole(manifest: Manifest, role: Role): boolean {
  return manifest.roles[role] !== undefined;
}
