/**
 * How the API and the supervisor find the deployed job types without a list of them in their
 * environment (Lambda's 4 KB): the API's catalog checked against ORRERY_TYPES_DIGEST, the
 * supervisor's ListQueues by name prefix. Real SDK against local SQS (fauxqs).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { platformConfigFromEnv, typesDigest } from '../../shared/config';
import { deployedConfig } from '../../shared/lambda/runtime';
import { createLogger } from '../../shared/logger';
import { type LocalClients, localClients } from '../local-aws/clients';
import { deployLocal, destroyLocal, type LocalDeployment } from '../local-aws/deploy';
import { type LocalAws, startLocalAws } from '../local-aws/index';
import { uniquePrefix } from '../local-aws/namespace';

let aws: LocalAws;
let deployment: LocalDeployment;
let other: LocalDeployment;
let clients: LocalClients;

beforeAll(async () => {
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint'), autoFire: false });
  clients = localClients(aws);
  const prefix = uniquePrefix('types');
  deployment = await deployLocal(aws, {
    prefix,
    jobTypes: [
      { type: 'echo', timeoutMs: 5_000 },
      { type: 'send-email', timeoutMs: 5_000 },
    ],
  });
  // another platform whose prefix starts like this one's: its queues are not this platform's types
  other = await deployLocal(aws, { prefix: `${prefix}x`, jobTypes: [{ type: 'stranger', timeoutMs: 5_000 }] });
});

afterAll(async () => {
  await destroyLocal(aws, deployment);
  await destroyLocal(aws, other);
  clients.destroy();
  await aws.stop();
});

function runtime(types: readonly string[] = []) {
  const lines: { level: string; message: string; fields: unknown }[] = [];
  const base = createLogger({ level: 'silent' });
  const logger = {
    ...base,
    warn: (message: string, fields?: unknown) => lines.push({ level: 'warn', message, fields }),
    error: (message: string, fields?: unknown) => lines.push({ level: 'error', message, fields }),
  } as unknown as typeof base;
  const config = platformConfigFromEnv(deployment.env, types);
  return { runtime: { config, clients: { ...clients, dynamo: clients.dynamo }, logger }, lines };
}

describe('the deployed job types', () => {
  it('are written to the environment only as a digest', () => {
    expect(deployment.env.ORRERY_TYPES_DIGEST).toBe(typesDigest(['echo', 'send-email']));
    expect(Object.keys(deployment.env).some((name) => name.includes('ROUTES'))).toBe(false);
  });

  it("the API serves its catalog when the catalog's digest is the deployed one", async () => {
    const { runtime: rt, lines } = runtime();
    const { config, settled } = await deployedConfig(rt, ['send-email', 'echo']);
    expect(Object.keys(config.routes).sort()).toEqual(['echo', 'send-email']);
    expect(config.routes.echo?.queueUrl).toBe(deployment.queues.echo?.url);
    expect(config.routes['send-email']?.dlqArn).toBe(deployment.queues['send-email']?.dlqArn);
    expect(settled).toBe(true);
    expect(lines).toEqual([]);
  });

  it('a catalog that differs from the deployment serves only its deployed types, and says which differ', async () => {
    const { runtime: rt, lines } = runtime();
    const { config } = await deployedConfig(rt, ['echo', 'ghost']);
    expect(Object.keys(config.routes)).toEqual(['echo']);
    expect(lines).toEqual([
      {
        level: 'error',
        message: "the API's catalog is not the set of deployed job types: add each type with addJobType",
        fields: { notDeployed: ['ghost'], notInCatalog: ['send-email'] },
      },
    ]);
  });

  it("the supervisor lists exactly the platform's ready queues, not another platform's", async () => {
    const { runtime: rt, lines } = runtime();
    const { config, settled } = await deployedConfig(rt);
    expect(Object.keys(config.routes)).toEqual(['echo', 'send-email']);
    expect(config.routes.echo?.queueUrl).toBe(deployment.queues.echo?.url);
    expect(settled).toBe(true);
    expect(lines).toEqual([]);
  });

  it('a listing that is not the deployed set yet is served, reported and marked unsettled', async () => {
    const { runtime: rt, lines } = runtime();
    rt.config = { ...rt.config, typesDigest: typesDigest(['echo', 'send-email', 'not-yet-listed']) };
    const { config, settled } = await deployedConfig(rt);
    expect(Object.keys(config.routes)).toEqual(['echo', 'send-email']);
    expect(settled).toBe(false);
    expect(lines.map((line) => line.level)).toEqual(['warn']);
  });
});
