/**
 * Debounce on local AWS (DynamoDB Local, the SQS emulator) through the real SDK and the API: a
 * burst of jobs of one key makes one run, with the last payload, after the key has been quiet;
 * the jobs it replaced are skipped and point to the run; a key that never goes quiet still runs
 * by `maxWaitSeconds`.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import type { JobView } from '../../shared/core/job';
import { defineJobType } from '../../shared/core/job-type';
import { createLogger } from '../../shared/logger';
import { type LocalAws, startLocalAws } from '../local-aws/index';
import { type LocalPlatform, startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';

let aws: LocalAws;
beforeAll(async () => {
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
});
afterAll(async () => {
  await aws?.stop();
});

async function enqueue(platform: LocalPlatform, body: unknown): Promise<JobView> {
  const response = await fetch(`${platform.url}/jobs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as JobView;
  expect(response.status, JSON.stringify(json)).toBe(201);
  return json;
}

const view = (platform: LocalPlatform, id: string) =>
  fetch(`${platform.url}/jobs/${id}`).then((r) => r.json()) as Promise<JobView>;

describe('debounce on local AWS', () => {
  it('runs a burst once, with the last payload, after the key is quiet, and by maxWait when it never is', async () => {
    const runs: { catalog: string; rev: number; at: number }[] = [];
    aws.applyEnv();
    const platform = await startLocalPlatform({
      aws,
      prefix: uniquePrefix('debounce'),
      jobs: [
        {
          spec: defineJobType({
            type: 'reindex',
            payload: z.object({ catalog: z.string(), rev: z.number() }),
            debounce: { key: (p) => p.catalog, periodSeconds: 2, maxWaitSeconds: 4 },
          }),
          run: async (p) => {
            runs.push({ ...(p as { catalog: string; rev: number }), at: Date.now() });
            return { ok: true };
          },
        },
      ],
      logger: createLogger({ level: 'error' }),
    });
    try {
      // a burst of 8 changes of c1, 100 ms apart
      const started = Date.now();
      for (let rev = 1; rev <= 8; rev++) {
        await enqueue(platform, { id: `c1-${rev}`, type: 'reindex', payload: { catalog: 'c1', rev } });
        await new Promise((r) => setTimeout(r, 100));
      }
      const lastAt = Date.now();
      // c2 changes every 500 ms for 6 s: never quiet for 2 s, so maxWait (4 s) makes it run
      const c2 = (async () => {
        for (let rev = 1; rev <= 12; rev++) {
          await enqueue(platform, { id: `c2-${rev}`, type: 'reindex', payload: { catalog: 'c2', rev } });
          await new Promise((r) => setTimeout(r, 500));
        }
      })();
      await c2;
      const deadline = Date.now() + 30_000;
      while (Date.now() < deadline && (!runs.some((r) => r.catalog === 'c1') || !runs.some((r) => r.rev === 12))) {
        await new Promise((r) => setTimeout(r, 200));
      }
      const c1Runs = runs.filter((r) => r.catalog === 'c1');
      expect(c1Runs.map((r) => r.rev)).toEqual([8]); // once, the last payload
      expect(c1Runs[0]?.at ?? 0).toBeGreaterThanOrEqual(lastAt + 1000); // after the quiet period (2 s after the last, minus the 100 ms gap and SQS's second)
      expect((await view(platform, 'c1-1')).debouncedInto).toBe('c1-8');
      expect(await view(platform, 'c1-3')).toMatchObject({
        state: 'skipped',
        skipReason: { kind: 'debounce', by: 'c1-4' },
      });
      expect((await view(platform, 'c1-8')).state).toBe('succeeded');
      // c2: the first window ran by maxWait, before its changes stopped; the last change ran too
      const c2Runs = runs.filter((r) => r.catalog === 'c2');
      expect(c2Runs.length).toBeGreaterThanOrEqual(2);
      expect(c2Runs.length).toBeLessThanOrEqual(3);
      expect(c2Runs.at(-1)?.rev).toBe(12);
      expect(c2Runs[0]?.at ?? 0).toBeLessThan(started + 8000);
      const key = (await fetch(`${platform.url}/types/reindex/keys/c1`).then((r) => r.json())) as {
        debounce: { periodSeconds: number; run?: string };
      };
      expect(key.debounce).toMatchObject({ periodSeconds: 2 });
      expect(key.debounce.run).toBeUndefined(); // the run closed its window
    } finally {
      await platform.stop();
    }
  }, 60_000);
});
