/**
 * The API's JobsService and a worker on the same in-memory ports, for a debounced `echo` type
 * keyed on `payload.catalog`: what test/unit/debounce*.test.ts build each case on.
 */
import { z } from 'zod';
import { JobsService } from '../../shared/api/jobs-service';
import type { JobTypeSpec } from '../../shared/core/job-type';
import { createLogger } from '../../shared/logger';
import { FakeJobScheduler, testConfig } from '../support/fakes';
import type { FakePacer } from '../support/flow-fakes';
import { harness } from './worker-harness';

/** The payload of the debounced type: a catalog (the key) and a revision (which payload ran). */
export const debouncePayload = z.object({ catalog: z.string(), rev: z.number() });

/** JobsService and worker over one harness; `enqueue(id, rev)` enqueues with that id; `ran` lists the payloads run. */
export function debounceSetup(spec: JobTypeSpec, pacer?: FakePacer) {
  const ran: unknown[] = [];
  const h = harness({
    spec,
    run: async (p) => {
      ran.push(p);
      return 'ok';
    },
  });
  const jobs = new JobsService({
    config: testConfig(['echo']),
    catalog: [spec],
    store: h.store,
    queue: h.queue,
    scheduler: new FakeJobScheduler(),
    clock: h.clock,
    log: createLogger({ level: 'silent' }),
    debouncer: h.debouncer,
    ...(pacer ? { pacer } : {}),
  });
  const enqueue = (id: string, rev: number, catalog = 'c1') =>
    jobs.enqueue({ type: 'echo', id, payload: { catalog, rev } });
  return { h, jobs, enqueue, ran };
}

/**
 * Stalls the creates named `<id>#<n>` (the n-th create of that id, from 0) until released:
 * `until(name)` waits for one to stall, `release(name)` lets it go.
 */
export function stallCreates(h: ReturnType<typeof debounceSetup>['h'], names: readonly string[]) {
  const create = h.store.create.bind(h.store);
  const gates = new Map<string, () => void>();
  const calls = new Map<string, number>();
  h.store.create = async (job) => {
    const n = calls.get(job.id) ?? 0;
    calls.set(job.id, n + 1);
    const name = `${job.id}#${n}`;
    if (names.includes(name)) await new Promise<void>((resolve) => gates.set(name, resolve));
    return create(job);
  };
  return {
    until: async (name: string) => {
      while (!gates.has(name)) await new Promise((r) => setTimeout(r, 1));
    },
    release: (name: string) => gates.get(name)?.(),
  };
}
