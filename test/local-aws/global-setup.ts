import type { TestProject } from 'vitest/node';
import { type DynamoDbLocal, startDynamoDbLocal } from './dynamodb-local';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Endpoint of the DynamoDB Local shared by every test file of the run. */
    dynamodbEndpoint: string;
    /** PID of its JVM (0 when an external endpoint was reused). */
    dynamodbPid: number;
  }
}

/** Set this to reuse a DynamoDB Local you run yourself instead of starting one per run. */
export const EXTERNAL_DYNAMODB_ENV = 'ORRERY_TEST_DYNAMODB_ENDPOINT';

interface Shared {
  dynamodb: Promise<DynamoDbLocal>;
  users: number;
}
const SHARED = Symbol.for('orrery.local-aws.dynamodb');
const registry = globalThis as typeof globalThis & { [SHARED]?: Shared };

/**
 * vitest `globalSetup`: starts ONE DynamoDB Local for the whole run (in the main vitest
 * process, before any worker) and hands its endpoint to test files through
 * `project.provide` → `inject('dynamodbEndpoint')`. Projects that list this file share the
 * same JVM (reference-counted; the last teardown stops it). Each test file then starts its own
 * in-process fauxqs + Scheduler stand-in with `startLocalAws({ dynamodbEndpoint })` and a
 * `uniquePrefix()`, so files run in parallel. Set `ORRERY_TEST_DYNAMODB_ENDPOINT` to use a
 * DynamoDB Local you run yourself.
 *
 * @example
 * // vitest.config.ts (project): globalSetup: ['test/local-aws/global-setup.ts'], pool: 'forks'
 * // a test file:
 * const aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const external = process.env[EXTERNAL_DYNAMODB_ENV];
  if (external) {
    project.provide('dynamodbEndpoint', external);
    project.provide('dynamodbPid', 0);
    return async () => {};
  }
  let shared = registry[SHARED];
  if (!shared) {
    shared = { dynamodb: startDynamoDbLocal(), users: 0 };
    registry[SHARED] = shared;
  }
  shared.users += 1;
  const dynamodb = await shared.dynamodb;
  if (process.env.ORRERY_HARNESS_VERBOSE) {
    console.log(`[local-aws] DynamoDB Local on ${dynamodb.endpoint} (pid ${dynamodb.pid}, ${dynamodb.startupMs} ms)`);
  }
  project.provide('dynamodbEndpoint', dynamodb.endpoint);
  project.provide('dynamodbPid', dynamodb.pid);
  const current = shared;
  return async () => {
    current.users -= 1;
    if (current.users > 0) return;
    if (registry[SHARED] === current) delete registry[SHARED];
    await dynamodb.stop();
  };
}
