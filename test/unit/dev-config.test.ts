/**
 * `orrery dev`'s config: where it is found, what it must export, and that loading it again sees
 * the app's edited files (what a reload relies on).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { echo } from '../../functions/jobs/echo';
import { flaky } from '../../functions/jobs/flaky';
import { DevConfigError, devConfigJobs, findDevConfig, loadDevConfig } from '../../shared/cli/dev-config';

function appDir(files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'orrery-dev-config-'));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

describe('findDevConfig', () => {
  it('names the files it looked for when there is none', () => {
    const dir = appDir();
    expect(() => findDevConfig(dir)).toThrow(DevConfigError);
    expect(() => findDevConfig(dir)).toThrow(
      /no orrery\.config\.ts, \.mts, \.mjs or \.js in .*export default \{ jobs/s,
    );
  });

  it('prefers orrery.config.ts, and takes an explicit file relative to the directory', () => {
    const dir = appDir({ 'orrery.config.ts': '', 'orrery.config.mjs': '', 'dev/other.mjs': '' });
    expect(findDevConfig(dir)).toBe(join(dir, 'orrery.config.ts'));
    expect(findDevConfig(dir, 'dev/other.mjs')).toBe(join(dir, 'dev', 'other.mjs'));
    expect(() => findDevConfig(dir, 'missing.ts')).toThrow(`no config file at ${join(dir, 'missing.ts')}`);
  });
});

describe('devConfigJobs', () => {
  const file = '/app/orrery.config.ts';

  it('takes the default export’s jobs, or a named jobs export', () => {
    expect(devConfigJobs({ default: { jobs: [echo, flaky] } }, file)).toEqual([echo, flaky]);
    expect(devConfigJobs({ jobs: [echo] }, file)).toEqual([echo]);
  });

  it('rejects a config without jobs, naming what it found', () => {
    expect(() => devConfigJobs({ default: { handlers: [] } }, file)).toThrow(
      'orrery.config.ts exports no jobs: export default { jobs: [...] } or export const jobs = [...] (found an object with keys ["handlers"])',
    );
    expect(() => devConfigJobs({ default: { jobs: echo } }, file)).toThrow(/jobs must be an array/);
    expect(() => devConfigJobs({ jobs: [] }, file)).toThrow(/jobs is empty/);
  });

  it('rejects an entry that is not a job definition, by index', () => {
    expect(() => devConfigJobs({ jobs: [echo, echo.spec] }, file)).toThrow(
      /jobs\[1\] is not a job definition \(what defineJob returns, with spec.type and run\): it is an object with keys/,
    );
    expect(() => devConfigJobs({ jobs: ['echo'] }, file)).toThrow(/jobs\[0\] is not a job definition.*it is string/);
  });

  it('rejects a type listed twice', () => {
    expect(() => devConfigJobs({ jobs: [echo, flaky, echo] }, file)).toThrow('job type "echo" is listed twice');
  });
});

describe('loadDevConfig', () => {
  it('wraps an importer failure in a DevConfigError naming the file', async () => {
    const failing = async () => {
      throw new SyntaxError('Unexpected token');
    };
    const error = await loadDevConfig('/app/orrery.config.ts', failing).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(DevConfigError);
    expect(error).toMatchObject({
      message: 'cannot load orrery.config.ts: Unexpected token',
      file: '/app/orrery.config.ts',
      cause: expect.any(SyntaxError),
    });
  });

  // The CLI run from source is itself loaded through tsx's tsImport: the loader must not pull the
  // app's modules into that namespace, where they would be cached from the first load.
  const loaders = {
    direct: async () => loadDevConfig,
    'through tsImport': async () => {
      const { tsImport } = await import('tsx/esm/api');
      const module = (await tsImport('../../shared/cli/dev-config.ts', import.meta.url)) as {
        loadDevConfig: typeof loadDevConfig;
      };
      return module.loadDevConfig;
    },
  };
  it.each(Object.keys(loaders))(
    'loads a TypeScript config and the files it imports, afresh on every load (%s)',
    async (how) => {
      const load = await loaders[how as keyof typeof loaders]();
      const job = (result: string) =>
        `export const hello = { spec: { type: 'hello' }, async run() { return '${result}'; } };\n`;
      const dir = appDir({
        'package.json': '{ "type": "module" }',
        'orrery.config.ts': "import { hello } from './jobs/hello';\nexport default { jobs: [hello] };\n",
        'jobs/hello.ts': job('v1'),
      });
      const first = await load(join(dir, 'orrery.config.ts'));
      expect(first.jobs.map((definition) => definition.spec.type)).toEqual(['hello']);
      expect(first.files).toEqual(
        expect.arrayContaining([join(dir, 'orrery.config.ts'), join(dir, 'jobs', 'hello.ts')]),
      );
      // biome-ignore lint/suspicious/noExplicitAny: a hand-written definition with no payload schema
      expect(await first.jobs[0]?.run(undefined as any, undefined as any)).toBe('v1');

      writeFileSync(join(dir, 'jobs', 'hello.ts'), job('v2'));
      const second = await load(join(dir, 'orrery.config.ts'));
      // biome-ignore lint/suspicious/noExplicitAny: as above
      expect(await second.jobs[0]?.run(undefined as any, undefined as any)).toBe('v2');
    },
  );

  it('loads a config the app compiles as CommonJS (no "type": "module")', async () => {
    const dir = appDir({
      'orrery.config.ts': "export default { jobs: [{ spec: { type: 'cjs' }, async run() { return 'ok'; } }] };\n",
    });
    const loaded = await loadDevConfig(join(dir, 'orrery.config.ts'));
    expect(loaded.jobs.map((definition) => definition.spec.type)).toEqual(['cjs']);
  });
});
