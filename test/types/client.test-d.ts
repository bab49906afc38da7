/**
 * Compile-time checks of the client's payload typing, run by `npm run typecheck`
 * (`tsc --noEmit -p .`; tsconfig includes `test`). Nothing here runs: a line that should not
 * compile carries `@ts-expect-error`, and tsc fails if it compiles after all ("unused
 * directive"), so both directions are checked.
 */
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { type catalog, echoJob, flakyJob, sleepJob } from '../../functions/jobs/catalog';
import {
  createClient,
  type EnqueueOptions,
  type EnqueueResult,
  type JobSummary,
  type JobView,
  type OrreryClient,
  type Upload,
  uploadRef,
} from '../../shared/client';
import type { JobTypeSpec } from '../../shared/core/job-type';

const url = 'http://127.0.0.1:4600';

/**
 * Specs whose `type` is a string literal, as `createClient<typeof catalog>` needs them (see
 * the tuple section below).
 */
declare function literalSpec<const Type extends string, Schema extends z.ZodType>(
  type: Type,
  payload: Schema,
): JobTypeSpec<Schema> & { readonly type: Type };

const literalCatalog = [
  literalSpec('echo', z.record(z.string(), z.unknown())),
  literalSpec('flaky', z.object({ failTimes: z.int().min(0).max(100) }).strict()),
  literalSpec('sleep', z.object({ ms: z.int().min(0) }).strict()),
  literalSpec('with-default', z.object({ to: z.string(), retries: z.int().default(3) }).strict()),
] as const;

describe('createClient({ jobs: { name: spec } }) with the real catalog specs', () => {
  const client = createClient({ url, jobs: { echo: echoJob, flaky: flakyJob, sleep: sleepJob } });

  it('accepts each type with its own payload', () => {
    client.enqueue('flaky', { failTimes: 2 });
    client.enqueue('sleep', { ms: 100 }, { delaySeconds: 5 });
    client.enqueue('echo', { anything: ['goes'] });
    expectTypeOf(client.enqueue).parameter(0).toEqualTypeOf<'echo' | 'flaky' | 'sleep'>();
  });

  it('rejects a wrong payload, a missing field, an extra field and an unknown type', () => {
    // @ts-expect-error failTimes must be a number
    client.enqueue('flaky', { failTimes: 'x' });
    // @ts-expect-error failTimes is required
    client.enqueue('flaky', {});
    // @ts-expect-error the flaky schema is strict
    client.enqueue('flaky', { failTimes: 1, extra: true });
    // @ts-expect-error no such job type
    client.enqueue('nope', {});
    // @ts-expect-error the sleep payload is not the flaky one
    client.enqueue('sleep', { failTimes: 1 });
  });

  it('types batch items per type', () => {
    client.enqueueBatch([
      { type: 'flaky', payload: { failTimes: 1 } },
      { type: 'sleep', payload: { ms: 1 }, id: 'x' },
    ]);
    // @ts-expect-error payload of the wrong type in a batch
    client.enqueueBatch([{ type: 'flaky', payload: { ms: 1 } }]);
    // @ts-expect-error unknown type in a batch
    client.enqueueBatch([{ type: 'nope', payload: {} }]);
  });

  it('takes an upload in place of any payload, and no look-alike of one', async () => {
    const upload = await client.upload({ failTimes: 1 });
    client.enqueue('flaky', upload);
    client.enqueue('sleep', uploadRef('u/0123'), { autoUpload: false });
    client.enqueueBatch([{ type: 'flaky', payload: upload }]);
    client.createFlow([{ id: 'a', type: 'sleep', payload: upload }]);
    expectTypeOf((await client.enqueue('flaky', { failTimes: 1 })).upload).toEqualTypeOf<Upload | undefined>();
    // @ts-expect-error a plain object with a ref is a payload, not an upload
    client.enqueue('flaky', { ref: 'u/0123' });
    // @ts-expect-error autoUpload is a boolean
    client.enqueue('flaky', { failTimes: 1 }, { autoUpload: 'yes' });
  });

  it('takes a numeric priority in enqueue, batch, flow and schedule options', () => {
    client.enqueue('sleep', { ms: 1 }, { priority: 8 });
    client.enqueueBatch([{ type: 'flaky', payload: { failTimes: 1 }, priority: 0 }]);
    client.createFlow([{ id: 'a', type: 'echo', payload: {}, priority: 10 }]);
    client.schedules.create({ name: 'n', type: 'echo', payload: {}, rate: '5 minutes', priority: 3 });
    expectTypeOf<EnqueueOptions['priority']>().toEqualTypeOf<number | undefined>();
    // @ts-expect-error a priority is a number, not a name
    client.enqueue('sleep', { ms: 1 }, { priority: 'high' });
    // @ts-expect-error a schedule's priority is a number too (the request schema takes any value, to check it itself)
    client.schedules.update('n', { type: 'echo', payload: {}, rate: '1 day', priority: 'high' });
  });

  it('types schedule payloads per type', () => {
    client.schedules.create({ name: 'n', type: 'flaky', payload: { failTimes: 1 }, rate: '5 minutes' });
    client.schedules.update('n', { type: 'sleep', payload: { ms: 5 }, cron: '@daily', overlap: 'skip' });
    // @ts-expect-error payload of the wrong type in a schedule
    client.schedules.create({ name: 'n', type: 'flaky', payload: { failTimes: 'x' }, rate: '5 minutes' });
    // @ts-expect-error not an overlap policy
    client.schedules.update('n', { type: 'echo', payload: {}, rate: '1 day', overlap: 'never' });
  });

  it('narrows the type name in filters and per-type routes', () => {
    client.list({ type: 'flaky', state: 'failed' });
    client.latest('echo');
    client.dlq.list('sleep');
    // @ts-expect-error not a job type of the catalog
    client.list({ type: 'nope' });
    // @ts-expect-error not a job state
    client.list({ state: 'done' });
    // @ts-expect-error not a job type of the catalog
    client.dlq.redrive('nope');
  });

  it('returns the typed job', async () => {
    const { job, created } = await client.enqueue('flaky', { failTimes: 2 });
    expectTypeOf(created).toEqualTypeOf<boolean>();
    expectTypeOf(job.type).toEqualTypeOf<'flaky'>();
    expectTypeOf(job.payload).toEqualTypeOf<{ failTimes: number }>();
    expectTypeOf(job.state).toEqualTypeOf<JobView['state']>();
    expectTypeOf(await client.get(job.id)).toEqualTypeOf<JobView>();
    for await (const summary of client.list()) expectTypeOf(summary).toEqualTypeOf<JobSummary>();
  });
});

describe('createClient<typeof catalog>() with literal-typed specs', () => {
  const client = createClient<typeof literalCatalog>({ url });
  const inferred = createClient({ url, jobs: literalCatalog });

  it('types payloads from the tuple, by each spec type', () => {
    client.enqueue('flaky', { failTimes: 2 });
    inferred.enqueue('flaky', { failTimes: 2 });
    // @ts-expect-error failTimes must be a number
    client.enqueue('flaky', { failTimes: 'x' });
    // @ts-expect-error failTimes must be a number (jobs inferred from the option)
    inferred.enqueue('flaky', { failTimes: 'x' });
    // @ts-expect-error no such job type
    client.enqueue('nope', {});
    expectTypeOf(client).toEqualTypeOf(inferred);
  });

  it('uses z.input for what enqueue takes and z.output for the returned payload', async () => {
    client.enqueue('with-default', { to: 'a' }); // `retries` has a default, so the input may omit it
    const { job } = await client.enqueue('with-default', { to: 'a', retries: 1 });
    expectTypeOf(job.payload).toEqualTypeOf<{ to: string; retries: number }>();
  });
});

describe('createClient<typeof catalog>() with functions/jobs/catalog.ts', () => {
  // `defineJobType` keeps the literal type name, so the real catalog checks like the tuple above.
  const client = createClient<typeof catalog>({ url });

  it('type-checks each payload against its own job type', () => {
    client.enqueue('flaky', { failTimes: 2 });
    client.enqueue('sleep', { ms: 1 });
    // @ts-expect-error failTimes must be a number
    client.enqueue('flaky', { failTimes: 'x' });
    // @ts-expect-error sleep takes { ms }, not flaky's payload
    client.enqueue('sleep', { failTimes: 1 });
    // @ts-expect-error no such job type in the catalog
    client.enqueue('nope', {});
  });
});

describe('createClient() without a catalog', () => {
  const client = createClient({ url });

  it('takes any type name and any JSON object', async () => {
    expectTypeOf(client).toEqualTypeOf<OrreryClient>();
    client.enqueue('anything', { a: 1 });
    // @ts-expect-error a payload is a JSON object
    client.enqueue('anything', 'text');
    // @ts-expect-error delaySeconds is a number
    client.enqueue('anything', {}, { delaySeconds: '5' });
    expectTypeOf(await client.enqueue('x', {})).toEqualTypeOf<
      EnqueueResult<
        Omit<JobView, 'type' | 'payload' | 'result'> & { type: 'x'; payload: Record<string, unknown>; result: unknown }
      >
    >();
  });
});
