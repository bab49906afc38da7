import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * `npm test` runs its files at least two at a time (vitest's default, one less than the cores,
 * is a single worker on a 2-core machine), except those of `integration-alone`: they run after
 * every other file has ended, one at a time, as they did before. The worker chaos run sizes its
 * leases from the write latency it measures at its start, and loses them beside the system chaos
 * run (docs/testing.md); the concurrency test's 1,000 jobs load the machine enough to cost its
 * own 3 s leases and to push the throttle test's starts past their GCRA bound when the two ran
 * side by side; the delayed-scheduling tests give a supervisor pass a 1 s real-time budget,
 * which a loaded machine can spend before the pass reaches its sweep.
 */
const NPM_TEST_WORKERS = Math.max(2, availableParallelism() - 1);
const ALONE = [
  'test/integration/chaos-small.test.ts',
  'test/integration/flow-concurrency.test.ts',
  'test/integration/flow-throttle.test.ts',
  'test/integration/scheduling-delayed.test.ts',
];

/**
 * Files started first, ahead of vitest's usual order (project by project, longest or largest
 * first): the small system chaos run takes 5 to 7 minutes, much of it waiting on real time, so
 * the other files run beside it instead of after it.
 */
const FIRST = ['test/integration/system-chaos-small.test.ts'];

class RunFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const first = (spec: TestSpecification) => FIRST.some((path) => spec.moduleId.endsWith(path));
    return [...sorted.filter(first), ...sorted.filter((spec) => !first(spec))];
  }
}

/**
 * Test tiers, each its own project:
 * - unit: pure domain logic, no network;
 * - infra: CDK synth assertions and cdk-nag;
 * - integration: real AWS SDK against local AWS (DynamoDB Local, fauxqs, Scheduler stand-in);
 *   `integration-alone` is the part of it that runs by itself, after the rest (see ALONE);
 * - e2e: the HTTP API and workers end to end, against local AWS or a deployed stack;
 * - moto (`npm run test:moto`): the e2e suite and the supervisor-only scenarios (test/moto) on
 *   moto server, a second AWS implementation whose Scheduler never fires (each file starts its own);
 * - deployed (`npm run test:deployed`): the e2e suite against the app's `cdk.out` as deployed onto
 *   moto's CloudFormation, its bundles run as the functions (test/deployed/global-setup.ts);
 * - package (`npm run test:package`): the packed `orrery-jobs` tarball, installed into a clean consumer;
 * - ui (`npm run test:ui`): the dashboard in headless Chromium (Debian's `chromium`, driven by
 *   playwright-core) against the local platform, one file at a time (a browser each).
 */
export default defineConfig({
  test: {
    sequence: { sequencer: RunFirstSequencer },
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          environment: 'node',
          maxWorkers: NPM_TEST_WORKERS,
        },
      },
      {
        test: {
          name: 'infra',
          include: ['test/infra/**/*.test.ts'],
          maxWorkers: NPM_TEST_WORKERS,
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...ALONE],
          globalSetup: ['test/local-aws/global-setup.ts'],
          pool: 'forks',
          maxWorkers: NPM_TEST_WORKERS,
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'integration-alone',
          include: ALONE,
          globalSetup: ['test/local-aws/global-setup.ts'],
          pool: 'forks',
          // after the files of every other project of the run, one at a time
          sequence: { groupOrder: 1 },
          maxWorkers: 1,
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          globalSetup: ['test/local-aws/global-setup.ts'],
          pool: 'forks',
          maxWorkers: NPM_TEST_WORKERS,
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'package',
          include: ['test/package/**/*.test.ts'],
          testTimeout: 300_000,
          hookTimeout: 600_000,
        },
      },
      {
        test: {
          name: 'ui',
          include: ['test/ui/**/*.test.ts'],
          globalSetup: ['test/local-aws/global-setup.ts'],
          pool: 'forks',
          fileParallelism: false,
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'moto',
          include: ['test/e2e/**/*.test.ts', 'test/moto/**/*.test.ts'],
          globalSetup: ['test/local-aws/moto-global-setup.ts'],
          env: { ORRERY_AWS: 'moto' },
          pool: 'forks',
          testTimeout: 240_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'deployed',
          include: ['test/e2e/**/*.test.ts', 'test/deployed/**/*.test.ts'],
          globalSetup: ['test/deployed/global-setup.ts'],
          setupFiles: ['test/deployed/network-setup.mjs', 'test/deployed/skip-setup.ts'],
          pool: 'forks',
          // One stack for every file: tests that count what the platform wrote (footprint, queue
          // depth) must not see another file's jobs.
          fileParallelism: false,
          testTimeout: 240_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
