/**
 * `GET /jobs/{id}/invoked`: the jobs a job started with `ctx.invoke`, and the state of each. The
 * invoking job's journal is what knows them (an `invoke#<name>` entry per invoke: the child's id
 * and its edge index, core/invoke.ts); the job's own view names only its `dependsOn` graph. Read
 * only: one read of the job, its journal (strongly consistent, in pages of 1 MB: one read unit
 * per 4 KB), and one read of each child on the page asked for.
 */
import * as z from 'zod';
import type { TypeScope } from '../core/access';
import type { Clock } from '../core/clock';
import { JOB_ID_PATTERN } from '../core/enqueue';
import type { InvokeStart } from '../core/invoke';
import { type Journal, journalScopeOf } from '../core/journal';
import type { JobStore } from '../core/ports';
import type { JobState } from '../core/states';
import { NotFoundError, ValidationError } from '../errors';
import { mapWithConcurrency } from './concurrency';
import { jobStateSchema } from './schemas';

/** Invoked jobs on one page of `GET /jobs/{id}/invoked`. */
export const INVOKED_PAGE_SIZE = 100;

/** Child reads in flight at once for one page. */
const READ_CONCURRENCY = 10;

export const invokedPageSchema = z
  .object({
    id: z.string().meta({ description: 'The invoking job' }),
    items: z
      .array(
        z
          .object({
            name: z.string().meta({ description: 'The invoke’s name (`ctx.invoke(name, …)`)' }),
            id: z.string().meta({ description: 'The invoked job' }),
            type: z.string().nullable().meta({ description: 'null when the job is no longer stored' }),
            state: jobStateSchema.nullable().meta({ description: 'null when the job is no longer stored' }),
          })
          .strict(),
      )
      .meta({ description: 'In the order the job invoked them, of the types the caller may read' }),
    nextCursor: z
      .string()
      .nullable()
      .meta({ description: 'Pass as `cursor` for the next page; null on the last page' }),
  })
  .strict();

/** A job's page of invoked jobs. */
export type InvokedPage = z.output<typeof invokedPageSchema>;

export interface InvokedServiceDeps {
  store: JobStore;
  journal: Journal;
  clock: Clock;
}

export class InvokedService {
  constructor(private readonly deps: InvokedServiceDeps) {}

  /**
   * The jobs `id` invoked, {@link INVOKED_PAGE_SIZE} a page from `cursor` (an offset, as a previous
   * page gave it), and their states. A child of a type outside `scope` is left out of its page.
   * 404 `job_not_found` when the job is not stored.
   */
  async list(id: string, scope: TypeScope, cursor?: string): Promise<{ type: string; page: InvokedPage }> {
    if (!JOB_ID_PATTERN.test(id)) throw new NotFoundError(`job ${JSON.stringify(id)} not found`, 'job_not_found');
    const offset = cursor === undefined || cursor === '' ? 0 : /^\d{1,6}$/.test(cursor) ? Number(cursor) : Number.NaN;
    if (Number.isNaN(offset)) {
      throw new ValidationError('invalid cursor', [{ path: 'cursor', message: 'must be a cursor a page gave' }]);
    }
    const job = await this.deps.store.get(id);
    if (!job || (job.expiresAt !== undefined && job.expiresAt * 1000 < this.deps.clock.now())) {
      throw new NotFoundError(`job ${id} not found`, 'job_not_found');
    }
    // after a rerun, the series it started: the invokes it kept and those made since
    const entries = await this.deps.journal.load(journalScopeOf(job));
    const starts: { name: string; start: InvokeStart }[] = [];
    for (const [key, entry] of entries) {
      if (key.startsWith('invoke#'))
        starts.push({ name: key.slice('invoke#'.length), start: entry.value as InvokeStart });
    }
    starts.sort((a, b) => a.start.index - b.start.index);
    const slice = starts.slice(offset, offset + INVOKED_PAGE_SIZE);
    const items = await mapWithConcurrency(slice, READ_CONCURRENCY, async ({ name, start }) => {
      const child = await this.deps.store.get(start.id);
      return {
        name,
        id: start.id,
        type: child?.type ?? null,
        state: (child?.state ?? null) as JobState | null,
      };
    });
    const visible = items.filter(
      (item) => item.type === null || scope.kind === 'all' || (scope.kind === 'some' && scope.types.has(item.type)),
    );
    const next = offset + INVOKED_PAGE_SIZE;
    return {
      type: job.type,
      page: { id, items: visible, nextCursor: next < starts.length ? String(next) : null },
    };
  }
}
