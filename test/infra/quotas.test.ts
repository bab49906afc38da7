import { App } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { JobPlatform } from '../../infra/constructs/job-platform';
import { OrreryStack } from '../../infra/stack';
import { defineJobType } from '../../shared/core/job-type';
import { z } from '../../shared/core/zod-mini';
import { appWithTypes, type Figure, largest, measure, overQuota, readAssembly } from './quotas';
import { SKIP_BUNDLING, tempOutdir } from './support';

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
