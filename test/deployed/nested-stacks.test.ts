/**
 * The harness's deploy step on an app with nested stacks (two levels, values passed both ways
 * through parameters and `Outputs.<name>`, a schedule group referenced across stacks), on a moto
 * server of its own: moto alone drops a parent's read of a nested output, the harness inlines the
 * nested templates (moto-patches.ts) and the outputs come out resolved.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetQueueUrlCommand } from '@aws-sdk/client-sqs';
import { App, CfnOutput, NestedStack, Stack } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalClients, localClients } from '../local-aws/clients';
import { type MotoServer, startMotoServer } from '../local-aws/moto';
import { readAssembly } from './assembly';
import { type AwsEndpoint, listStackResources } from './aws-api';
import { type DeployedApp, deployAssembly } from './deploy';

let moto: MotoServer;
let clients: LocalClients;
let outdir: string;
let app: DeployedApp;
let originalTemplate: string;

beforeAll(async () => {
  outdir = mkdtempSync(join(tmpdir(), 'orrery-nested-'));
  const cdkApp = new App({ outdir, context: { 'aws:cdk:enable-asset-metadata': true } });
  const parent = new Stack(cdkApp, 'Parent');
  const table = new dynamodb.Table(parent, 'Table', {
    partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
  });
  const inner = new NestedStack(parent, 'Inner');
  const queue = new sqs.Queue(inner, 'Queue');
  const group = new scheduler.CfnScheduleGroup(inner, 'Group', { name: 'nested-test-group' });
  const deeper = new NestedStack(inner, 'Deeper');
  const deepQueue = new sqs.Queue(deeper, 'DeepQueue', { deadLetterQueue: { queue, maxReceiveCount: 3 } });
  // parent → nested (a parameter), nested → parent (Outputs.<name>), nested group → parent role
  new sqs.Queue(inner, 'NamedAfterTable', { queueName: `${table.tableName}-q` });
  const role = new iam.Role(parent, 'SchedulerRole', {
    assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com', {
      conditions: { ArnEquals: { 'aws:SourceArn': group.attrArn } },
    }),
  });
  new CfnOutput(parent, 'QueueUrl', { value: queue.queueUrl });
  new CfnOutput(parent, 'DeepQueueUrl', { value: deepQueue.queueUrl });
  new CfnOutput(parent, 'GroupName', { value: group.ref });
  new CfnOutput(parent, 'RoleArn', { value: role.roleArn });
  cdkApp.synth();
  const assembly = readAssembly(outdir);
  originalTemplate = readFileSync(join(outdir, 'Parent.template.json'), 'utf8');

  moto = await startMotoServer();
  clients = localClients({
    endpoints: { dynamodb: moto.endpoint, sqs: moto.endpoint, scheduler: moto.endpoint },
    region: 'us-east-1',
  });
  const api: AwsEndpoint = {
    endpoint: moto.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'AKIAORRERYHARNESS000', secretAccessKey: 'harness' },
  };
  app = await deployAssembly({
    assembly,
    api,
    clients,
    account: '123456789012',
    workDir: join(outdir, 'work'),
    serveFunctionUrls: async () => new Map(),
  });
}, 120_000);

afterAll(async () => {
  clients?.destroy();
  await moto?.stop();
  if (outdir) rmSync(outdir, { recursive: true, force: true });
});

describe('deploying an app with nested stacks onto moto', () => {
  it("inlines both levels and resolves the parent's outputs read from nested stacks", async () => {
    const outputs = app.outputs.Parent ?? {};
    expect(Object.keys(outputs).sort()).toEqual(['DeepQueueUrl', 'GroupName', 'QueueUrl', 'RoleArn']);
    for (const key of ['QueueUrl', 'DeepQueueUrl'] as const) {
      const url = outputs[key] ?? '';
      expect(url).toMatch(/^https:\/\/sqs\.us-east-1\.amazonaws\.com\/123456789012\//);
      const name = url.split('/').pop() ?? '';
      const found = await clients.sqs.send(new GetQueueUrlCommand({ QueueName: name }));
      expect(found.QueueUrl, key).toContain(name);
    }
    expect(outputs.GroupName).toBe('nested-test-group');
    expect(outputs.RoleArn).toMatch(/^arn:aws:iam::123456789012:role\//);
    expect(app.patches.find((p) => p.id === 'nested-stacks-inlined')?.places).toBe(2);
    expect(app.patches.find((p) => p.id === 'schedule-group-precreated')?.places).toBeGreaterThan(0);
  });

  it('passes a parent value into a nested stack through its parameter', async () => {
    const resources = await listStackResources(
      { endpoint: moto.endpoint, region: 'us-east-1', credentials: { accessKeyId: 'a', secretAccessKey: 'b' } },
      'Parent',
    );
    const table = resources.find((r) => r.type === 'AWS::DynamoDB::Table')?.physicalId ?? '';
    expect(table).not.toBe('');
    const named = await clients.sqs.send(new GetQueueUrlCommand({ QueueName: `${table}-q` }));
    expect(named.QueueUrl).toContain(`${table}-q`);
  });

  it('never writes the synthesized templates', () => {
    expect(readFileSync(join(outdir, 'Parent.template.json'), 'utf8')).toBe(originalTemplate);
    expect(originalTemplate).toContain('AWS::CloudFormation::Stack');
  });
});
