/**
 * What the shared e2e suite does not exercise and only a deployed stack can get wrong: each
 * function runs with its own environment and role, so a worker that ends a job whose children
 * are of another type must reach that type's queue with what it was deployed with. Locally every
 * worker shares one configuration (all routes); here each has what the template gives it.
 *
 * Runs in the `deployed` project only (`npm run test:deployed`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueue, uniqueId, waitForState } from '../e2e/helpers';
import type { E2ETarget } from '../e2e/target';
import { startDeployedTarget } from './deployed-target';

let target: E2ETarget;

beforeAll(async () => {
  target = await startDeployedTarget();
});

afterAll(async () => {
  await target?.stop();
});

describe("a parent's end releases its children (dependsOn)", () => {
  it('a child of the same type runs once its parent succeeded', async () => {
    const parent = await enqueue(target, { type: 'echo', payload: { role: 'parent' }, delaySeconds: 2 });
    const child = await enqueue(target, { type: 'echo', payload: { role: 'child' }, dependsOn: [parent.job.id] });
    expect(child.status).toBe(201);
    expect(child.job.state).toBe('waiting');
    expect((await waitForState(target, parent.job.id, ['succeeded', 'failed'])).state).toBe('succeeded');
    expect((await waitForState(target, child.job.id, ['succeeded', 'failed'], 20_000)).state).toBe('succeeded');
  });

  it('a child of another type runs once its parent succeeded (the parent type’s worker sends to the child type’s queue)', async () => {
    const parent = await enqueue(target, { type: 'echo', payload: { role: 'parent' }, delaySeconds: 2 });
    const child = await enqueue(target, { type: 'sleep', payload: { ms: 10 }, dependsOn: [parent.job.id] });
    expect(child.status).toBe(201);
    expect(child.job.state).toBe('waiting');
    expect((await waitForState(target, parent.job.id, ['succeeded', 'failed'])).state).toBe('succeeded');
    expect((await waitForState(target, child.job.id, ['succeeded', 'failed'], 20_000)).state).toBe('succeeded');
  });

  it('a flow across types runs to its end (POST /flows)', async () => {
    const flow = uniqueId('flow');
    const ids = { a: `${flow}-a`, b: `${flow}-b`, c: `${flow}-c` };
    const response = await target.request('POST', '/flows', {
      id: flow,
      jobs: [
        { id: ids.a, type: 'echo', payload: { step: 'a' } },
        { id: ids.b, type: 'sleep', payload: { ms: 10 }, dependsOn: [ids.a] },
        { id: ids.c, type: 'echo', payload: { step: 'c' }, dependsOn: [ids.b] },
      ],
    });
    expect(response.status, await response.clone().text()).toBe(201);
    for (const id of [ids.a, ids.b, ids.c]) {
      expect((await waitForState(target, id, ['succeeded', 'failed', 'cancelled'], 20_000)).state, id).toBe(
        'succeeded',
      );
    }
  });
});
