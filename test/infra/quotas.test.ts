import { App } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { OrreryStack } from '../../infra/stack';
import { appWithTypes, type Figure, largest, measure, overQuota, readAssembly } from './quotas';
import { ASSET_METADATA, SKIP_BUNDLING, tempOutdir } from './support';

function describeOver(figures: Figure[]): string[] {
  return overQuota(figures).map((f) => `${f.stack}: ${f.what} is ${f.value} (limit ${f.limit})`);
}

describe("AWS's deploy-time quotas, on the template with every value resolved as AWS resolves it", () => {
  it("the repository's app: every function's environment ≤ 4 KB, every stack within its limits", () => {
    const app = new App({ outdir: tempOutdir('quotas-repo'), context: { ...SKIP_BUNDLING, ...ASSET_METADATA } });
    new OrreryStack(app, 'Orrery');
    const figures = measure(readAssembly(app));
    expect(figures.filter((f) => f.what.startsWith('environment of')).length).toBeGreaterThanOrEqual(13);
    expect(describeOver(figures)).toEqual([]);
  });

  it('an app with 200 job types of 40-character names synthesizes offline within every quota', () => {
    const stacks = readAssembly(appWithTypes(200, tempOutdir('quotas-200')));
    const figures = measure(stacks);
    // all 200 workers, the API and the supervisor were measured, in the parent and 200 nested stacks
    expect(figures.filter((f) => f.what.startsWith('environment of')).length).toBe(202);
    expect(stacks).toHaveLength(201);
    expect(describeOver(figures)).toEqual([]);
    expect(largest(figures, 'environment of')?.value).toBeLessThan(2048);
    expect(largest(figures, 'inline policies of role')?.value).toBeLessThan(5120);
  });

  it('no function environment grows with the number of job types', () => {
    const at = (count: number) => {
      const figures = measure(readAssembly(appWithTypes(count, tempOutdir(`quotas-${count}`))));
      return largest(figures, 'environment of')?.value ?? 0;
    };
    expect(at(12)).toBe(at(2));
  });
});
