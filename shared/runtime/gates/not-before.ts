import { EARLY_START_TOLERANCE_MS } from '../../core/scheduling';
import { type GateBuilder, GO } from './gate';

/**
 * A message sent ahead of its job (a one-time schedule fires about a minute early) names when
 * the job is due (`notBefore`): it is hidden until then, without a read or a write.
 */
export const notBeforeGate: GateBuilder = (kit) => ({
  name: 'not-before',
  pass: (d) => ({
    async beforeClaim() {
      if (d.message.notBefore === undefined) return GO;
      const notBefore = Date.parse(d.message.notBefore);
      return notBefore - kit.clock.now() > EARLY_START_TOLERANCE_MS ? { kind: 'later', until: notBefore } : GO;
    },
  }),
});
