/**
 * The worker under a limit set at run time (on the in-memory ports): a job in line that sees a
 * place free under the run-time limit (though not under the spec's) hands it on.
 */
import { describe, expect, it } from 'vitest';
import { sqsEvent } from '../support/fakes';
import { echoJob, gated, harness, messageFor, oneAtATimeSpec } from './worker-harness';

const slot = { scope: 'echo#0', key: '*', limit: 1 };

describe('a limit raised at run time', () => {
  it('lets a job in line hand on a place free under it, though the spec says full', async () => {
    const g = gated(); // a runs until released
    const h = harness({ spec: oneAtATimeSpec, run: g.run as never });
    for (const id of ['a', 'x', 'y']) h.store.seed(echoJob(id, { flowKeys: ['*'] }));
    const running = h.worker(sqsEvent(messageFor('a')));
    await g.until('a');
    await h.worker(sqsEvent(messageFor('x'))); // x waits: the limit is 1
    // the limit is raised to 2 without its hand-on (the route's admit failed, say)
    await h.flow.setLimit({ slot, limit: 2, by: 'role/ops', now: Date.now() });
    // y comes: the line waits, so y joins it; it sees a place free under the limit that holds
    await h.worker(sqsEvent(messageFor('y')));
    expect(h.queue.sent.map((s) => s.message.id)).toEqual(['x']);
    expect((await h.flow.state(slot)).holders.map((x) => x.jobId).sort()).toEqual(['a', 'x']);
    g.release('a');
    await running;
  });
});
