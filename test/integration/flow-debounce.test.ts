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
import type { JobDefinition } from '../../shared/runtime/job-definition';
import { type LocalAws, startLocalAws } from '../local-aws/index';
import { type LocalPlatform, startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';
import { enqueueNew } from '../support/local-api';

let aws: LocalAws;
beforeAll(async () => {
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
});
afterAll(async () => {
  await aws?.stop();
});

const view = (platform: LocalPlatform, id: string) =>
  fetch(`${platform.url}/jobs/${id}`).then((r) => r.json()) as Promise<JobView>;

describe('debounce on local AWS', () => {
  it('runs a burst once, with the last payload, after the key is quiet, and by maxWait when it never is', async () => {
    const runs: { catalog: string; rev: number; at: number }[] = [];
    const debounced = (type: string, options: { periodSeconds: number; maxWaitSeconds: number }): JobDefinition => ({
      spec: defineJobType({
        type,
        payload: z.object({ catalog: z.string(), rev: z.number() }),
        debounce: { key: (p) => p.catalog, ...options },
      }),
      run: async (p) => {
        runs.push({ ...(p as { catalog: string; rev: number }), at: Date.now() });
        return { ok: true };
      },
    });
    aws.applyEnv();
    const platform = await startLocalPlatform({
      aws,
      prefix: uniquePrefix('debounce'),
      jobs: [
        // bursts: a long maxWait, so a slow burst on a loaded machine is still one window
        debounced('reindex', { periodSeconds: 2, maxWaitSeconds: 30 }),
        // a steady stream: never quiet for 2 s, so maxWait (5 s) makes it run
        debounced('digest', { periodSeconds: 2, maxWaitSeconds: 5 }),
      ],
      logger: createLogger({ level: 'error' }),
    });
    try {
      // a burst of 100 changes of c1 in about 2 s: 20 waves of 5 requests at once, 100 ms apart
      const started = Date.now();
      let lastWave = started;
      for (let wave = 0; wave < 20; wave++) {
        lastWave = Date.now();
        await Promise.all(
          Array.from({ length: 5 }, (_, j) => {
            const rev = wave * 5 + j + 1;
            return enqueueNew(platform.url, { id: `c1-${rev}`, type: 'reindex', payload: { catalog: 'c1', rev } });
          }),
        );
        const due = started + (wave + 1) * 100;
        if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
      }
      const c1Last = Date.now();
      expect(c1Last - started).toBeLessThan(15_000); // about 2 s; more on a loaded machine
      // and 40 changes of c3 at once, 10 requests in flight at a time
      for (let i = 0; i < 40; i += 10) {
        await Promise.all(
          Array.from({ length: 10 }, (_, j) =>
            enqueueNew(platform.url, { id: `c3-${i + j}`, type: 'reindex', payload: { catalog: 'c3', rev: i + j } }),
          ),
        );
      }
      const c2Start = Date.now();
      // c2 changes every 500 ms for 6 s: never quiet for 2 s, so maxWait (5 s) makes it run
      const c2 = (async () => {
        for (let rev = 1; rev <= 12; rev++) {
          await enqueueNew(platform.url, { id: `c2-${rev}`, type: 'digest', payload: { catalog: 'c2', rev } });
          await new Promise((r) => setTimeout(r, 500));
        }
      })();
      await c2;
      const deadline = Date.now() + 30_000;
      while (
        Date.now() < deadline &&
        (!runs.some((r) => r.catalog === 'c1') ||
          !runs.some((r) => r.catalog === 'c2' && r.rev === 12) ||
          !runs.some((r) => r.catalog === 'c3'))
      ) {
        await new Promise((r) => setTimeout(r, 200));
      }
      await new Promise((r) => setTimeout(r, 3000)); // a second run would have come by now
      const c1Runs = runs.filter((r) => r.catalog === 'c1');
      // once, with a payload of the last wave (its 5 requests were in flight together)
      expect(c1Runs).toHaveLength(1);
      expect(c1Runs[0]?.rev ?? 0).toBeGreaterThan(95);
      const c1Run = `c1-${c1Runs[0]?.rev}`;
      // after the quiet period: at least 2 s after its own enqueue, in the last wave
      expect(c1Runs[0]?.at ?? 0).toBeGreaterThanOrEqual(lastWave + 2000);
      for (let rev = 1; rev <= 100; rev++) {
        const id = `c1-${rev}`;
        if (id !== c1Run) expect((await view(platform, id)).debouncedInto, id).toBe(c1Run);
      }
      expect(await view(platform, 'c1-3')).toMatchObject({ state: 'skipped', skipReason: { kind: 'debounce' } });
      expect((await view(platform, c1Run)).state).toBe('succeeded');
      // the concurrent burst: exactly one run too, and every other job points to it
      const c3Runs = runs.filter((r) => r.catalog === 'c3');
      expect(c3Runs).toHaveLength(1);
      const c3Run = `c3-${c3Runs[0]?.rev}`;
      for (let i = 0; i < 40; i++) {
        const id = `c3-${i}`;
        if (id !== c3Run) expect((await view(platform, id)).debouncedInto, id).toBe(c3Run);
      }
      // c2: the first window ran by maxWait, before its changes stopped; the last change ran too
      const c2Runs = runs.filter((r) => r.catalog === 'c2');
      expect(c2Runs.length).toBeGreaterThanOrEqual(2);
      expect(c2Runs.length).toBeLessThanOrEqual(3);
      expect(c2Runs.at(-1)?.rev).toBe(12);
      // by maxWait (5 s after the window's first job), although the key was never quiet for 2 s
      expect(c2Runs[0]?.at ?? 0).toBeLessThan(c2Start + 5000 + 2000);
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
