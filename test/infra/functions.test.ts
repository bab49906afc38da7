import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { catalog } from '../../functions/jobs/catalog';
import { ENV, platformConfigFromEnv, platformConfigToEnv } from '../../shared/config';
import { functionEnv, logicalId, prop, render, resource, resources, synthOrrery } from './support';

const { stack, template } = synthOrrery();
const platform = stack.platform;
const apiId = logicalId(platform.api.handler);
const workers = [...catalog].map((spec) => {
  const group = platform.jobTypes.get(spec.type);
  if (!group) throw new Error(`no job type ${spec.type}`);
  return {
    spec,
    group,
    id: logicalId(group.worker.handler),
    queueId: logicalId(group.queues.queue),
    dlqId: logicalId(group.queues.deadLetterQueue),
  };
});

describe('Lambda functions', () => {
  it('are exactly the API, the supervisor and one worker per type', () => {
    template.resourceCountIs('AWS::Lambda::Function', 2 + workers.length);
  });

  it('run Node.js 24 on arm64 with active X-Ray tracing, source maps and explicit memory', () => {
    for (const fn of Object.values(resources(template, 'AWS::Lambda::Function'))) {
      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        TracingConfig: { Mode: 'Active' },
        MemorySize: 512,
        Environment: { Variables: expect.objectContaining({ NODE_OPTIONS: '--enable-source-maps' }) },
      });
    }
  });

  it('log to their own log group, kept one month, with a role that may write only there', () => {
    template.resourceCountIs('AWS::Logs::LogGroup', 2 + workers.length);
    for (const [id, fn] of Object.entries(resources(template, 'AWS::Lambda::Function'))) {
      const logGroupId = prop<{ LogGroup: { Ref: string } }>(fn, 'LoggingConfig').LogGroup.Ref;
      expect(resource(template, logGroupId).Properties?.RetentionInDays, id).toBe(30);
    }
    template.resourcePropertiesCountIs(
      'AWS::IAM::Role',
      { ManagedPolicyArns: Match.anyValue() },
      0, // no AWSLambdaBasicExecutionRole: it would allow writing to any log group
    );
  });

  it('give the API every table/scheduler variable and a route for every type, including types added after it', () => {
    const env = functionEnv(template, apiId);
    expect(Object.keys(env)).toEqual(
      expect.arrayContaining([ENV.table, ENV.routes, ENV.scheduleGroup, ENV.schedulerRoleArn, ENV.retentionDays]),
    );
    expect(env[ENV.retentionDays]).toBe('30');
    const routes = JSON.parse(render(env[ENV.routes])) as Record<string, { queueUrl: string; queueArn: string }>;
    expect(Object.keys(routes)).toEqual(workers.map((w) => w.spec.type));
    for (const worker of workers) {
      expect(routes[worker.spec.type]).toEqual({
        queueUrl: `\${Ref:${worker.queueId}}`,
        queueArn: `\${${worker.queueId}.Arn}`,
        dlqUrl: `\${Ref:${worker.dlqId}}`,
        dlqArn: `\${${worker.dlqId}.Arn}`,
      });
    }
  });

  it('give each worker the table, retention, Scheduler settings and only its own route', () => {
    const apiEnv = functionEnv(template, apiId);
    for (const worker of workers) {
      const env = functionEnv(template, worker.id);
      for (const name of [ENV.table, ENV.retentionDays, ENV.scheduleGroup, ENV.schedulerRoleArn]) {
        expect(env[name], `${worker.spec.type} ${name}`).toEqual(apiEnv[name]);
      }
      const routes = JSON.parse(render(env[ENV.routes])) as Record<string, unknown>;
      expect(Object.keys(routes)).toEqual([worker.spec.type]);
    }
  });

  it('set every variable the runtime config has, in a form platformConfigFromEnv accepts', () => {
    const sample = platformConfigToEnv({
      tableName: 't',
      routes: {},
      scheduleGroup: 'g',
      schedulerRoleArn: 'r',
      retentionDays: 30,
      logLevel: 'info',
    });
    for (const id of [apiId, ...workers.map((w) => w.id)]) {
      const env = Object.fromEntries(Object.entries(functionEnv(template, id)).map(([k, v]) => [k, render(v)]));
      expect(Object.keys(env), id).toEqual(expect.arrayContaining(Object.keys(sample)));
      const config = platformConfigFromEnv(env);
      expect(config.retentionDays).toBe(30);
      expect(config.logLevel).toBe('info');
    }
  });

  it('feed each worker from its own queue with partial batch responses and a concurrency cap', () => {
    const expected: Record<string, { BatchSize: number; MaximumConcurrency: number }> = {
      echo: { BatchSize: 10, MaximumConcurrency: 5 },
      flaky: { BatchSize: 10, MaximumConcurrency: 2 },
      sleep: { BatchSize: 5, MaximumConcurrency: 5 },
      'tenant-sync': { BatchSize: 10, MaximumConcurrency: 5 },
      'api-call': { BatchSize: 10, MaximumConcurrency: 5 },
      'account-sync': { BatchSize: 10, MaximumConcurrency: 5 },
      'welcome-email': { BatchSize: 10, MaximumConcurrency: 5 },
      reindex: { BatchSize: 10, MaximumConcurrency: 5 },
      'fulfil-order': { BatchSize: 10, MaximumConcurrency: 5 },
      'pack-item': { BatchSize: 10, MaximumConcurrency: 5 },
      'ship-order': { BatchSize: 10, MaximumConcurrency: 5 },
    };
    for (const worker of workers) {
      const want = expected[worker.spec.type];
      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        FunctionName: { Ref: worker.id },
        EventSourceArn: { 'Fn::GetAtt': [worker.queueId, 'Arn'] },
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        BatchSize: want?.BatchSize,
        ScalingConfig: { MaximumConcurrency: want?.MaximumConcurrency },
      });
    }
  });

  it('expose the API only through a Function URL with AWS_IAM auth, so AWS rejects unsigned requests', () => {
    template.resourceCountIs('AWS::Lambda::Url', 1);
    template.hasResourceProperties('AWS::Lambda::Url', {
      AuthType: 'AWS_IAM',
      TargetFunctionArn: { 'Fn::GetAtt': [apiId, 'Arn'] },
    });
    // No resource policy opens the function to everyone (what AuthType NONE would need).
    for (const permission of Object.values(resources(template, 'AWS::Lambda::Permission'))) {
      expect(permission.Properties?.Principal).not.toBe('*');
      expect(permission.Properties?.FunctionUrlAuthType).not.toBe('NONE');
    }
    template.resourceCountIs('AWS::ApiGateway::RestApi', 0);
    template.resourceCountIs('AWS::ApiGatewayV2::Api', 0);
  });
});
