/**
 * Jobs: the filtered listing (type, state, creation time, payload fields), all in the address
 * so a view can be shared; lookup by id; bulk retry or cancel of everything the filter matches.
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import {
  ApiError,
  api,
  type BulkAction,
  type BulkResult,
  isMissingRoute,
  JOB_STATES,
  type JobPage,
  type JobSummary,
  queryString,
  seg,
} from '../api';
import { ConfirmDialog, ErrorBox, IdLookup, JobLink, StateBadge, Time, TypeSelect, Writable } from '../components';
import { usePoll } from '../poll';
import { href, navigate, type Route } from '../router';
import { EventLookup } from './event';

/** Most jobs a bulk action or "load all" gathers. */
export const MAX_LISTED = 10_000;
const PAYLOAD_FILTERS = 3;
const BULK_CHUNK = 100;

/** The API's query for the route's filters (`payload.<path>=<value>` passed through). */
function listQuery(params: URLSearchParams): Record<string, string | undefined> {
  const query: Record<string, string | undefined> = {
    type: params.get('type') ?? undefined,
    state: params.get('state') ?? undefined,
    createdAfter: toIso(params.get('after')),
    createdBefore: toIso(params.get('before')),
  };
  for (const [key, value] of params) if (key.startsWith('payload.')) query[key] = value;
  return query;
}

/** `datetime-local` values are local times; the API wants ISO 8601 with an offset. */
function toIso(local: string | null): string | undefined {
  if (!local) return undefined;
  const date = new Date(local);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

async function listPage(params: URLSearchParams, cursor: string | undefined, limit = 100): Promise<JobPage> {
  return api<JobPage>('GET', `/jobs${queryString({ ...listQuery(params), limit, cursor })}`);
}

/** Every job the filter matches, following cursors (at most {@link MAX_LISTED}). */
async function listAll(params: URLSearchParams, onProgress: (n: number) => void): Promise<JobSummary[]> {
  const out: JobSummary[] = [];
  let cursor: string | undefined;
  do {
    const page = await listPage(params, cursor);
    out.push(...page.items);
    onProgress(out.length);
    cursor = page.nextCursor ?? undefined;
  } while (cursor && out.length < MAX_LISTED);
  return out.slice(0, MAX_LISTED);
}

/**
 * Applies `action` to `ids` with `POST /jobs/bulk`, 100 at a time; on an API without it,
 * one call per job.
 */
async function applyBulk(action: BulkAction, ids: string[], onProgress: (n: number) => void): Promise<BulkResult[]> {
  const results: BulkResult[] = [];
  let bulk = true;
  for (let i = 0; i < ids.length; i += BULK_CHUNK) {
    const chunk = ids.slice(i, i + BULK_CHUNK);
    if (bulk) {
      try {
        const answer = await api<{ results: BulkResult[] }>('POST', '/jobs/bulk', { action, ids: chunk });
        results.push(...answer.results);
        onProgress(results.length);
        continue;
      } catch (error) {
        if (!isMissingRoute(error)) throw error;
        bulk = false;
      }
    }
    for (const id of chunk) {
      try {
        const job = await api<JobSummary>('POST', `/jobs/${seg(id)}/${action}`);
        results.push({ id, status: 'applied', state: job.state });
      } catch (error) {
        if (!(error instanceof ApiError) || (error.status !== 409 && error.status !== 404)) throw error;
        results.push({ id, status: error.status === 404 ? 'not_found' : 'refused' });
      }
      onProgress(results.length);
    }
  }
  return results;
}

type Bulk =
  | { phase: 'counting'; action: BulkAction; found: number }
  | { phase: 'confirm'; action: BulkAction; ids: string[] }
  | { phase: 'applying'; action: BulkAction; done: number; total: number }
  | { phase: 'done'; action: BulkAction; results: BulkResult[] }
  | { phase: 'error'; action: BulkAction; error: unknown };

export function JobsView({ route }: { route: Route }) {
  const params = route.params;
  const filterKey = params.toString();
  const [pages, setPages] = useState<JobSummary[][]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [more, setMore] = useState<{ loading: boolean; error: unknown }>({ loading: false, error: undefined });
  const [find, setFind] = useState('');
  const [bulk, setBulk] = useState<Bulk | undefined>();

  // The first page is polled (live); later pages are loaded on request and kept.
  const first = usePoll(() => listPage(params, undefined), filterKey, { poll: pages.length <= 1 });
  useEffect(() => {
    if (first.data) {
      setPages((old) => (old.length <= 1 ? [first.data?.items ?? []] : old));
      setCursor((old) => (pages.length <= 1 ? (first.data?.nextCursor ?? null) : old));
    }
  }, [first.data]);
  useEffect(() => {
    setPages([]);
    setCursor(null);
    setFind('');
    setBulk(undefined);
  }, [filterKey]);

  const rows = useMemo(() => pages.flat(), [pages]);
  const needle = find.trim().toLowerCase();
  const shown = useMemo(
    () => (needle ? rows.filter((job) => job.id.toLowerCase().includes(needle)) : rows),
    [rows, needle],
  );

  async function loadMore(all: boolean) {
    setMore({ loading: true, error: undefined });
    try {
      let next = cursor;
      let total = rows.length;
      const added: JobSummary[][] = [];
      do {
        if (!next) break;
        const page = await listPage(params, next);
        added.push(page.items);
        total += page.items.length;
        next = page.nextCursor;
      } while (all && total < MAX_LISTED);
      setPages((old) => [...(old.length ? old : [[]]), ...added]);
      setCursor(next);
      setMore({ loading: false, error: undefined });
    } catch (error) {
      setMore({ loading: false, error });
    }
  }

  async function startBulk(action: BulkAction) {
    setBulk({ phase: 'counting', action, found: 0 });
    try {
      const all = await listAll(params, (found) => setBulk({ phase: 'counting', action, found }));
      setBulk({ phase: 'confirm', action, ids: all.map((job) => job.id) });
    } catch (error) {
      setBulk({ phase: 'error', action, error });
    }
  }

  async function confirmBulk(action: BulkAction, ids: string[]) {
    setBulk({ phase: 'applying', action, done: 0, total: ids.length });
    try {
      const results = await applyBulk(action, ids, (done) =>
        setBulk({ phase: 'applying', action, done, total: ids.length }),
      );
      setBulk({ phase: 'done', action, results });
      first.reload();
    } catch (error) {
      setBulk({ phase: 'error', action, error });
    }
  }

  return (
    <section aria-labelledby="jobs-title">
      <h1 id="jobs-title">Jobs</h1>
      <Lookup />
      <EventLookup />
      <Filters key={filterKey} params={params} />
      <ErrorBox error={first.error} what="could not list jobs" />
      <div class="toolbar">
        <label>
          Find in loaded rows{' '}
          <input
            type="search"
            value={find}
            onInput={(e) => setFind((e.target as HTMLInputElement).value)}
            placeholder="job id"
          />
        </label>
        <span class="muted" aria-live="polite" data-testid="row-count">
          {shown.length} of {rows.length} loaded{cursor ? ', more available' : ''}
        </span>
        <Writable>
          <button
            type="button"
            onClick={() => void startBulk('retry')}
            disabled={bulk?.phase === 'counting' || bulk?.phase === 'applying'}
          >
            Retry all matching…
          </button>
          <button
            type="button"
            onClick={() => void startBulk('cancel')}
            disabled={bulk?.phase === 'counting' || bulk?.phase === 'applying'}
          >
            Cancel all matching…
          </button>
        </Writable>
      </div>
      <BulkStatus bulk={bulk} onConfirm={confirmBulk} onClose={() => setBulk(undefined)} />
      {first.loading && rows.length === 0 ? <p aria-live="polite">Loading…</p> : null}
      {!first.loading && rows.length === 0 && !first.error ? <p>No jobs match these filters.</p> : null}
      {rows.length > 0 ? <JobTable jobs={shown} /> : null}
      <ErrorBox error={more.error} what="could not load more" />
      {cursor ? (
        <div class="toolbar">
          <button type="button" onClick={() => void loadMore(false)} disabled={more.loading}>
            Load more
          </button>
          <button type="button" onClick={() => void loadMore(true)} disabled={more.loading}>
            Load all (up to {MAX_LISTED.toLocaleString('en')})
          </button>
          {more.loading ? <span aria-live="polite">Loading…</span> : null}
        </div>
      ) : null}
    </section>
  );
}

function JobTable({ jobs }: { jobs: JobSummary[] }) {
  return (
    <div class="scroll">
      <table class="jobs">
        <caption class="sr-only">Jobs, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Id</th>
            <th scope="col">Type</th>
            <th scope="col">State</th>
            <th scope="col">Created</th>
            <th scope="col">Run at</th>
            <th scope="col" class="num">
              Attempts
            </th>
            <th scope="col">Finished</th>
          </tr>
        </thead>
        <tbody>
          {jobs.map((job) => (
            <tr key={job.id}>
              <td>
                <JobLink id={job.id} />
              </td>
              <td>{job.type}</td>
              <td>
                <StateBadge state={job.state} />
              </td>
              <td>
                <Time iso={job.createdAt} />
              </td>
              <td>
                <Time iso={job.runAt} />
              </td>
              <td class="num">{job.attempts}</td>
              <td>
                <Time iso={job.finishedAt} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function BulkStatus(props: {
  bulk: Bulk | undefined;
  onConfirm: (action: BulkAction, ids: string[]) => void;
  onClose: () => void;
}) {
  const { bulk } = props;
  if (!bulk) return null;
  const verb = bulk.action === 'retry' ? 'Retry' : 'Cancel';
  switch (bulk.phase) {
    case 'counting':
      return <p role="status">Listing the matching jobs… {bulk.found} so far</p>;
    case 'confirm':
      if (bulk.ids.length === 0) {
        return (
          <p role="status">
            No jobs match these filters.{' '}
            <button type="button" onClick={props.onClose}>
              Dismiss
            </button>
          </p>
        );
      }
      return (
        <ConfirmDialog
          title={`${verb} ${bulk.ids.length} ${bulk.ids.length === 1 ? 'job' : 'jobs'}?`}
          confirmLabel={`${verb} ${bulk.ids.length}`}
          onConfirm={() => props.onConfirm(bulk.action, bulk.ids)}
          onCancel={props.onClose}
        >
          <p>
            Every job the current filters match, as listed just now. Jobs whose state does not allow it
            {bulk.action === 'retry'
              ? ' (only held, failed, cancelled or expired jobs can be retried)'
              : ' (finished jobs cannot be cancelled)'}{' '}
            are left as they are.
          </p>
        </ConfirmDialog>
      );
    case 'applying':
      return (
        <p role="status">
          {verb}: {bulk.done} of {bulk.total}…
        </p>
      );
    case 'done': {
      const count = (status: string) => bulk.results.filter((r) => r.status === status).length;
      return (
        <p role="status" class="notice">
          {verb}: {count('applied')} applied, {count('refused')} refused (state did not allow it), {count('not_found')}{' '}
          not found{count('forbidden') > 0 ? `, ${count('forbidden')} forbidden (outside your grant)` : ''}.{' '}
          <button type="button" onClick={props.onClose}>
            Dismiss
          </button>
        </p>
      );
    }
    case 'error':
      return (
        <div>
          <ErrorBox error={bulk.error} what={`${verb} failed`} />
          <button type="button" onClick={props.onClose}>
            Dismiss
          </button>
        </div>
      );
  }
}

function Lookup() {
  return <IdLookup what="job" label="Job id" inputId="lookup-id" />;
}

/** The filter form; applying it changes the address (so the view can be shared and reloaded). */
function Filters({ params }: { params: URLSearchParams }) {
  const [type, setType] = useState(params.get('type') ?? '');
  const [state, setState] = useState(params.get('state') ?? '');
  const [after, setAfter] = useState(params.get('after') ?? '');
  const [before, setBefore] = useState(params.get('before') ?? '');
  const initial = [...params]
    .filter(([key]) => key.startsWith('payload.'))
    .map(([key, value]) => ({ path: key.slice(8), value }));
  const [payload, setPayload] = useState(
    Array.from({ length: PAYLOAD_FILTERS }, (_, i) => initial[i] ?? { path: '', value: '' }),
  );
  const setField = (i: number, field: 'path' | 'value', value: string) =>
    setPayload((old) => old.map((row, j) => (j === i ? { ...row, [field]: value } : row)));

  return (
    <form
      class="filters"
      aria-label="Filter jobs"
      onSubmit={(event) => {
        event.preventDefault();
        const next = new URLSearchParams();
        if (type) next.set('type', type);
        if (state) next.set('state', state);
        if (after) next.set('after', after);
        if (before) next.set('before', before);
        for (const row of payload) if (row.path.trim()) next.set(`payload.${row.path.trim()}`, row.value);
        navigate('/jobs', next);
      }}
    >
      <div class="field">
        <label for="filter-type">Type</label>
        <TypeSelect id="filter-type" value={type} onChange={setType} any="any type" />
      </div>
      <div class="field">
        <label for="filter-state">State</label>
        <select id="filter-state" value={state} onChange={(e) => setState((e.target as HTMLSelectElement).value)}>
          <option value="">any state</option>
          {JOB_STATES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="filter-after">Created after</label>
        <input
          id="filter-after"
          type="datetime-local"
          value={after}
          onInput={(e) => setAfter((e.target as HTMLInputElement).value)}
        />
      </div>
      <div class="field">
        <label for="filter-before">Created before</label>
        <input
          id="filter-before"
          type="datetime-local"
          value={before}
          onInput={(e) => setBefore((e.target as HTMLInputElement).value)}
        />
      </div>
      <fieldset class="payload">
        <legend>Payload fields (exact match)</legend>
        {payload.map((row, i) => (
          <div class="field-pair" key={i}>
            <label for={`payload-path-${i}`} class="sr-only">
              Payload field {i + 1}
            </label>
            <input
              id={`payload-path-${i}`}
              placeholder="field, e.g. customer.id"
              value={row.path}
              onInput={(e) => setField(i, 'path', (e.target as HTMLInputElement).value)}
            />
            <label for={`payload-value-${i}`} class="sr-only">
              Value of payload field {i + 1}
            </label>
            <input
              id={`payload-value-${i}`}
              placeholder="value"
              value={row.value}
              onInput={(e) => setField(i, 'value', (e.target as HTMLInputElement).value)}
            />
          </div>
        ))}
      </fieldset>
      <div class="actions">
        <button type="submit" class="primary">
          Apply filters
        </button>
        <a href={href('/jobs')}>Clear</a>
      </div>
    </form>
  );
}
