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
 */
import { existsSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { JobDefinition } from '../runtime/job-definition';
import { CliConfigError } from './config';

/** The names `orrery dev` looks for in the app's directory, in this order. */
export const DEV_CONFIG_NAMES = ['orrery.config.ts', 'orrery.config.mts', 'orrery.config.mjs', 'orrery.config.js'];

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

function isDefinition(value: unknown): value is JobDefinition {
  if (typeof value !== 'object' || value === null) return false;
  const { spec, run } = value as { spec?: { type?: unknown }; run?: unknown };
  return typeof spec === 'object' && spec !== null && typeof spec.type === 'string' && typeof run === 'function';
}

/**
 * The job definitions a loaded config module exports (`default.jobs`, or a named `jobs`).
 * Throws {@link DevConfigError} naming the file and what was wrong: no `jobs`, an empty list, an
 * entry that is not a job definition, or two definitions of one type.
 */
export function devConfigJobs(module: Record<string, unknown>, file: string): JobDefinition[] {
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
        `${name}: jobs[${index}] is not a job definition (what defineJob returns, with spec.type and run): it is ${describe(job)}`,
        file,
      );
    }
    if (seen.has(job.spec.type))
      throw new DevConfigError(`${name}: job type ${JSON.stringify(job.spec.type)} is listed twice`, file);
    seen.add(job.spec.type);
  });
  return jobs as JobDefinition[];
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
export interface DevConfig {
  file: string;
  jobs: JobDefinition[];
  files: string[];
}

/** Loads `file` and returns its job definitions, with {@link DevConfigError} on any failure. */
export async function loadDevConfig(file: string, importer: ConfigImporter = defaultImporter): Promise<DevConfig> {
  let module: Record<string, unknown>;
  const files = new Set<string>();
  try {
    module = await importer(file, (path) => files.add(path));
  } catch (error) {
    if (error instanceof DevConfigError) throw error;
    throw new DevConfigError(`cannot load ${basename(file)}: ${(error as Error).message}`, file, { cause: error });
  }
  return { file, jobs: devConfigJobs(module, file), files: [...files] };
}
