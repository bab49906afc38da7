import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const root = fileURLToPath(new URL('../..', import.meta.url));
const standIn = fileURLToPath(new URL('./scheduler-standin.ts', import.meta.url));
const stub = fileURLToPath(new URL('./_scratch/scheduler-standin-stub.ts', import.meta.url));

/**
 * Runs the local-AWS harness's own tests:
 * `npx vitest run --config test/local-aws/vitest.harness.config.ts`.
 * Same settings the integration project needs: one global DynamoDB Local, forks pool.
 */
export default defineConfig({
  root,
  resolve: existsSync(standIn) ? {} : { alias: [{ find: /^\.\/scheduler-standin$/, replacement: stub }] },
  test: {
    include: ['test/integration/local-aws.test.ts'],
    globalSetup: ['test/local-aws/global-setup.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
