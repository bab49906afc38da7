/**
 * `PUT /types/{type}/keys/{key}/limits` (key `*`) raising a limit shared fairly (`fairBy`) hands
 * the new places on by the fair rule, as a job does (it once built the slot without its `fair`,
 * and the admission served the line's first entry by sort key); and a fair key named like an
 * `Object.prototype` member shows as any other.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { accessFrom } from '../../shared/api/access';
import { createApiHandler } from '../../shared/api/handler';
import { ManualClock } from '../../shared/core/clock';
import type { Slot } from '../../shared/core/flow';
import { defineJobType } from '../../shared/core/job-type';
import { createLogger } from '../../shared/logger';
import { FakeFlowSlots } from '../local-aws/memory-flow';
import { callApi } from '../support/api-call';
import { captureLogs, FakeJobQueue, FakeJobScheduler, FakeJobStore, testConfig } from '../support/fakes';

const T0 = Date.parse('2026-06-01T00:00:00.000Z');
const OPS = 'arn:aws:iam::123456789012:role/ops';

const fairSync = defineJobType({
  type: 'fair-sync',
  payload: z.object({ tenantId: z.string() }),
  concurrency: [{ limit: 2, fairBy: (p) => p.tenantId }],
});

function setup() {
  const flow = new FakeFlowSlots();
  const logs = captureLogs();
  const api = createApiHandler({
    access: accessFrom({ v: 1, principals: { [OPS]: [{ action: 'operate' }, { action: 'read' }] } }),
    config: testConfig(['fair-sync']),
    catalog: [fairSync],
    store: new FakeJobStore(),
    queue: new FakeJobQueue(),
    scheduler: new FakeJobScheduler(),
    clock: new ManualClock(T0),
    flow,
    logger: createLogger({ level: 'debug', sink: logs.sink }),
  });
  const call = (method: string, path: string, body?: unknown) => callApi(api, { method, path, body, as: OPS });
  return { call, flow };
}

describe('a limit raised at run time', () => {
  it('hands the new place to the waiting fair key that runs fewest', async () => {
    const { call, flow } = setup();
    const fairSlot = (key: string): Slot => ({
      scope: 'fair-sync#0',
      key: '*',
      limit: 2,
      fair: { key, weightOf: () => 1 },
    });
    const join = (jobId: string, fair: string, at: number) =>
      flow.acquire({
        slot: fairSlot(fair),
        jobId,
        type: 'fair-sync',
        now: T0,
        token: 1,
        rank: `${String(T0 + at).padStart(15, '0')}#${jobId}`,
      });
    await join('a1', 'acme', 0);
    await join('a2', 'acme', 1);
    await join('a3', 'acme', 2);
    await join('z1', 'zeta', 3);
    // acme runs 2, zeta 0: the place a raise frees is zeta's
    const put = await call('PUT', '/types/fair-sync/keys/*/limits', { concurrency: 3 });
    expect(put.status).toBe(200);
    expect(put.body.handedOn).toEqual(['z1']);
  });

  it('shows the share of a fair key named "constructor" as any other key', async () => {
    const { call, flow } = setup();
    const slot = { scope: 'fair-sync#0', key: '*', limit: 2, fair: { key: 'acme', weightOf: () => 1 } };
    await flow.acquire({
      slot,
      jobId: 'a1',
      type: 'fair-sync',
      now: T0,
      token: 1,
      rank: `${String(T0).padStart(15, '0')}#a1`,
    });
    await call('PUT', '/types/fair-sync/keys/acme/limits', { weight: 2 });
    const got = await call('GET', '/types/fair-sync/keys/constructor');
    expect(got.status).toBe(200);
    expect(got.body.limits[0].fair).toEqual({
      key: 'constructor',
      weight: 1,
      weightSource: 'spec',
      running: 0,
      waiting: 0,
    });
  });
});
