import { defineConfig } from 'vitest/config';

/**
 * Test tiers, each its own project:
 * - unit: pure domain logic, no network;
 * - infra: CDK synth assertions and cdk-nag;
 * - integration: real AWS SDK against local AWS (DynamoDB Local, fauxqs, Scheduler stand-in);
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
    projects: [
      { test: { name: 'unit', include: ['test/unit/**/*.test.ts'], environment: 'node' } },
      {
        test: {
          name: 'infra',
          include: ['test/infra/**/*.test.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/local-aws/global-setup.ts'],
          pool: 'forks',
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
