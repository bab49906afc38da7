/**
 * How the API shows `ctx.invoke`'s graph on local AWS: an invoked job's view names the job that
 * invoked it (`invokedBy`), told from a `dependsOn` child of policy `ignore` (whose edge has the
 * same policy in the registry) by the child's parents item; and `GET /jobs/{id}/invoked` lists a
 * job's invoked jobs with their states.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { echo } from '../../functions/jobs/echo';
import { priceItem } from '../../functions/jobs/price-item';
import { quoteOrder } from '../../functions/jobs/quote-order';
import { type LocalAws, startLocalAws } from '../local-aws/index';
import { type LocalPlatform, startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';

let aws: LocalAws;
let platform: LocalPlatform;

beforeAll(async () => {
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
  platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix('invoked-view'),
    jobs: [echo, quoteOrder, priceItem],
  });
});

afterAll(async () => {
  await platform?.stop();
  await aws?.stop();
});

type View = { id: string; state: string; children?: string[]; invokedBy?: string[]; parents?: { id: string }[] };

async function call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const response = await fetch(`${platform.url}${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  return { status: response.status, json: await response.json() };
}

async function until(id: string, state: string, timeoutMs = 30_000): Promise<View> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const view = (await call('GET', `/jobs/${id}`)).json as View;
    if (view.state === state) return view;
    if (Date.now() > deadline) throw new Error(`job ${id} is ${view.state}, not ${state}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('the views of an invoke', () => {
  it('an invoked job names the job that invoked it; the invoking job lists what it invoked', async () => {
    const id = uniquePrefix('quote');
    const created = await call('POST', '/jobs', {
      id,
      type: 'quote-order',
      payload: { orderId: 'o1', items: ['a', 'bb'] },
    });
    expect(created.status).toBe(201);
    await until(id, 'succeeded');
    const child = await until(`${id}.price-1`, 'succeeded');
    expect(child.invokedBy).toEqual([id]);
    expect(child.children).toEqual([id]);
    // the invoking job has no parents item: an invoke is not a dependsOn edge
    const parent = (await call('GET', `/jobs/${id}`)).json as View;
    expect(parent.parents).toBeUndefined();
    expect(parent.invokedBy).toBeUndefined();
    expect((await call('GET', `/jobs/${id}/invoked`)).json).toEqual({
      id,
      items: [
        { name: 'price-0', id: `${id}.price-0`, type: 'price-item', state: 'succeeded' },
        { name: 'price-1', id: `${id}.price-1`, type: 'price-item', state: 'succeeded' },
      ],
      nextCursor: null,
    });
  });

  it('a dependsOn child of policy ignore is a child, not an invoker', async () => {
    const [a, b, c] = [uniquePrefix('a'), uniquePrefix('b'), uniquePrefix('c')];
    const flow = await call('POST', '/flows', {
      jobs: [
        { id: a, type: 'echo', payload: {} },
        { id: b, type: 'echo', payload: {}, dependsOn: [{ id: a, onParentFailure: 'ignore' }] },
        { id: c, type: 'echo', payload: {}, dependsOn: [a] },
      ],
    });
    expect(flow.status).toBe(201);
    await until(b, 'succeeded');
    await until(c, 'succeeded');
    const view = (await call('GET', `/jobs/${a}`)).json as View;
    expect([...(view.children ?? [])].sort()).toEqual([b, c].sort());
    expect(view.invokedBy).toBeUndefined();
    // a job that invoked nothing has an empty list; an unknown one is a 404
    expect((await call('GET', `/jobs/${a}/invoked`)).json).toEqual({ id: a, items: [], nextCursor: null });
    expect((await call('GET', `/jobs/${uniquePrefix('none')}/invoked`)).status).toBe(404);
  });
});
