/**
 * The SSM grants source against moto server's SSM (a real GetParameter over HTTP, no mock): a
 * parameter as JobPlatform writes it loads as the grants document; a missing parameter and a
 * malformed value fail with a ConfigError naming the parameter. The client is built as the API
 * builds it (`createSsmClient`), reaching moto through `AWS_ENDPOINT_URL_SSM` alone.
 */
import { DeleteParameterCommand, PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSsmClient, SsmGrantsSource } from '../../shared/aws/ssm-grants-source';
import type { GrantsDocument } from '../../shared/core/access';
import { ConfigError } from '../../shared/errors';
import { LOCAL_CREDENTIALS } from '../local-aws/clients';
import { type MotoServer, startMotoServer } from '../local-aws/moto';

const REGION = 'us-east-1';
/** Variables the client reads from the default chain, set for this file and restored after. */
const ENVIRONMENT = [
  'AWS_ENDPOINT_URL_SSM',
  'AWS_ENDPOINT_URL',
  'AWS_REGION',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
];

const DOCUMENT: GrantsDocument = {
  v: 1,
  principals: {
    'arn:aws:iam::123456789012:role/billing': [{ action: 'enqueue', types: ['send-invoice'] }],
    'arn:aws:iam::123456789012:role/support': [
      { action: 'control', types: ['send-invoice'], actions: ['retry', 'cancel'] },
      { action: 'read' },
    ],
    'arn:aws:iam::123456789012:root': [{ action: 'admin' }],
  },
};

let moto: MotoServer;
let admin: SSMClient;
const saved = new Map<string, string | undefined>();

beforeAll(async () => {
  moto = await startMotoServer();
  for (const name of ENVIRONMENT) saved.set(name, process.env[name]);
  delete process.env.AWS_ENDPOINT_URL;
  Object.assign(process.env, {
    AWS_ENDPOINT_URL_SSM: moto.endpoint,
    AWS_REGION: REGION,
    AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
  });
  admin = new SSMClient({ endpoint: moto.endpoint, region: REGION, credentials: LOCAL_CREDENTIALS });
});

afterAll(async () => {
  admin?.destroy();
  for (const [name, value] of saved) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  await moto?.stop();
});

async function put(name: string, value: string): Promise<void> {
  await admin.send(new PutParameterCommand({ Name: name, Value: value, Type: 'String', Overwrite: true }));
}

describe('SsmGrantsSource on moto', () => {
  it('loads the document JobPlatform wrote, through AWS_ENDPOINT_URL_SSM, and reports the cold-start read', async () => {
    await put('CFN-GrantsParameter-loaded', JSON.stringify(DOCUMENT));
    // a fresh client, as at a cold start: credentials, endpoint and connection set up by the first call
    const client = createSsmClient();
    try {
      const source = new SsmGrantsSource(client, 'CFN-GrantsParameter-loaded');
      const started = performance.now();
      const first = await source.load();
      const coldMs = performance.now() - started;
      const again = performance.now();
      await source.load();
      const warmMs = performance.now() - again;
      console.log(
        `[grants] GetParameter on moto: first call (cold client) ${coldMs.toFixed(1)} ms, next ${warmMs.toFixed(1)} ms`,
      );
      expect(first).toEqual(DOCUMENT);
      expect(coldMs).toBeLessThan(5_000);
    } finally {
      client.destroy();
    }
  });

  it('a missing parameter is a ConfigError naming it', async () => {
    await put('CFN-GrantsParameter-gone', JSON.stringify(DOCUMENT));
    await admin.send(new DeleteParameterCommand({ Name: 'CFN-GrantsParameter-gone' }));
    const client = createSsmClient();
    try {
      const error = await new SsmGrantsSource(client, 'CFN-GrantsParameter-gone').load().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).message).toMatch(
        /^the grants parameter CFN-GrantsParameter-gone does not exist: JobPlatform writes it at deploy time/,
      );
    } finally {
      client.destroy();
    }
  });

  it.each([
    ['not JSON', '{"v":1,', /is not JSON/],
    ['another version', '{"v":2,"principals":{}}', /is not a grants document: version 2/],
    ['principals not an object', '{"v":1,"principals":[]}', /principals is not an object/],
    [
      'an unknown action',
      '{"v":1,"principals":{"arn:aws:iam::1:role/a":[{"action":"delete"}]}}',
      /principals\["arn:aws:iam::1:role\/a"\]\[0\] has no known action/,
    ],
    [
      'types that are not a list',
      '{"v":1,"principals":{"r":[{"action":"read","types":"echo"}]}}',
      /principals\["r"\]\[0\]\.types is not a list of job types/,
    ],
    [
      'an unknown control action',
      '{"v":1,"principals":{"r":[{"action":"control","actions":["purge"]}]}}',
      /\.actions is not a list of control actions/,
    ],
    ['unlisted not a list', '{"v":1,"principals":{},"unlisted":{}}', /unlisted is not a list/],
  ])('a malformed value (%s) is a ConfigError naming the parameter', async (_case, value, reason) => {
    const name = `CFN-GrantsParameter-bad-${_case.replace(/\W+/g, '-')}`;
    await put(name, value);
    const client = createSsmClient();
    try {
      const error = await new SsmGrantsSource(client, name).load().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).message).toContain(`the grants parameter ${name} `);
      expect((error as ConfigError).message).toMatch(reason);
    } finally {
      client.destroy();
    }
  });

  it('keeps the unlisted grants of a document that has them', async () => {
    const document: GrantsDocument = { v: 1, principals: {}, unlisted: [{ action: 'read', types: ['echo'] }] };
    await put('CFN-GrantsParameter-unlisted', JSON.stringify(document));
    const client = createSsmClient();
    try {
      expect(await new SsmGrantsSource(client, 'CFN-GrantsParameter-unlisted').load()).toEqual(document);
    } finally {
      client.destroy();
    }
  });
});
