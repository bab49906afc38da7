import { Stack } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { JobPlatform, type JobTypeInfo } from '../../infra/constructs/job-platform';
import { defineJobType } from '../../shared/core/job-type';
import { lambdaTimeoutSeconds, visibilityTimeoutSeconds } from '../../shared/core/queue-settings';
import { flatTemplate, logicalId, resources, testApp } from './support';

const entry = 'functions/jobs/echo.ts';

/** A batch type as a spec declares it: 500 jobs per call, gathered for up to 20 s. */
const mailerSpec = defineJobType({
  type: 'mailer',
  payload: z.object({ to: z.string() }),
  timeoutMs: 60_000,
  batch: { maxSize: 500, maxWaitSeconds: 20, key: (p) => p.to.replace(/.*@/, '') },
});

function platformWith(batchSpec: JobTypeInfo) {
  const stack = new Stack(testApp(), 'T');
  const platform = new JobPlatform(stack, 'Platform');
  const mailer = platform.addJobType({ spec: batchSpec, entry });
  const plain = platform.addJobType({ spec: { type: 'email', timeoutMs: 10_000 }, entry });
  return { stack, platform, mailer, plain };
}

/** The event source mapping that feeds `fn`. */
function mappingOf(template: ReturnType<typeof flatTemplate>, fnId: string) {
  const found = Object.values(resources(template, 'AWS::Lambda::EventSourceMapping')).filter(
    (r) => (r.Properties?.FunctionName as { Ref?: string } | undefined)?.Ref === fnId,
  );
  expect(found).toHaveLength(1);
  return found[0]?.Properties ?? {};
}

describe("a batch type's event source mapping", () => {
  it("takes BatchSize and MaximumBatchingWindowInSeconds from the spec's batch, with partial batch responses", () => {
    const { stack, mailer, plain } = platformWith(mailerSpec);
    const template = flatTemplate(stack);

    const batch = mappingOf(template, logicalId(mailer.worker.handler));
    expect(batch.BatchSize).toBe(500);
    expect(batch.MaximumBatchingWindowInSeconds).toBe(20);
    expect(batch.FunctionResponseTypes).toEqual(['ReportBatchItemFailures']);

    // a plain type keeps its 10 messages per invocation and no window
    const single = mappingOf(template, logicalId(plain.worker.handler));
    expect(single.BatchSize).toBe(10);
    expect(single.MaximumBatchingWindowInSeconds).toBeUndefined();
    expect(single.FunctionResponseTypes).toEqual(['ReportBatchItemFailures']);
  });

  it('gives the ready queue a visibility timeout of 6 × the worker timeout plus the batching window', () => {
    const { stack, mailer } = platformWith(mailerSpec);
    const template = flatTemplate(stack);
    const queue = Object.entries(resources(template, 'AWS::SQS::Queue')).find(
      ([id]) => id === logicalId(mailer.queues.queue),
    );
    expect(queue?.[1].Properties?.VisibilityTimeout).toBe(visibilityTimeoutSeconds(lambdaTimeoutSeconds(60_000), 20));
    expect(queue?.[1].Properties?.VisibilityTimeout).toBe(6 * 90 + 20);
  });

  it('refuses a batchSize option beside the spec’s batch, and batch limits the mapping does not allow', () => {
    const stack = new Stack(testApp(), 'T');
    const platform = new JobPlatform(stack, 'Platform');
    expect(() => platform.addJobType({ spec: mailerSpec, entry, batchSize: 10 })).toThrow(
      /batchSize is the spec's batch.maxSize/,
    );
    const unchecked = { type: 'bulk', timeoutMs: 10_000, batch: { maxSize: 20_000, maxWaitSeconds: 10 } };
    expect(() => platform.addJobType({ spec: unchecked, entry })).toThrow(
      /batch.maxSize must be an integer from 1 to 10000/,
    );
  });
});
