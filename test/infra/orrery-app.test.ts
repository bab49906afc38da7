import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Stack } from 'aws-cdk-lib';
import { LogLevel } from 'aws-cdk-lib/aws-lambda-nodejs';
import { describe, expect, it, onTestFinished } from 'vitest';
import { OrreryFunction } from '../../infra/constructs/orrery-function';
import { orreryApp } from '../../infra/orrery-app';
import { REPO_ROOT } from '../../infra/paths';
import { tempOutdir } from './support';

/** A handler file that does not compile, under the repository (NodejsFunction's project root), in a git-ignored folder. */
function brokenEntry(): string {
  const parent = join(REPO_ROOT, '.orrery');
  mkdirSync(parent, { recursive: true });
  const dir = mkdtempSync(join(parent, 'broken-entry-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const entry = join(dir, 'broken.ts');
  writeFileSync(entry, 'export const handler = (;\n');
  return entry;
}

/**
 * An app with one Orrery function whose entry does not compile: bundling it fails the synth, so
 * a synth that succeeds proves no bundling ran.
 */
function synthBroken(context: Record<string, unknown>): string[] {
  const outdir = tempOutdir('orrery-app');
  const entry = brokenEntry();
  const app = orreryApp({ outdir, context });
  // esbuild kept quiet: the failure it would print is the expected one
  new OrreryFunction(new Stack(app, 'Tiny'), 'Fn', { entry, bundling: { logLevel: LogLevel.SILENT } });
  app.synth();
  return readdirSync(outdir);
}

describe('orreryApp', () => {
  it('skips bundling when orrery:bundling is false (as `-c` gives it, a string)', () => {
    const files = synthBroken({ 'orrery:bundling': 'false' });
    expect(files).toContain('Tiny.template.json');
    expect(files.filter((f) => f.startsWith('asset.'))).toEqual([]); // no bundle staged
  });

  it('skips bundling when orrery:bundling is the boolean false (cdk.json, props)', () => {
    expect(synthBroken({ 'orrery:bundling': false })).toContain('Tiny.template.json');
  });

  it.each([{}, { 'orrery:bundling': 'true' }])('bundles every function otherwise (context %j)', (context) => {
    expect(() => synthBroken(context)).toThrow(/esbuild|Failed to bundle/i);
  });

  it('refuses any other value, naming the key', () => {
    expect(() => orreryApp({ context: { 'orrery:bundling': 'off' } })).toThrow(
      'context orrery:bundling must be true or false (got "off")',
    );
  });
});
