import { describe, expect, it } from 'vitest';
import { catalog } from '../../functions/jobs/catalog';
import {
  lambdaTimeoutSeconds,
  MAX_RECEIVE_COUNT,
  RETENTION_SECONDS,
  VISIBILITY_FACTOR,
} from '../../shared/core/queue-settings';
import { logicalId, prop, resource, resources, synthOrrery } from './support';

const { stack, template } = synthOrrery();
const specs = [...catalog];

function queuesOf(type: string) {
  const group = stack.platform.jobTypes.get(type);
  if (!group) throw new Error(`no job type ${type}`);
  return { ready: logicalId(group.queues.queue), dlq: logicalId(group.queues.deadLetterQueue), group };
}

describe('ready queues and DLQs', () => {
  it('gives every job type its own ready queue and DLQ', () => {
    expect([...stack.platform.jobTypes.keys()]).toEqual(specs.map((s) => s.type));
    template.resourceCountIs('AWS::SQS::Queue', specs.length * 2);
    const ids = specs.flatMap((s) => Object.values(queuesOf(s.type)).filter((v) => typeof v === 'string'));
    expect(new Set(ids).size).toBe(specs.length * 2);
  });

  it('encrypts every queue with SQS-managed keys and keeps messages 14 days', () => {
    for (const queue of Object.values(resources(template, 'AWS::SQS::Queue'))) {
      expect(queue.Properties).toMatchObject({ SqsManagedSseEnabled: true, MessageRetentionPeriod: RETENTION_SECONDS });
    }
  });

  it('denies non-TLS access to every queue (enforceSSL)', () => {
    const queueIds = Object.keys(resources(template, 'AWS::SQS::Queue'));
    const policies = Object.values(resources(template, 'AWS::SQS::QueuePolicy'));
    for (const id of queueIds) {
      const policy = policies.find((p) => JSON.stringify(p.Properties?.Queues) === JSON.stringify([{ Ref: id }]));
      expect(policy?.Properties?.PolicyDocument).toMatchObject({
        Statement: expect.arrayContaining([
          expect.objectContaining({
            Effect: 'Deny',
            Action: 'sqs:*',
            Principal: { AWS: '*' },
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
        ]),
      });
    }
  });

  it('redrives each ready queue to its own DLQ after MAX_RECEIVE_COUNT receives', () => {
    for (const spec of specs) {
      const { ready, dlq } = queuesOf(spec.type);
      expect(resource(template, ready).Properties?.RedrivePolicy).toEqual({
        deadLetterTargetArn: { 'Fn::GetAtt': [dlq, 'Arn'] },
        maxReceiveCount: MAX_RECEIVE_COUNT,
      });
      expect(resource(template, dlq).Properties?.RedrivePolicy).toBeUndefined();
    }
  });

  it('sets visibility to at least 6x the consuming function timeout (read from the template)', () => {
    const mappings = Object.values(resources(template, 'AWS::Lambda::EventSourceMapping'));
    expect(mappings).toHaveLength(specs.length);
    for (const mapping of mappings) {
      const queueId = prop<{ 'Fn::GetAtt': [string, string] }>(mapping, 'EventSourceArn')['Fn::GetAtt'][0];
      const functionId = prop<{ Ref: string }>(mapping, 'FunctionName').Ref;
      const visibility = resource(template, queueId).Properties?.VisibilityTimeout as number;
      const timeout = resource(template, functionId).Properties?.Timeout as number;
      expect(timeout).toBeGreaterThan(0);
      expect(visibility).toBeGreaterThanOrEqual(VISIBILITY_FACTOR * timeout);
      expect(visibility).toBeLessThanOrEqual(43_200);
    }
  });

  it('derives the worker timeout from the spec timeout (lambdaTimeoutSeconds)', () => {
    for (const spec of specs) {
      const { group } = queuesOf(spec.type);
      const fn = resource(template, logicalId(group.worker.handler));
      expect(fn.Properties?.Timeout).toBe(lambdaTimeoutSeconds(spec.timeoutMs));
    }
  });
});
