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

  it('an app with 200 job types of 40-character names: every function environment and role policy within its quota', () => {
    // CDK's own check would stop the synthesis at the stack's 500 resources: measured below
    const figures = measure(readAssembly(appWithTypes(200, tempOutdir('quotas-200'), { resourceLimit: false })));
    // all 200 workers, the API and the supervisor were measured
    expect(figures.filter((f) => f.what.startsWith('environment of')).length).toBe(202);
    const perFunction = figures.filter((f) => f.what.startsWith('environment of') || f.what.includes('polic'));
    expect(describeOver(perFunction)).toEqual([]);
    expect(largest(figures, 'environment of')?.value).toBeLessThan(2048);
    expect(largest(figures, 'inline policies of role')?.value).toBeLessThan(5120);
  });

  it('one stack holds at most 36 job types today (13 resources each, 20 fixed, 500 at most)', () => {
    const fits = measure(readAssembly(appWithTypes(36, tempOutdir('quotas-36'))));
    expect(describeOver(fits)).toEqual([]);
    expect(() => readAssembly(appWithTypes(37, tempOutdir('quotas-37')))).toThrow(
      /: 501 is greater than allowed maximum of 500/,
    );
  });

  it('no function environment grows with the number of job types', () => {
    const at = (count: number) => {
      const figures = measure(readAssembly(appWithTypes(count, tempOutdir(`quotas-${count}`))));
      return largest(figures, 'environment of')?.value ?? 0;
    };
    expect(at(12)).toBe(at(2));
  });
});
