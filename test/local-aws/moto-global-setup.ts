import type { TestProject } from 'vitest/node';
import { findMotoServer, MOTO_INSTALL_HINT } from './moto';

/**
 * vitest `globalSetup` of the `moto` project (`npm run test:moto`): fails the run at once, with
 * install instructions, when `moto_server` is missing (never a silent skip). Each test file then
 * starts its own moto server through `startLocalAws()` (the project sets `ORRERY_AWS=moto`), so
 * no DynamoDB Local is started: `inject('dynamodbEndpoint')` is empty and unused on this target.
 */
export default function setup(project: TestProject): void {
  const server = findMotoServer();
  if (!server) throw new Error(MOTO_INSTALL_HINT);
  if (process.env.ORRERY_HARNESS_VERBOSE) console.log(`[local-aws] moto target: ${server}`);
  project.provide('dynamodbEndpoint', '');
  project.provide('dynamodbPid', 0);
}
