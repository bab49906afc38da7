import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The in-memory mode takes milliseconds; on local AWS, DynamoDB Local (a JVM) starts in a few
    // seconds and jobs run in real time.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
