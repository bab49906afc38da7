/** What a path's plan runs against: the local platform, its clocks and the counted clients. */
import type { LocalAws, localClients } from '../test/local-aws/index';
import type { LocalPlatform } from '../test/local-aws/local-platform';
import type { CallRecorder, countedEsmClient } from './counting-middleware';
import type { OffsetClock } from './local';

export interface Harness {
  aws: LocalAws;
  clock: OffsetClock;
  /** Uncounted clients for the bench's own reads and nudges. */
  harness: ReturnType<typeof localClients>;
  platform: LocalPlatform;
  recorder: CallRecorder;
  esm: ReturnType<typeof countedEsmClient>;
  /** When a job handler last ran (set by the wrapped definitions). */
  window: { current?: { start: number; end: number } };
  /** Jobs created through the store, in order, with who created them. */
  created: { id: string; actor: string }[];
}
