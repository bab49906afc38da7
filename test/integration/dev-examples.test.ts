/**
 * The composition examples `npm run dev` prints (scripts/dev-examples.ts) against the dev server
 * running this repository's orrery.config.ts, request by request as the printed curl lines send
 * them: an invoke and its children, an event with two subscribers, an event waited for and the job
 * that emits it, and a batch handler. Each example's jobs end `succeeded`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import config from '../../orrery.config';
import { COMPOSITION_EXAMPLES, type DevRequest, EVENT_EXAMPLE } from '../../scripts/dev-examples';
import { devConfigJobs } from '../../shared/cli/dev-config';
import { buildUi } from '../../ui/build';
import { startLocalAws } from '../local-aws';
import { type DevServer, startDevServer } from '../local-aws/dev-server';
import type { LocalAws } from '../local-aws/index';

let aws: LocalAws;
let dev: DevServer;
const assetsDir = mkdtempSync(join(tmpdir(), 'orrery-dev-examples-ui-'));

beforeAll(async () => {
  buildUi(assetsDir);
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
  dev = await startDevServer({
    // as `orrery dev` loads it: the same check of what the config exports
    jobs: devConfigJobs({ default: config }, 'orrery.config.ts'),
    port: 0,
    prefix: `devex-${process.pid}`,
    aws,
    assetsDir,
    log: () => {},
  });
});

afterAll(async () => {
  await dev?.stop();
  await aws?.stop();
  rmSync(assetsDir, { recursive: true, force: true });
});

type Answer = { status: number; body: Record<string, unknown> };

/** Sends a request as its curl line does. */
async function send(request: DevRequest): Promise<Answer> {
  const response = await fetch(`${dev.url}${request.path}`, {
    method: request.method,
    ...(request.body === undefined
      ? {}
      : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(request.body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

type JobView = { id: string; state: string; result?: unknown; invokedBy?: string[] };

async function until(id: string, state: string, timeoutMs = 30_000): Promise<JobView> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const job = (await send({ method: 'GET', path: `/jobs/${id}` })).body as unknown as JobView;
    if (job.state === state) return job;
    if (['failed', 'cancelled', 'expired', 'skipped'].includes(job.state) || Date.now() > deadline) {
      throw new Error(`job ${id} is ${job.state}, not ${state}: ${JSON.stringify(job)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const example = (start: string) => {
  const found = COMPOSITION_EXAMPLES.find((e) => e.title.startsWith(start));
  if (!found) throw new Error(`no example ${start}`);
  return found;
};

/** Sends every request of an example, in order, each answered 2xx. */
async function run(start: string): Promise<Answer[]> {
  const answers: Answer[] = [];
  for (const request of example(start).requests) {
    const answer = await send(request);
    expect(answer.status, `${request.method} ${request.path}: ${JSON.stringify(answer.body)}`).toBeLessThan(300);
    answers.push(answer);
  }
  return answers;
}

describe('the composition examples of npm run dev', () => {
  it('invoke: quote-order resumes after its three price-item children and adds up their results', async () => {
    await run('Invoke');
    for (const id of example('Invoke').succeeds) await until(id, 'succeeded');
    const quote = await until('quote-7', 'succeeded');
    expect(quote.result).toMatchObject({
      orderId: 'o7',
      totalCents: 1100,
      prices: [
        { item: 'book', cents: 400 },
        { item: 'lamp', cents: 400 },
        { item: 'pen', cents: 300 },
      ],
    });
    // each child knows the job that invoked it, and the parent lists its children
    expect((await until('quote-7.price-1', 'succeeded')).invokedBy).toEqual(['quote-7']);
    const invoked = await send({ method: 'GET', path: '/jobs/quote-7/invoked' });
    expect(invoked.body).toEqual({
      id: 'quote-7',
      items: [0, 1, 2].map((i) => ({
        name: `price-${i}`,
        id: `quote-7.price-${i}`,
        type: 'price-item',
        state: 'succeeded',
      })),
      nextCursor: null,
    });
  });

  it('an event: user.signed-up makes one job for each of its two subscribers, and both succeed', async () => {
    const [sent] = await run('An event');
    const jobs = (sent?.body.jobs ?? []) as { type: string; id: string }[];
    expect(jobs.map((j) => j.type).sort()).toEqual(EVENT_EXAMPLE.subscribers);
    for (const job of jobs) await until(job.id, 'succeeded');
    const made = await send({ method: 'GET', path: `/events/${EVENT_EXAMPLE.id}` });
    expect(((made.body.jobs ?? []) as { state: string }[]).map((j) => j.state)).toEqual(['succeeded', 'succeeded']);
  });

  it('waitForEvent and emit: await-parcel wakes on the parcel.shipped event ship-parcel sends', async () => {
    const wait = example('Wait for an event');
    const [enqueueWaiter, , enqueueSender] = wait.requests;
    if (!enqueueWaiter || !enqueueSender) throw new Error('the example has changed');
    expect((await send(enqueueWaiter)).status).toBe(201);
    await until('parcel-o7', 'waiting');
    expect((await send(enqueueSender)).status).toBe(201);
    for (const id of wait.succeeds) await until(id, 'succeeded');
    expect((await until('parcel-o7', 'succeeded')).result).toMatchObject({ orderId: 'o7', trackingId: 'trk-o7' });
  });

  it('a batch handler: send-receipt records each receipt of a batch on its own job', async () => {
    await run('A batch handler');
    for (const id of example('A batch handler').succeeds) {
      const job = await until(id, 'succeeded');
      expect(job.result).toMatchObject({ sentTo: `${id.slice('receipt-'.length)}@example.com` });
    }
  });
});
