import { debounceScope } from '../../core/debounce';
import { WHOLE_TYPE_KEY } from '../../core/flow';
import { ConfigError } from '../../errors';
import { errorFields } from '../../logger';
import { giveWayTo, newerDebounceRun } from '../debounce-gate';
import { type GateBuilder, GO, GO_ON } from './gate';

/**
 * A debounced type's run gives way to a newer job of its key that runs, or ran (see
 * ../debounce-gate.ts): it ends `skipped`, pointing to it. A run that starts closes its key's
 * window, so later jobs of the key open a new one.
 */
export const debounceGate: GateBuilder = (kit) => {
  const { spec } = kit.def;
  if (!spec.debounce) return undefined;
  const debouncer = kit.deps.debouncer;
  if (!debouncer) throw new ConfigError(`job type "${spec.type}" has a debounce: the worker needs its debouncer`);
  const store = kit.deps.store;
  return {
    name: 'debounce',
    pass: (d) => ({
      async beforeClaim() {
        const current = await d.job();
        const newer = current && (await newerDebounceRun({ store, debouncer }, spec.type, current, d.now));
        if (!current || !newer) return GO;
        const skip = giveWayTo(current, newer, d.now, kit.expiresAt(d.now));
        return {
          kind: 'skip',
          job: current,
          reason: skip.reason,
          ...(skip.beforeSeq === undefined ? {} : { beforeSeq: skip.beforeSeq }),
          // refused: the job changed since the read (it started, or ended): the next gates read it again
          ifRefused: 'go',
          note: 'debounced: a newer job of its key runs instead',
          fields: { by: newer.id },
        };
      },
      async afterClaim(claimed) {
        // The run started: later jobs of its key open a new window (a failed close leaves this one
        // open, and the next job replaces nothing that is still waiting: it is its own run).
        const key = claimed.debounceKey ?? WHOLE_TYPE_KEY;
        await debouncer
          .close({ scope: debounceScope(spec.type), key, jobId: claimed.id })
          .catch((error: unknown) => d.log.warn('could not close the debounce window', errorFields(error)));
        return GO_ON;
      },
    }),
  };
};
