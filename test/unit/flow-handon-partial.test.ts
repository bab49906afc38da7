/**
 * A hand-on that fails part-way (the admission loop hands a place on, then a later call of it
 * fails: throttled, a conflict) still sends the job it handed the place to its message. Before,
 * the admitted list was lost with the error, the retry found the place taken, and the job held a
 * place it was never told of until a job in line found it suspect (minutes later).
 */
import { describe, expect, it } from 'vitest';
import { ThrottledError } from '../../shared/errors';
import { sqsEvent } from '../support/fakes';
import { echoJob, gated, harness, messageFor, oneAtATimeSpec } from './worker-harness';

describe('a hand-on that fails part-way', () => {
  it('still sends the job it handed the place to its message', async () => {
    const g = gated(); // a runs until released
    const h = harness({ spec: oneAtATimeSpec, run: g.run as never });
    h.store.seed(echoJob('a', { flowKeys: ['*'] }));
    h.store.seed(echoJob('b', { flowKeys: ['*'] }));
    const running = h.worker(sqsEvent(messageFor('a')));
    await g.until('a');
    await h.worker(sqsEvent(messageFor('b')));
    expect(await h.flow.state({ scope: 'echo#0', key: '*' })).toMatchObject({ waiting: 1 });
    // the admission hands b the place, then the loop's next call fails
    const admit = h.flow.admit.bind(h.flow);
    let failed = false;
    h.flow.admit = async (input) => {
      const out = await admit(input);
      if (!failed) {
        failed = true;
        throw new ThrottledError('DynamoDB throttled the next read of the slot; retry shortly');
      }
      return out;
    };
    g.release('a');
    await running;
    expect(await h.flow.state({ scope: 'echo#0', key: '*' })).toMatchObject({
      holders: [{ jobId: 'b' }],
      waiting: 0,
    });
    expect(h.queue.sent.map((s) => s.message.id)).toContain('b');
  });
});
