/**
 * Compile-time checks that a worker gets the ports its job type's spec needs (run by
 * `npm run typecheck`): a line that should not compile carries `@ts-expect-error`, and tsc fails
 * if it compiles after all. A definition typed wide (`JobDefinition`) or written in JavaScript is
 * checked when the worker is built instead (a `ConfigError`, test/unit/worker-flow.test.ts).
 */
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { defineJobType, type PortsOfSpec, type WorkerPort } from '../../shared/core/job-type';
import type { JobDefinition } from '../../shared/runtime/job-definition';
import { createWorker } from '../../shared/runtime/worker';
import { FakeJobQueue, FakeJobStore, testConfig } from '../support/fakes';
import { FakeDebouncer, FakeFlowSlots, FakePacer } from '../support/flow-fakes';

const payload = z.object({ tenant: z.string() });
const plain = defineJobType({ type: 'plain', payload });
const limited = defineJobType({ type: 'limited', payload, concurrency: [{ limit: 2, key: (p) => p.tenant }] });
const throttled = defineJobType({ type: 'throttled', payload, throttle: { limit: 5, periodSeconds: 1 } });
const debounced = defineJobType({ type: 'debounced', payload, debounce: { periodSeconds: 30 } });
const replacing = defineJobType({
  type: 'replacing',
  payload,
  singleton: { key: (p) => p.tenant, mode: 'cancel-running' },
});

const base = () => ({ config: testConfig(['plain']), store: new FakeJobStore(), queue: new FakeJobQueue() });
const run = async () => 'ok';

describe('a spec records the worker ports its options need', () => {
  it('none for a plain type; flow, pacer, debouncer, flow and control by option', () => {
    expectTypeOf<PortsOfSpec<typeof plain>>().toEqualTypeOf<never>();
    expectTypeOf<PortsOfSpec<typeof limited>>().toEqualTypeOf<'flow'>();
    expectTypeOf<PortsOfSpec<typeof throttled>>().toEqualTypeOf<'pacer'>();
    expectTypeOf<PortsOfSpec<typeof debounced>>().toEqualTypeOf<'debouncer'>();
    expectTypeOf<PortsOfSpec<typeof replacing>>().toEqualTypeOf<'flow' | 'control'>();
    expectTypeOf<PortsOfSpec<typeof replacing>>().toExtend<WorkerPort>();
  });
});

describe('createWorker requires them', () => {
  it('builds a plain type with the store and queue alone', () => {
    createWorker({ spec: plain, run }, base());
  });

  it('does not compile without the port a type needs', () => {
    // @ts-expect-error concurrency limits need flow slots
    createWorker({ spec: limited, run }, base());
    // @ts-expect-error a throttle needs its pacer
    createWorker({ spec: throttled, run }, base());
    // @ts-expect-error a debounce needs its debouncer
    createWorker({ spec: debounced, run }, base());
    // @ts-expect-error a cancel-running singleton needs job control besides its slots
    createWorker({ spec: replacing, run }, { ...base(), flow: new FakeFlowSlots() });
  });

  it('compiles with them', () => {
    createWorker({ spec: limited, run }, { ...base(), flow: new FakeFlowSlots() });
    createWorker({ spec: throttled, run }, { ...base(), pacer: new FakePacer() });
    createWorker({ spec: debounced, run }, { ...base(), debouncer: new FakeDebouncer() });
  });

  it('leaves a definition typed wide to the run-time check', () => {
    const wide: JobDefinition = { spec: limited, run };
    createWorker(wide, base());
  });

  it('keeps a spec that needs ports a JobTypeSpec, for lists of types', () => {
    const list: JobDefinition[] = [
      { spec: plain, run },
      { spec: limited, run },
      { spec: replacing, run },
    ];
    expectTypeOf(list).toExtend<JobDefinition[]>();
  });
});
