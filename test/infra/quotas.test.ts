import { App, Stack } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { JobPlatform } from '../../infra/constructs/job-platform';
import { OrreryStack } from '../../infra/stack';
import { defineJobType } from '../../shared/core/job-type';
import { z } from '../../shared/core/zod-mini';
import { type Figure, largest, measure, overQuota, readAssembly } from './quotas';
import { SKIP_BUNDLING, tempOutdir } from './support';

/** A job type name of the longest length allowed (40), so names, ARNs and URLs are as long as they get. */
export function longTypeName(i: number): string {
  const head = `type-${String(i).padStart(3, '0')}-`;
  return `${head}${'x'.repeat(40 - head.length)}`;
}

/** An app with `count` job types of 40-character names in one JobPlatform, synthesized without bundling. */
export function appWithTypes(count: number, outdir: string): App {
  const app = new App({ outdir, context: SKIP_BUNDLING });
  const stack = new Stack(app, 'OrreryGenerated');
  const platform = new JobPlatform(stack, 'Platform');
  for (let i = 0; i < count; i++) {
    const spec = defineJobType({ type: longTypeName(i), payload: z.object({ n: z.number() }) });
    platform.addJobType({ spec, entry: 'functions/jobs/echo.ts' });
  }
  return app;
}

function describeOver(figures: Figure[]): string[] {
  return overQuota(figures).map((f) => `${f.stack}: ${f.what} is ${f.value} (limit ${f.limit})`);
}

describe("AWS's deploy-time quotas, on the template with every value resolved as AWS resolves it", () => {
  it("the repository's app: every function's environment ≤ 4 KB, every stack within its limits", () => {
    const app = new App({ outdir: tempOutdir('quotas-repo'), context: SKIP_BUNDLING });
    new OrreryStack(app, 'Orrery');
    const figures = measure(readAssembly(app));
    expect(figures.filter((f) => f.what.startsWith('environment of')).length).toBeGreaterThanOrEqual(13);
    expect(describeOver(figures)).toEqual([]);
  });

  it('an app with 200 job types of 40-character names synthesizes within every quota', () => {
    const figures = measure(readAssembly(appWithTypes(200, tempOutdir('quotas-200'))));
    // all 200 workers, the API and the supervisor were measured
    expect(figures.filter((f) => f.what.startsWith('environment of')).length).toBeGreaterThanOrEqual(202);
    expect(describeOver(figures)).toEqual([]);
    const env = largest(figures, 'environment of');
    expect(env?.value).toBeLessThan(2048); // far under 4 KB, and not growing with the types (next test)
  });

  it('no function environment grows with the number of job types', () => {
    const at = (count: number) => {
      const figures = measure(readAssembly(appWithTypes(count, tempOutdir(`quotas-${count}`))));
      return largest(figures, 'environment of')?.value ?? 0;
    };
    expect(at(12)).toBe(at(2));
  });
});
