import { ConfigError } from '../../errors';
import { createPaceGate } from '../pace-gate';
import { startsNow } from './claimable';
import { type GateBuilder, GO, GO_ON } from './gate';

/**
 * A throttled type's attempt takes the next turn of its key before its claim (see
 * ../pace-gate.ts): a later turn hides the message until then. An attempt claimed without a
 * turn taken for it (the job changed between the read and the claim) takes one after the claim,
 * or is given back, due at its turn.
 */
export const throttleGate: GateBuilder = (kit) => {
  const { spec } = kit.def;
  if (!spec.throttle) return undefined;
  const pacer = kit.deps.pacer;
  if (!pacer) throw new ConfigError(`job type "${spec.type}" has a throttle: the worker needs its pacer`);
  const pace = createPaceGate({ spec, pacer, store: kit.deps.store, clock: kit.clock, handOff: kit.handOff });
  if (!pace) return undefined;
  return {
    name: 'throttle',
    pass: (d) => {
      // The attempt token a turn was taken for, if one was.
      let paced: number | undefined;
      return {
        async beforeClaim() {
          const current = await d.job();
          if (!current || !startsNow(current, kit.type, d.now)) return GO;
          const turn = await pace.turn(current, current.leaseToken + 1, d.log);
          if (turn.kind === 'later') return { kind: 'later', until: turn.until };
          paced = current.leaseToken + 1;
          return GO;
        },
        async afterClaim(claimed) {
          if (paced === claimed.leaseToken) return GO_ON;
          const turn = await pace.turn(claimed, claimed.leaseToken, d.log);
          if (turn.kind === 'go') return GO_ON;
          return {
            kind: 'give-back',
            // in a throttle's line (priorities) the job keeps its due time, and so its rank: it
            // waits under it, and `until` is only an estimate
            runAt: spec.priority ? Date.parse(claimed.runAt) : turn.until,
            hideUntil: turn.until,
            what: 'giving back an attempt that must wait for its throttle turn',
          };
        },
      };
    },
  };
};
