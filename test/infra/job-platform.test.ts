import { Stack } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { echoJob } from '../../functions/jobs/catalog';
import { JobPlatform, type JobTypeInfo, type JobTypeOptions } from '../../infra/constructs/job-platform';
import { flatTemplate, logicalId, render, synthOrrery, testApp } from './support';

const entry = 'functions/jobs/echo.ts';
const spec = (type: string, extra: Partial<JobTypeInfo> = {}): JobTypeInfo => ({ type, timeoutMs: 10_000, ...extra });

function platform(): { stack: Stack; platform: JobPlatform } {
  const stack = new Stack(testApp(), 'T');
  return { stack, platform: new JobPlatform(stack, 'Platform') };
}

function addFails(options: Partial<JobTypeOptions>, message: RegExp): void {
  const { platform: p } = platform();
  expect(() => p.addJobType({ spec: spec('email'), entry, ...options })).toThrow(message);
}

describe('JobPlatform.addJobType validation', () => {
  it('rejects a type added twice', () => {
    const { platform: p } = platform();
    p.addJobType({ spec: echoJob, entry });
    expect(() => p.addJobType({ spec: echoJob, entry })).toThrow(
      /job type "echo" was added to this JobPlatform already/,
    );
  });

  it.each([1, 0, 1001, 2.5, Number.NaN])('rejects concurrency %s (MaximumConcurrency is 2-1000)', (concurrency) => {
    addFails({ concurrency }, /job type "email": concurrency must be an integer from 2 to 1000/);
  });

  it.each([0, 11, 1.5])('rejects batchSize %s', (batchSize) => {
    addFails({ batchSize }, /job type "email": batchSize must be an integer from 1 to 10/);
  });

  it.each([64, 127, 10_241, 1024.5])('rejects memorySize %s (Lambda allows 128-10240 MB)', (memorySize) => {
    addFails({ memorySize }, /job type "email": memorySize must be an integer from 128 to 10240/);
  });

  it('rejects a maxReceiveCount that does not exceed the retry attempts', () => {
    addFails(
      { spec: spec('email', { retry: { maxAttempts: 5 } }), maxReceiveCount: 5 },
      /maxReceiveCount must be an integer from 6 to 1000 \(more than retry.maxAttempts\)/,
    );
  });

  it.each(['Email', 'email_x', '9lives', ''])('rejects the type name %j', (type) => {
    addFails({ spec: spec(type) }, /must match/);
  });

  it.each([999, 840_001])('rejects timeoutMs %s', (timeoutMs) => {
    addFails({ spec: spec('email', { timeoutMs }) }, /timeoutMs must be an integer from 1000 to 840000/);
  });

  it('rejects two types that would share construct ids and output names', () => {
    const { platform: p } = platform();
    p.addJobType({ spec: spec('a-b'), entry });
    expect(() => p.addJobType({ spec: spec('a--b'), entry })).toThrow(
      /"a--b" and "a-b" map to the same construct id "AB"/,
    );
  });

  it('creates nothing for a rejected type', () => {
    const { platform: p } = platform();
    expect(() => p.addJobType({ spec: spec('email'), entry, concurrency: 1 })).toThrow();
    expect(p.jobTypes.size).toBe(0);
    expect(p.node.tryFindChild('TypeEmail')).toBeUndefined();
  });

  it('refuses to synthesize a platform without job types', () => {
    const { stack } = platform();
    expect(() => flatTemplate(stack)).toThrow(/JobPlatform has no job types/);
  });

  it('rejects retentionDays outside 1-3650', () => {
    const stack = new Stack(testApp(), 'T');
    expect(() => new JobPlatform(stack, 'P', { retentionDays: 0 })).toThrow(/retentionDays must be an integer/);
  });
});

describe('JobPlatform outputs', () => {
  it('outputs the API URL, table, schedule group and the queue naming: two outputs for any number of types', () => {
    const { stack, template } = synthOrrery();
    const outputs = template.toJSON().Outputs as Record<string, { Value: unknown }>;
    expect(Object.keys(outputs).sort()).toEqual(
      ['ApiUrl', 'TableName', 'ScheduleGroupName', 'QueueUrlBase', 'QueueNamePrefix'].sort(),
    );
    const p = stack.platform;
    expect(outputs.ApiUrl?.Value).toEqual({ 'Fn::GetAtt': [logicalId(p.api.url), 'FunctionUrl'] });
    expect(outputs.TableName?.Value).toEqual({ Ref: logicalId(p.jobTable.table) });
    expect(outputs.ScheduleGroupName?.Value).toBe('Orrery-jobs');
    expect(outputs.QueueNamePrefix?.Value).toBe('Orrery');
    expect(render(outputs.QueueUrlBase?.Value)).toBe(
      `https://sqs.\${Ref:AWS::Region}.\${Ref:AWS::URLSuffix}/\${Ref:AWS::AccountId}/`,
    );
  });

  it('can leave outputs to the caller', () => {
    const stack = new Stack(testApp(), 'T');
    new JobPlatform(stack, 'P', { outputs: false }).addJobType({ spec: spec('email'), entry });
    expect(flatTemplate(stack).toJSON().Outputs).toBeUndefined();
  });

  it('honours retentionDays, log level and API sizing', () => {
    const stack = new Stack(testApp(), 'T');
    const p = new JobPlatform(stack, 'P', { retentionDays: 7, logLevel: 'debug', apiMemoryMb: 1024 });
    p.addJobType({ spec: spec('email'), entry, memorySize: 2048 });
    const template = flatTemplate(stack);
    template.hasResourceProperties('AWS::Lambda::Function', {
      MemorySize: 1024,
      Environment: { Variables: { ORRERY_RETENTION_DAYS: '7', ORRERY_LOG_LEVEL: 'debug' } },
    });
    template.hasResourceProperties('AWS::Lambda::Function', { MemorySize: 2048 });
  });
});
