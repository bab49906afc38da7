import { mustWaitFor } from '../scheduling';
import { type GateBuilder, GO } from './gate';

/**
 * A `queue-one` schedule run names the run it follows (`after`): it waits, hidden for a while
 * that grows with its receive count, while that run is not finished (one read per delivery).
 */
export const predecessorGate: GateBuilder = (kit) => ({
  name: 'after',
  pass: (d) => ({
    async beforeClaim() {
      const after = d.message.after;
      if (!after) return GO;
      const { store, queue } = kit.deps;
      const waits = await mustWaitFor({
        after,
        store,
        queue,
        queueUrl: kit.route.queueUrl,
        record: d.record,
        log: d.log,
      });
      return waits ? { kind: 'answer', outcome: 'retry' } : GO;
    },
  }),
});
