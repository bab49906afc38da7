import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // DynamoDB Local (a JVM) starts in a few seconds; jobs run in real time.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
