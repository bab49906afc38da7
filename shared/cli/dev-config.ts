/**
 * The app's `orrery.config.*` for `orrery dev`: where it is, how it is loaded, and what it must
 * export. Discovery and validation are pure but for the file checks; loading goes through an
 * injectable importer, so tests need no TypeScript loader.
 *
 * The config exports the app's job definitions (what `defineJob` returns), as the default export
 * or a named `jobs` export:
 *
 * @example
 * // orrery.config.ts
 * import { invoice } from './jobs/invoice';
 * import { welcome } from './jobs/welcome';
 * export default { jobs: [invoice, welcome] };
 *
 * It may also carry `grants` (a grants document, as the construct deploys it) and `callers`
 * (local credentials mapped to ARNs), to try the app's grants locally (docs/security.md).
 */
import { existsSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type GrantsDocument, principalId, readGrantsDocument } from '../core/access';
import type { BatchJobDefinition } from '../runtime/batch-worker';
import type { JobDefinition } from '../runtime/job-definition';

/** A job definition `orrery dev` runs: `defineJob`'s, or `defineBatchJob`'s (a batch handler). */
export type DevJob = JobDefinition | BatchJobDefinition;

import { CliConfigError } from './config';

/** The names `orrery dev` looks for in the app's directory, in this order. */
export const DEV_CONFIG_NAMES = ['orrery.config.ts', 'orrery.config.mts', 'orrery.config.mjs', 'orrery.config.js'];

/** The `--config` option of the commands that load job definitions (`orrery dev`, `orrery replay-check`). */
export const CONFIG_OPTION = {
  type: 'string',
  value: 'FILE',
  description: 'the config file (default: ./orrery.config.{ts,mts,mjs,js})',
} as const;

/** A config that cannot be found, loaded, or does not export job definitions. */
export class DevConfigError extends CliConfigError {
  readonly file: string | undefined;

  constructor(message: string, file?: string, options?: { cause?: unknown }) {
    super(message);
    this.name = 'DevConfigError';
    if (options && 'cause' in options) this.cause = options.cause;
    this.file = file;
  }
}

/** The config file: `explicit` (relative to `cwd`) when given, else the first of {@link DEV_CONFIG_NAMES} in `cwd`. */
export function findDevConfig(cwd: string, explicit?: string): string {
  if (explicit !== undefined) {
    const file = resolve(cwd, explicit);
    if (!existsSync(file) || !statSync(file).isFile()) throw new DevConfigError(`no config file at ${file}`, file);
    return file;
  }
  for (const name of DEV_CONFIG_NAMES) {
    const file = join(cwd, name);
    if (existsSync(file)) return file;
  }
  throw new DevConfigError(
    `no orrery.config.ts, .mts, .mjs or .js in ${cwd}; create one that exports your job definitions:\n` +
      `  import { invoice } from './jobs/invoice';\n  export default { jobs: [invoice] };\n` +
      '(or name another file with --config)',
  );
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return `an object with keys ${JSON.stringify(Object.keys(value as object))}`;
  return typeof value;
}

function isDefinition(value: unknown): value is DevJob {
  if (typeof value !== 'object' || value === null) return false;
  const { spec, run, runBatch } = value as { spec?: { type?: unknown }; run?: unknown; runBatch?: unknown };
  return (
    typeof spec === 'object' &&
    spec !== null &&
    typeof spec.type === 'string' &&
    (typeof run === 'function' || typeof runBatch === 'function')
  );
}

/**
 * The job definitions a loaded config module exports (`default.jobs`, or a named `jobs`).
 * Throws {@link DevConfigError} naming the file and what was wrong: no `jobs`, an empty list, an
 * entry that is not a job definition, or two definitions of one type.
 */
export function devConfigJobs(module: Record<string, unknown>, file: string): DevJob[] {
  const name = basename(file);
  const exported = module.default as { jobs?: unknown; default?: { jobs?: unknown } } | undefined;
  // a config compiled as CommonJS (no "type": "module" in the app) arrives as { default: module.exports }
  const jobs = exported?.jobs ?? module.jobs ?? exported?.default?.jobs;
  if (jobs === undefined) {
    throw new DevConfigError(
      `${name} exports no jobs: export default { jobs: [...] } or export const jobs = [...] (found ${describe(module.default ?? module)})`,
      file,
    );
  }
  if (!Array.isArray(jobs))
    throw new DevConfigError(`${name}: jobs must be an array of job definitions, not ${describe(jobs)}`, file);
  if (jobs.length === 0) throw new DevConfigError(`${name}: jobs is empty; list at least one job definition`, file);
  const seen = new Set<string>();
  jobs.forEach((job: unknown, index) => {
    if (!isDefinition(job)) {
      throw new DevConfigError(
        `${name}: jobs[${index}] is not a job definition (what defineJob or defineBatchJob returns, with spec.type and run or runBatch): it is ${describe(job)}`,
        file,
      );
    }
    if (seen.has(job.spec.type))
      throw new DevConfigError(`${name}: job type ${JSON.stringify(job.spec.type)} is listed twice`, file);
    seen.add(job.spec.type);
  });
  return jobs as DevJob[];
}

/** A local caller of `orrery dev`: credentials to sign with, and the identity they stand for. */
export interface DevCaller {
  accessKeyId: string;
  secretAccessKey: string;
  /** The ARN the caller signs as: a role, a user, or an assumed role with its session. */
  arn: string;
}

/** Who may call `orrery dev`'s API, from the config. */
export interface DevAccess {
  /** The grants document. @default every caller is admin (as without grants) */
  grants?: GrantsDocument;
  /** Local credentials mapped to identities. @default none */
  callers?: DevCaller[];
}

/**
 * The optional `grants` and `callers` of a loaded config module, beside its `jobs` (in the
 * default export, or as named exports). Throws {@link DevConfigError} naming the file and the
 * first fault: a grants document of the wrong shape, a caller without credentials, an ARN that
 * is no IAM role, user or assumed role, or two callers with one access key id.
 */
export function devConfigAccess(module: Record<string, unknown>, file: string): DevAccess {
  const name = basename(file);
  const exported = module.default as { jobs?: unknown; default?: Record<string, unknown> } | undefined;
  // where devConfigJobs found the jobs: the default export, named exports, or CommonJS's default
  const source: Record<string, unknown> =
    exported?.jobs !== undefined
      ? (exported as Record<string, unknown>)
      : module.jobs !== undefined
        ? module
        : (exported?.default ?? module);
  const access: DevAccess = {};
  if (source.grants !== undefined) {
    access.grants = readGrantsDocument(source.grants, (what) => {
      throw new DevConfigError(`${name}: grants is not a grants document: ${what}`, file);
    });
  }
  if (source.callers !== undefined) access.callers = devCallers(source.callers, name, file);
  return access;
}

function devCallers(callers: unknown, name: string, file: string): DevCaller[] {
  if (!Array.isArray(callers)) {
    throw new DevConfigError(
      `${name}: callers must be an array of { accessKeyId, secretAccessKey, arn }, not ${describe(callers)}`,
      file,
    );
  }
  const keys = new Set<string>();
  return callers.map((caller: unknown, index) => {
    const at = `${name}: callers[${index}]`;
    if (typeof caller !== 'object' || caller === null || Array.isArray(caller)) {
      throw new DevConfigError(`${at} is not an object: it is ${describe(caller)}`, file);
    }
    const fields = caller as Record<string, unknown>;
    const text = (field: 'accessKeyId' | 'secretAccessKey' | 'arn'): string => {
      const value = fields[field];
      if (typeof value !== 'string' || value === '') {
        throw new DevConfigError(`${at}.${field} must be a non-empty string`, file);
      }
      return value;
    };
    const entry: DevCaller = {
      accessKeyId: text('accessKeyId'),
      secretAccessKey: text('secretAccessKey'),
      arn: text('arn'),
    };
    if (principalId(entry.arn) === undefined) {
      throw new DevConfigError(
        `${at}.arn ${JSON.stringify(entry.arn)} is no IAM role, user or assumed role ARN ` +
          '(e.g. arn:aws:sts::000000000000:assumed-role/billing/local)',
        file,
      );
    }
    if (keys.has(entry.accessKeyId)) {
      throw new DevConfigError(`${at}.accessKeyId ${JSON.stringify(entry.accessKeyId)} is listed twice`, file);
    }
    keys.add(entry.accessKeyId);
    return entry;
  });
}

/**
 * Imports a config module; each call must load the app's modules afresh (for reloads), and report
 * each file it loads through `onFile` (what `orrery dev` watches).
 */
export type ConfigImporter = (file: string, onFile: (path: string) => void) => Promise<Record<string, unknown>>;

type TsImport = (
  specifier: string,
  options: { parentURL: string; onImport?: (url: string) => void },
) => Promise<Record<string, unknown>>;

/** tsx's `tsImport`, from the app's own node_modules first, then from beside this CLI; undefined if neither has it. */
async function findTsImport(appDir: string): Promise<TsImport | undefined> {
  try {
    const resolved = createRequire(join(appDir, 'package.json')).resolve('tsx/esm/api');
    return ((await import(pathToFileURL(resolved).href)) as { tsImport: TsImport }).tsImport;
  } catch {
    try {
      return ((await import('tsx/esm/api')) as { tsImport: TsImport }).tsImport;
    } catch {
      return undefined;
    }
  }
}

/** The local path of an imported module's URL, or undefined for `node:` and package-internal ones. */
function sourcePath(url: string): string | undefined {
  if (!url.startsWith('file:')) return undefined;
  const path = fileURLToPath(url.replace(/\?.*$/, ''));
  return path.includes(`${sep}node_modules${sep}`) ? undefined : path;
}

let generation = 0;

/**
 * The default importer. With tsx installed (in the app, or beside the CLI) every load goes
 * through `tsImport`, which gives each call a module graph of its own: a reload sees every
 * changed file the config imports. Without tsx, Node's own `import()` with a cache-busting query:
 * `.js`/`.mjs` configs load, `.ts` ones only where Node strips types (22.18 and later by default,
 * 22.6 and later with `--experimental-strip-types`), and a reload refreshes only the config file
 * itself, not the modules it imports.
 */
export const defaultImporter: ConfigImporter = async (file, onFile) => {
  const url = `${pathToFileURL(file).href}?orrery-dev=${++generation}`;
  const tsImport = await findTsImport(dirname(file));
  onFile(file);
  if (tsImport) {
    // The parent is the config itself, not this module: when the CLI runs from source it is
    // itself loaded through tsImport, and a parent in that namespace would pull the app's
    // modules into it (cached from the first load) instead of the new one.
    return tsImport(url, {
      parentURL: pathToFileURL(file).href,
      onImport(imported) {
        const path = sourcePath(imported);
        if (path) onFile(path);
      },
    });
  }
  const typescript = /\.m?ts$/.test(file);
  try {
    return (await import(url)) as Record<string, unknown>;
  } catch (error) {
    const hint = typescript
      ? ' A TypeScript config needs tsx in the app (npm install -D tsx), or a Node that strips types ' +
        '(22.18+; 22.6+ with NODE_OPTIONS=--experimental-strip-types), and then explicit .ts extensions in its imports.'
      : '';
    throw new DevConfigError(`cannot load ${basename(file)}: ${(error as Error).message}.${hint}`, file, {
      cause: error,
    });
  }
};

/** What {@link loadDevConfig} found: the job definitions and the app's files it loaded (to watch). */
export interface DevConfig extends DevAccess {
  file: string;
  jobs: DevJob[];
  files: string[];
}

/** Loads `file` and returns its job definitions and access, with {@link DevConfigError} on any failure. */
export async function loadDevConfig(file: string, importer: ConfigImporter = defaultImporter): Promise<DevConfig> {
  let module: Record<string, unknown>;
  const files = new Set<string>();
  try {
    module = await importer(file, (path) => files.add(path));
  } catch (error) {
    if (error instanceof DevConfigError) throw error;
    throw new DevConfigError(`cannot load ${basename(file)}: ${(error as Error).message}`, file, { cause: error });
  }
  return { file, jobs: devConfigJobs(module, file), ...devConfigAccess(module, file), files: [...files] };
}
