import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dlqPeekSchema, jobViewSchema, redriveResultSchema } from '../../shared/api/schemas';
import { call, callError, isLocal, uniqueId, waitFor, waitForJob } from './contract-helpers';
import { type E2ETarget, startTarget } from './target';

let target: E2ETarget;

beforeAll(async () => {
  target = await startTarget();
});

afterAll(async () => {
  await target?.stop();
});

const peek = (type: string) => call(target, 'GET', `/dlq?type=${type}`, 200, dlqPeekSchema);

describe('GET /dlq', () => {
  it.runIf(isLocal)('answers an empty list for an empty DLQ', async () => {
    const body = await peek('sleep');
    expect(body).toEqual({
      type: 'sleep',
      approximateDepth: { visible: 0, inFlight: 0 },
      messages: [],
      lastRedrive: null, // never redriven
    });
  });

  it('shows dead letters without consuming them: message id, job id, receive count, sent time', async () => {
    const id = uniqueId('dead');
    await target.sendToDlq('flaky', JSON.stringify({ v: 1, id, type: 'flaky' }));
    await target.sendToDlq('flaky', 'not a job message');
    const first = await waitFor('both dead letters', async () => {
      const body = await peek('flaky');
      return body.messages.length >= 2 ? body : undefined;
    });
    const job = first.messages.find((m) => m.jobId === id);
    expect(job).toMatchObject({ jobId: id, body: null });
    expect(job?.receiveCount).toBeGreaterThanOrEqual(1);
    expect(Date.parse(job?.sentAt ?? '')).toBeGreaterThan(Date.now() - 60_000);
    expect(first.messages.find((m) => m.jobId === null)?.body).toBe('not a job message');
    // Looking again still finds them: the peek left them in the queue.
    const second = await peek('flaky');
    expect(second.messages.map((m) => m.messageId).sort()).toEqual(first.messages.map((m) => m.messageId).sort());
    expect(second.approximateDepth.visible + second.approximateDepth.inFlight).toBeGreaterThanOrEqual(2);
  });

  it('answers 400 unknown_type for a type that is not deployed', async () => {
    await callError(target, 'GET', '/dlq?type=nope', 400, 'unknown_type');
  });
});

describe('POST /dlq/redrive', () => {
  it('moves a dead job message back to the ready queue; the job runs once, not before it is due', async () => {
    // A queued job due in a few seconds, and a copy of its message in the DLQ. (It cannot wait
    // 15 minutes as it once did: a worker never starts a job before its runAt, whatever message
    // brought it.) The redriven copy is an ordinary delivery: early, it waits for runAt; of the
    // two deliveries, exactly one runs the job.
    const job = await call(target, 'POST', '/jobs', 201, jobViewSchema, {
      id: uniqueId('redrive'),
      type: 'echo',
      payload: { redriven: true },
      delaySeconds: 5,
    });
    await target.sendToDlq('echo', JSON.stringify({ v: 1, id: job.id, type: 'echo' }));
    await waitFor('the dead letter', async () =>
      (await peek('echo')).messages.some((m) => m.jobId === job.id) ? true : undefined,
    );

    const response = await target.request('POST', '/dlq/redrive', { type: 'echo' });
    const result = redriveResultSchema.parse(await response.json());
    if (result.method === 'receive-send') {
      expect(response.status).toBe(200);
      expect(result.moved).toBeGreaterThanOrEqual(1);
      expect(result.stoppedBy).toBe('empty');
      if (isLocal) expect(result).toEqual({ method: 'receive-send', moved: 1, stoppedBy: 'empty', remaining: 0 });
    } else {
      expect(response.status).toBe(202); // SQS moves them asynchronously
      expect(['started', 'running']).toContain(result.status);
    }
    // the type's last redrive is this one, unless a task was running already (this call started none)
    if (result.method === 'receive-send' || result.status === 'started') {
      const last = (await peek('echo')).lastRedrive;
      expect(last).toMatchObject({ method: result.method, by: expect.any(String) });
      expect(Date.parse(last?.at ?? '')).toBeGreaterThan(Date.now() - 60_000);
      if (result.method === 'receive-send') expect(last?.moved).toBe(result.moved);
    }

    const done = await waitForJob(target, job.id, ['succeeded'], 60_000);
    expect(done).toMatchObject({ attempts: 1, result: { redriven: true } });
    // The claim (startedAt) may come up to a second before runAt; the handler never does.
    expect(Date.parse(done.startedAt ?? '')).toBeGreaterThanOrEqual(Date.parse(job.runAt) - 1_000);
    await waitFor(
      'the DLQ to be empty of it',
      async () => ((await peek('echo')).messages.some((m) => m.jobId === job.id) ? undefined : true),
      60_000,
    );
  });

  it('validates its body', async () => {
    await callError(target, 'POST', '/dlq/redrive', 400, 'unknown_type', { type: 'nope' });
    await callError(target, 'POST', '/dlq/redrive', 400, 'validation_failed', { type: 'echo', maxMessages: 0 });
  });
});
