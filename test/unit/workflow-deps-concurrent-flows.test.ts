/**
 * Two creations of one flow at once: a client's request that timed out (still running in the API)
 * and its replay. Found by the system chaos run (seed 192645390): children left waiting though
 * every parent ended. Every interleaving of the two requests, and of the parents' runs with them,
 * must leave no child waiting once its parents ended.
 */
import { describe, expect, it } from 'vitest';
import { depsPlatform } from './workflow-deps-harness';

const diamond = (failA: boolean) => ({
  id: 'dag',
  jobs: [
    { id: 'a', type: 'node', payload: failA ? { fail: true } : {} },
    { id: 'b', type: 'node', payload: {}, dependsOn: [{ id: 'a', onParentFailure: 'ignore' }] },
    { id: 'c', type: 'node', payload: {}, dependsOn: [{ id: 'a', onParentFailure: 'fail' }] },
    { id: 'd', type: 'node', payload: {}, dependsOn: ['b', 'c'] },
  ],
});

describe('two creations of one flow at once', () => {
  for (const failA of [false, true]) {
    for (const drainAfter of [0, 1, 2, 4, 8, 16]) {
      it(`${failA ? 'a fails' : 'all succeed'}, parents run after ${drainAfter} store calls of the second request: no child is left waiting`, async () => {
        const p = depsPlatform();
        const first = p.flows.create(diamond(failA));
        // the replay starts while the first request is under way; jobs run meanwhile
        let calls = 0;
        const replay = (async () => {
          while (calls++ < drainAfter) await Promise.resolve();
          return p.flows.create(diamond(failA));
        })();
        const running = (async () => {
          for (let i = 0; i < drainAfter * 4; i++) {
            await Promise.resolve();
            await p.drain();
          }
        })();
        await Promise.allSettled([first, replay, running]);
        await p.drain();
        const states = Object.fromEntries(['a', 'b', 'c', 'd'].map((id) => [id, p.store.peek(id)?.state]));
        expect(Object.values(states).filter((s) => s === 'waiting' || s === 'queued')).toEqual([]);
        expect(states).toEqual(
          failA
            ? { a: 'failed', b: 'succeeded', c: 'failed', d: 'failed' }
            : { a: 'succeeded', b: 'succeeded', c: 'succeeded', d: 'succeeded' },
        );
      });
    }
  }
});
