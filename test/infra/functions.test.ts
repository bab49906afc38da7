import { type App, type CfnElement, Stack } from 'aws-cdk-lib';
import { Match } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { describe, expect, it } from 'vitest';
import { catalog } from '../../functions/jobs/catalog';
import { ENV, platformConfigFromEnv, platformConfigToEnv, routeOf, typesDigest } from '../../shared/config';
import { Resolver, readAssembly } from './quotas';
import { functionEnv, logicalId, prop, resource, resources, synthOrrery } from './support';

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

  it('give the API the table, Scheduler and queue-naming variables, and the digest of every type, including types added after it', () => {
    const env = functionEnv(template, apiId);
    expect(Object.keys(env)).toEqual(
      expect.arrayContaining([
        ENV.table,
        ENV.scheduleGroup,
        ENV.schedulerRoleArn,
        ENV.retentionDays,
        ENV.queueUrlBase,
        ENV.queueArnBase,
        ENV.queuePrefix,
        ENV.typesDigest,
      ]),
    );
    expect(env[ENV.retentionDays]).toBe('30');
    expect(env[ENV.queuePrefix]).toBe('Orrery');
    expect(env[ENV.typesDigest]).toBe(typesDigest(workers.map((w) => w.spec.type)));
    expect(Object.keys(env).filter((name) => name.startsWith('ORRERY_ROUTES'))).toEqual([]);
  });

  it("resolve, as CloudFormation resolves them, to each type's real queue URL and ARN in every function", () => {
    const stacks = readAssembly(stack.node.root as App);
    // each function's environment, resolved in the stack it lives in (a worker's: its type's nested stack)
    const resolvers = new Map(stacks.map((s) => [s.name, new Resolver(s)]));
    for (const s of stacks) {
      const resolver = resolvers.get(s.name) as Resolver;
      for (const [nestedId, nested] of stacks
        .filter((n) => n.name.startsWith(`${s.name}/`))
        .map((n) => [n.name.slice(s.name.length + 1), n] as const)) {
        if (!nestedId.includes('/')) resolver.nested.set(nestedId, nested);
      }
    }
    const queueOf = (w: (typeof workers)[number], construct: IConstruct) => {
      const home = stacks.find((s) => s.name === `Orrery/${w.queueId.split('/')[0]}`);
      if (!home) throw new Error(`no nested stack of ${w.spec.type}`);
      const id = Stack.of(construct).getLogicalId(construct.node.defaultChild as CfnElement);
      const resolver = resolvers.get(home.name) as Resolver;
      return { url: resolver.resolve({ Ref: id }), arn: resolver.resolve({ 'Fn::GetAtt': [id, 'Arn'] }) };
    };
    const types = workers.map((w) => w.spec.type);
    let functions = 0;
    for (const s of stacks) {
      const resolver = resolvers.get(s.name) as Resolver;
      for (const [id, res] of Object.entries(s.template.Resources ?? {})) {
        if (res.Type !== 'AWS::Lambda::Function') continue;
        functions += 1;
        const environment = res.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined;
        const variables = environment?.Variables ?? {};
        const env = Object.fromEntries(Object.entries(variables).map(([k, v]) => [k, resolver.resolve(v)]));
        const config = platformConfigFromEnv(env);
        for (const worker of workers) {
          // a worker sends to other types' queues: the children it releases, a freed slot's next holder
          const ready = queueOf(worker, worker.group.queues.queue);
          const dlq = queueOf(worker, worker.group.queues.deadLetterQueue);
          expect(routeOf(config, worker.spec.type), `${s.name} ${id} → ${worker.spec.type}`).toEqual({
            queueUrl: ready.url,
            queueArn: ready.arn,
            dlqUrl: dlq.url,
            dlqArn: dlq.arn,
          });
        }
        expect(platformConfigFromEnv(env, types).routes[types[0] ?? '']?.queueUrl).toMatch(
          /^https:\/\/sqs\.ap-southeast-3\.amazonaws\.com\/123456789012\/Orrery_ready_/,
        );
      }
    }
    expect(functions).toBe(2 + workers.length);
  });

  it('give each worker the table, retention, Scheduler and queue-naming settings and its receive count, and no digest', () => {
    const apiEnv = functionEnv(template, apiId);
    for (const worker of workers) {
      const env = functionEnv(template, worker.id);
      for (const name of [
        ENV.table,
        ENV.retentionDays,
        ENV.scheduleGroup,
        ENV.schedulerRoleArn,
        ENV.queueUrlBase,
        ENV.queueArnBase,
        ENV.queuePrefix,
      ]) {
        expect(env[name], `${worker.spec.type} ${name}`).toEqual(apiEnv[name]);
      }
      expect(env[ENV.maxReceiveCount]).toBe(String(worker.group.queues.maxReceiveCount));
      // a worker's configuration does not change when a type is added
      expect(env[ENV.typesDigest]).toBeUndefined();
    }
  });

  it('set every variable the runtime config has, in a form platformConfigFromEnv accepts', () => {
    const sample = platformConfigToEnv({
      tableName: 't',
      routes: {},
      queues: { urlBase: 'https://sqs.eu-west-1.amazonaws.com/1/', arnBase: 'arn:aws:sqs:eu-west-1:1:', prefix: 'p' },
      scheduleGroup: 'g',
      schedulerRoleArn: 'r',
      retentionDays: 30,
      logLevel: 'info',
    });
    const [stackUnderTest] = readAssembly(stack.node.root as App).filter((s) => s.name === 'Orrery');
    if (!stackUnderTest) throw new Error('no Orrery stack in the assembly');
    const resolver = new Resolver(stackUnderTest);
    for (const id of [apiId, ...workers.map((w) => w.id)]) {
      const env = Object.fromEntries(
        Object.entries(functionEnv(template, id)).map(([k, v]) => [k, resolver.resolve(v)]),
      );
      // the digest of the deployed types is the API's and the supervisor's, not a worker's
      const expected = Object.keys(sample).filter((name) => id === apiId || name !== ENV.typesDigest);
      expect(Object.keys(env), id).toEqual(expect.arrayContaining(expected));
      const config = platformConfigFromEnv(env);
      expect(config.retentionDays).toBe(30);
      expect(config.logLevel).toBe('info');
    }
  });

  it('feed each worker from its own queue with partial batch responses and a concurrency cap', () => {
    const expected: Record<
      string,
      { BatchSize: number; MaximumConcurrency: number; MaximumBatchingWindowInSeconds?: number }
    > = {
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
      'quote-order': { BatchSize: 10, MaximumConcurrency: 5 },
      'price-item': { BatchSize: 10, MaximumConcurrency: 5 },
      'await-parcel': { BatchSize: 10, MaximumConcurrency: 5 },
      'ship-parcel': { BatchSize: 10, MaximumConcurrency: 5 },
      // a batch type: its spec's batch.maxSize, and its maxWaitSeconds as the batching window
      'send-receipt': { BatchSize: 10, MaximumConcurrency: 5, MaximumBatchingWindowInSeconds: 2 },
    };
    for (const worker of workers) {
      const want = expected[worker.spec.type];
      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        FunctionName: { Ref: worker.id },
        EventSourceArn: { 'Fn::GetAtt': [worker.queueId, 'Arn'] },
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        BatchSize: want?.BatchSize,
        ScalingConfig: { MaximumConcurrency: want?.MaximumConcurrency },
        ...(want?.MaximumBatchingWindowInSeconds === undefined
          ? {}
          : { MaximumBatchingWindowInSeconds: want.MaximumBatchingWindowInSeconds }),
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
