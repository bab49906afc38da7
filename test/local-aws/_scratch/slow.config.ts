import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
export default defineConfig({ root: fileURLToPath(new URL('../../..', import.meta.url)), test: { include: ['test/local-aws/_scratch/slow.test.ts'], globalSetup: ['test/local-aws/global-setup.ts'], pool: 'forks' } });
