import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * Runs the local-AWS harness's own tests:
 * `npx vitest run --config test/local-aws/vitest.harness.config.ts`.
 * These are the settings the integration and e2e projects need too: the global setup that
 * starts one DynamoDB Local, the forks pool, and timeouts that cover the JVM start.
 */
export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: {
    include: ['test/integration/local-aws.test.ts'],
    globalSetup: ['test/local-aws/global-setup.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
