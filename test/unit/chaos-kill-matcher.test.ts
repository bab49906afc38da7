/**
 * The system chaos run's planned kills (test/chaos/system-workflows.ts) must hit the call of the
 * request they are planned for. The fault injector sees every API call, so a matcher that also
 * takes another request's call (here: a parent's own create, retried while its child's dying
 * enqueue runs) records a kill that never happened to the child: the run then expects a child
 * that was never written (seed 735922514: "wf-0032-c: never written, or lost", killed at
 * "PutItem wf-0032-p").
 */
import { describe, expect, it } from 'vitest';
import { killMatcher } from '../chaos/system-workflows';
import type { CallInfo } from '../support/faults';

const parent = 'wf-0032-p-4op1h8';
const call = (command: string, input: Record<string, unknown>): CallInfo => ({
  service: 'dynamodb',
  command,
  op: command,
  jobId: parent,
  input,
});

describe("enqueue-after-create: the child's registration with its parent, after the child's create", () => {
  const matches = killMatcher('enqueue-after-create', parent);

  it("matches the registration (ADD childCount on the parent's status item)", () => {
    expect(
      matches(
        call('UpdateItem', {
          Key: { pk: { S: `job#${parent}` }, sk: { S: '_' } },
          UpdateExpression: 'ADD childCount :one',
        }),
      ),
    ).toBe(true);
  });

  it("does not match the parent's own create, which another request makes", () => {
    expect(
      matches(
        call('PutItem', {
          Item: { pk: { S: `job#${parent}` }, sk: { S: '_' }, state: { S: 'queued' } },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    ).toBe(false);
  });

  it("does not match another write on the parent's status item (a cancel, a wake)", () => {
    expect(
      matches(
        call('UpdateItem', {
          Key: { pk: { S: `job#${parent}` }, sk: { S: '_' } },
          UpdateExpression: 'SET #state = :to, finishedAt = :now',
        }),
      ),
    ).toBe(false);
  });
});
