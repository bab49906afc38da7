/**
 * `orrery dev`'s config: where it is found, what it must export, and that loading it again sees
 * the app's edited files (what a reload relies on).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { echo } from '../../functions/jobs/echo';
import { flaky } from '../../functions/jobs/flaky';
import { accessLine } from '../../shared/cli/commands/dev';
import {
  DevConfigError,
  devConfigAccess,
  devConfigJobs,
  findDevConfig,
  loadDevConfig,
} from '../../shared/cli/dev-config';
import { defineJobType } from '../../shared/core/job-type';
import { defineBatchJob } from '../../shared/runtime/define-batch-job';
import type { JobDefinition } from '../../shared/runtime/job-definition';

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
      /jobs\[1\] is not a job definition \(what defineJob or defineBatchJob returns, with spec.type and run or runBatch\): it is an object with keys/,
    );
    expect(() => devConfigJobs({ jobs: ['echo'] }, file)).toThrow(/jobs\[0\] is not a job definition.*it is string/);
  });

  it('takes a batch job definition (defineBatchJob: runBatch, no run)', () => {
    const receiptJob = defineJobType({
      type: 'receipt',
      payload: z.object({ to: z.string() }),
      batch: { maxSize: 10, maxWaitSeconds: 1 },
    });
    const receipts = defineBatchJob(receiptJob, async (items) =>
      items.map(() => ({ ok: true as const, result: null })),
    );
    expect(devConfigJobs({ jobs: [echo, receipts] }, file)).toEqual([echo, receipts]);
  });

  it('rejects a type listed twice', () => {
    expect(() => devConfigJobs({ jobs: [echo, flaky, echo] }, file)).toThrow('job type "echo" is listed twice');
  });
});

describe('devConfigAccess', () => {
  const file = '/app/orrery.config.ts';
  const billing = {
    accessKeyId: 'billing-key',
    secretAccessKey: 'billing-secret',
    arn: 'arn:aws:sts::000000000000:assumed-role/billing/local',
  };
  const grants = {
    v: 1,
    principals: { 'arn:aws:iam::000000000000:role/billing': [{ action: 'enqueue', types: ['echo'] }] },
  };

  it('is empty without grants or callers (every caller stays admin)', () => {
    expect(devConfigAccess({ default: { jobs: [echo] } }, file)).toEqual({});
  });

  it('takes grants and callers beside the jobs, in the default export or as named exports', () => {
    const expected = { grants, callers: [billing] };
    expect(devConfigAccess({ default: { jobs: [echo], grants, callers: [billing] } }, file)).toEqual(expected);
    expect(devConfigAccess({ jobs: [echo], grants, callers: [billing] }, file)).toEqual(expected);
    // CommonJS: { default: module.exports }
    expect(devConfigAccess({ default: { default: { jobs: [echo], grants, callers: [billing] } } }, file)).toEqual(
      expected,
    );
  });

  it('rejects a grants document of the wrong shape, naming the file and the fault', () => {
    const bad = (value: unknown) => () => devConfigAccess({ default: { jobs: [echo], grants: value } }, file);
    expect(bad({ v: 2, principals: {} })).toThrow(DevConfigError);
    expect(bad({ v: 2, principals: {} })).toThrow(
      'orrery.config.ts: grants is not a grants document: version 2 (this API reads version 1)',
    );
    expect(bad([])).toThrow('grants is not a grants document: not an object');
    expect(bad({ v: 1, principals: { r: [{ action: 'delete' }] } })).toThrow(
      'principals["r"][0] has no known action (enqueue, signal, control, operate, read, admin)',
    );
    expect(bad({ v: 1, principals: { r: [{ action: 'read', types: 'echo' }] } })).toThrow(
      'principals["r"][0].types is not a list of job types',
    );
    expect(bad({ v: 1, principals: { r: [{ action: 'control', actions: ['delete'] }] } })).toThrow(
      /principals\["r"\]\[0\]\.actions is not a list of control actions/,
    );
  });

  it('rejects callers that are not a list of credentials with an IAM identity', () => {
    const bad = (value: unknown) => () => devConfigAccess({ default: { jobs: [echo], callers: value } }, file);
    expect(bad(billing)).toThrow(
      /^orrery\.config\.ts: callers must be an array of \{ accessKeyId, secretAccessKey, arn \}, not an object/,
    );
    expect(bad(['billing'])).toThrow('orrery.config.ts: callers[0] is not an object: it is string');
    expect(bad([{ ...billing, secretAccessKey: '' }])).toThrow('callers[0].secretAccessKey must be a non-empty string');
    expect(bad([{ accessKeyId: 'k', secretAccessKey: 's' }])).toThrow('callers[0].arn must be a non-empty string');
    expect(bad([{ ...billing, arn: 'role/billing' }])).toThrow(
      'callers[0].arn "role/billing" is no IAM role, user or assumed role ARN',
    );
    expect(bad([billing, { ...billing, arn: 'arn:aws:iam::000000000000:user/ops' }])).toThrow(
      'callers[1].accessKeyId "billing-key" is listed twice',
    );
  });

  it('is read by loadDevConfig, and described on start', async () => {
    const config = await loadDevConfig(file, async () => ({ default: { jobs: [echo], grants, callers: [billing] } }));
    expect(config).toMatchObject({ jobs: [echo], grants, callers: [billing] });
    await expect(
      loadDevConfig(file, async () => ({ default: { jobs: [echo], callers: [{ ...billing, arn: 'x' }] } })),
    ).rejects.toThrow(DevConfigError);
    expect(accessLine(config)).toBe(
      'grants for 1 principal(s); callers arn:aws:sts::000000000000:assumed-role/billing/local; ' +
        'the default local credentials stay admin; unsigned requests answer 403',
    );
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
      expect(await (first.jobs[0] as JobDefinition | undefined)?.run(undefined as any, undefined as any)).toBe('v1');

      writeFileSync(join(dir, 'jobs', 'hello.ts'), job('v2'));
      const second = await load(join(dir, 'orrery.config.ts'));
      // biome-ignore lint/suspicious/noExplicitAny: as above
      expect(await (second.jobs[0] as JobDefinition | undefined)?.run(undefined as any, undefined as any)).toBe('v2');
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
