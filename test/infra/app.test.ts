import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { catalog } from '../../functions/jobs/catalog';
import { REPO_ROOT } from '../../infra/paths';
import { tempOutdir } from './support';

/** Node binaries to try: the one running the tests (Node 24 under npm scripts) and the system one. */
function nodeBinaries(): { path: string; version: string }[] {
  const found = new Map<string, string>();
  for (const path of [process.execPath, '/usr/bin/node', '/usr/local/bin/node']) {
    if (!existsSync(path)) continue;
    const version = execFileSync(path, ['--version'], { encoding: 'utf8' }).trim();
    if (![...found.values()].includes(version)) found.set(path, version);
  }
  return [...found].map(([path, version]) => ({ path, version }));
}

/**
 * `cdk synth` runs `npx tsx infra/app.ts` (cdk.json). This runs the same command line the CLI
 * would, with bundling off, on each installed Node, and checks the cloud assembly it writes.
 */
describe('infra/app.ts', () => {
  it.each(nodeBinaries())('synthesizes through tsx on Node $version with cdk-nag passing', ({ path }) => {
    const outdir = tempOutdir('app');
    const result = spawnSync(path, [join(REPO_ROOT, 'node_modules/tsx/dist/cli.mjs'), 'infra/app.ts'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      env: { ...process.env, CDK_OUTDIR: outdir, CDK_CONTEXT_JSON: JSON.stringify({ 'orrery:bundling': 'false' }) },
    });
    expect(result.stderr).not.toMatch(/AwsSolutions-|Serverless-|Error/);
    expect(result.status).toBe(0);
    // The stack, and a nested stack per job type (`*.nested.template.json` beside it).
    const files = readdirSync(outdir).filter(
      (f) => f === 'Orrery.template.json' || f.endsWith('.nested.template.json'),
    );
    expect(files).toHaveLength(1 + catalog.length);
    const types = files.flatMap((file) => {
      const template = JSON.parse(readFileSync(join(outdir, file), 'utf8')) as {
        Resources: Record<string, { Type: string }>;
      };
      return Object.values(template.Resources).map((r) => r.Type);
    });
    // The API, the supervisor and one worker for each example type.
    expect(types.filter((t) => t === 'AWS::Lambda::Function')).toHaveLength(2 + catalog.length);
    const report = JSON.parse(readFileSync(join(outdir, 'validation-report.json'), 'utf8')) as {
      pluginReports: unknown[];
    };
    expect(report.pluginReports).toEqual([]);
  });
});
