/**
 * A workflow that suspends and resumes on the deployed stack. `fulfil-order` records a step per
 * item, waits for the `payment` signal (sent through the API), sleeps through its cooling-off
 * period, and ends. Each resumed run loads the job's journal with one Query
 * (`DynamoJournal.load`), which the worker's role allows only on journal partitions
 * (`ForAllValues:StringLike` on `dynamodb:LeadingKeys`, infra/constructs/job-worker.ts): the run's
 * IAM proof (iam-proof.ts) evaluates those Queries with their partition key.
 *
 * The signal's wake is an SQS send by the API; the sleep's is the message's own visibility (a
 * sleep under 11 h 40 min needs no schedule, which moto would never fire).
 *
 * Runs in the `deployed` project only (`npm run test:deployed`).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueue, type JobBody, uniqueId, waitForState } from '../e2e/helpers';
import type { E2ETarget } from '../e2e/target';
import { startDeployedTarget } from './deployed-target';

let target: E2ETarget;

beforeAll(async () => {
  target = await startDeployedTarget();
});

afterAll(async () => {
  await target?.stop();
});

type WorkflowJob = JobBody & { waitingFor?: { kind: string; key: string }; resumes?: number };

/**
 * The log lines about `jobId` of the worker of `type`: the harness's Lambda host writes each
 * function's output to `logs/<logical id>.log` beside the outputs file, and deployment.json
 * names the function its event source mapping (on the type's ready queue) invokes.
 */
function workerLog(type: string, jobId: string): { message: string }[] {
  const outputs = process.env.ORRERY_E2E_OUTPUTS;
  if (!outputs) throw new Error('ORRERY_E2E_OUTPUTS is not set (npm run test:deployed sets it)');
  const dir = dirname(outputs);
  const deployment = JSON.parse(readFileSync(join(dir, 'deployment.json'), 'utf8')) as {
    functions: { logicalId: string; configuration: { FunctionArn: string } }[];
    mappings: { EventSourceArn: string; FunctionArn: string }[];
  };
  const mapping = deployment.mappings.find((m) => m.EventSourceArn.endsWith(`_ready_${type}`));
  const fn = deployment.functions.find((f) => f.configuration.FunctionArn === mapping?.FunctionArn);
  if (!fn) throw new Error(`no deployed worker of type ${type}`);
  return readFileSync(join(dir, 'logs', `${fn.logicalId}.log`), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { message: string; jobId?: string })
    .filter((line) => line.jobId === jobId);
}

describe('a workflow suspends and resumes (fulfil-order)', () => {
  it('records its steps, waits for a signal, sleeps, and ends without running a recorded step again', async () => {
    const orderId = uniqueId('order');
    const items = ['lamp', 'desk'];
    const enqueued = await enqueue(target, {
      type: 'fulfil-order',
      payload: { orderId, items, coolingOffSeconds: 2 },
    });
    expect(enqueued.status).toBe(201);
    const id = enqueued.job.id;

    // The reservations are recorded, then the job suspends on its signal wait.
    const waiting = (await waitForState(target, id, ['waiting', 'succeeded', 'failed'], 30_000)) as WorkflowJob;
    expect(waiting.state).toBe('waiting');
    expect(waiting.waitingFor).toMatchObject({ kind: 'signal', key: 'payment' });

    const sent = await target.request('POST', `/jobs/${encodeURIComponent(id)}/signals/payment`, {
      payload: { amount: 42, reference: 'pay-1' },
    });
    expect(sent.status, await sent.clone().text()).toBe(202);
    expect(await sent.json()).toMatchObject({ resumed: true, late: false, duplicate: false });

    // Resumed by the signal, it sleeps (a second suspension), is resumed by its message, and ends.
    const done = (await waitForState(target, id, ['succeeded', 'failed', 'cancelled'], 60_000)) as WorkflowJob;
    expect(done.state, JSON.stringify(done.lastError)).toBe('succeeded');
    expect(done.result).toEqual({
      orderId,
      status: 'paid',
      paid: 42,
      reference: 'pay-1',
      reserved: items.map((_, i) => `${orderId}-${i}`),
    });
    expect(done.resumes).toBe(2);
    // Waiting spends no attempt.
    expect(done.attempts).toBe(1);

    // Three runs of the handler; each reservation ran in the first only, the later two replayed it.
    const messages = workerLog('fulfil-order', id).map((line) => line.message);
    const count = (message: string) => messages.filter((m) => m === message).length;
    expect(count('job waits for a signal')).toBe(1);
    expect(count('job sleeps')).toBe(1);
    expect(count('reserving')).toBe(items.length);
    expect(count('order confirmed')).toBe(1);
    expect(count('job succeeded')).toBe(1);
  });
});
