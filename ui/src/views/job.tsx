/** Job detail: payload, result and progress; the attempts' timeline with errors and stacks; retry and cancel. */
import { useState } from 'preact/hooks';
import {
  ApiError,
  api,
  CANCELLABLE,
  config,
  type InvokedJob,
  type InvokedPage,
  isEventJobId,
  isMissingRoute,
  type JobView,
  type OperatorAction,
  queryString,
  RETRYABLE,
  seg,
} from '../api';
import { ConfirmDialog, ErrorBox, formatDuration, JobLink, Json, StateBadge, Time, Who, Writable } from '../components';
import { usePoll } from '../poll';
import { href } from '../router';
import { RunTimeline } from './run';

export function JobDetailView({ id }: { id: string }) {
  const loaded = usePoll(() => api<JobView>('GET', `/jobs/${seg(id)}`), `job:${id}`);
  const job = loaded.data;
  const notFound = loaded.error instanceof ApiError && loaded.error.status === 404;
  return (
    <section aria-labelledby="job-title">
      <p>
        <a href={href('/jobs')}>← Jobs</a>
      </p>
      <h1 id="job-title">
        Job <span class="mono">{id}</span> {job ? <StateBadge state={job.state} /> : null}
      </h1>
      {notFound ? (
        <p role="alert" class="error">
          No job {id}: it never existed, or it finished longer ago than the retention.
        </p>
      ) : (
        <ErrorBox error={loaded.error} what="could not load the job" />
      )}
      {!job && loaded.loading ? <p aria-live="polite">Loading…</p> : null}
      {job ? <JobDetail job={job} onChanged={loaded.reload} /> : null}
    </section>
  );
}

function Actions({ job, onChanged }: { job: JobView; onChanged: () => void }) {
  const [pending, setPending] = useState<'retry' | 'cancel' | undefined>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState<string | undefined>();
  async function run(action: 'retry' | 'cancel') {
    setPending(undefined);
    setBusy(true);
    setError(undefined);
    try {
      const after = await api<JobView>('POST', `/jobs/${seg(job.id)}/${action}`);
      setDone(action === 'retry' ? `Retried: the job is ${after.state}.` : `Cancelled: the job is ${after.state}.`);
      onChanged();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  }
  if (config.readOnly) return <p class="muted">Read-only: retry, cancel and rerun are off.</p>;
  return (
    <div class="toolbar">
      <Writable>
        <button
          type="button"
          class="primary"
          disabled={busy || !RETRYABLE.includes(job.state)}
          onClick={() => void run('retry')}
        >
          Retry
        </button>
        <button type="button" disabled={busy || !CANCELLABLE.includes(job.state)} onClick={() => setPending('cancel')}>
          Cancel…
        </button>
      </Writable>
      {done ? <span role="status">{done}</span> : null}
      <ErrorBox error={error} />
      {pending === 'cancel' ? (
        <ConfirmDialog
          title="Cancel 1 job?"
          confirmLabel="Cancel the job"
          onConfirm={() => void run('cancel')}
          onCancel={() => setPending(undefined)}
        >
          <p>A running job's handler is told to stop (its signal aborts at the next heartbeat); it is not retried.</p>
        </ConfirmDialog>
      ) : null}
    </div>
  );
}

function JobDetail({ job, onChanged }: { job: JobView; onChanged: () => void }) {
  const runTime =
    job.startedAt && job.finishedAt ? new Date(job.finishedAt).getTime() - new Date(job.startedAt).getTime() : null;
  const keys: { label: string; key: string }[] = [
    ...(job.concurrencyKeys ?? []).map((key, i) => ({ label: `concurrency limit ${i + 1}`, key })),
    ...(job.singletonKey ? [{ label: 'singleton', key: job.singletonKey }] : []),
    ...(job.throttleKey ? [{ label: 'throttle', key: job.throttleKey }] : []),
    ...(job.debounceKey ? [{ label: 'debounce', key: job.debounceKey }] : []),
  ];
  // the registry also names the jobs that invoked this one (their edge): those are shown as such
  const dependents = (job.children ?? []).filter((child) => !job.invokedBy?.includes(child));
  return (
    <>
      <Actions job={job} onChanged={onChanged} />
      {job.state === 'held' ? (
        <p class="notice" role="note">
          Held for an operator: its replay no longer matches its journal (the code changed under this run; the attempt's
          error below names the entry and both versions). Retry it once the code matches again, rerun it from a step, or
          cancel it. Nothing runs it until then, and its dependants wait.
        </p>
      ) : null}
      <div class="grid">
        <dl class="facts">
          <dt>Type</dt>
          <dd>
            <a href={href('/jobs', { type: job.type })}>{job.type}</a>
          </dd>
          <dt>Attempts</dt>
          <dd>
            {job.attempts} of {job.maxAttempts}
            {job.retries ? ` (${job.retries} manual ${job.retries === 1 ? 'retry' : 'retries'})` : ''}
          </dd>
          {job.priority !== undefined ? (
            <>
              <dt>Priority</dt>
              <dd>{job.priority} (0 to 10, higher first in its line)</dd>
            </>
          ) : null}
          <dt>Created</dt>
          <dd>
            <Time iso={job.createdAt} />
          </dd>
          {isEventJobId(job.id) ? (
            <>
              <dt>Made by</dt>
              <dd>
                an event (<code>POST /events</code>): <a href={href('/events')}>open the event by its id</a>
              </dd>
            </>
          ) : null}
          {job.enqueuedBy ? (
            <>
              <dt>Enqueued by</dt>
              <dd>
                <Who arn={job.enqueuedBy} />
              </dd>
            </>
          ) : null}
          <dt>Run at</dt>
          <dd>
            <Time iso={job.runAt} rel />
          </dd>
          <dt>Started</dt>
          <dd>
            <Time iso={job.startedAt} />
          </dd>
          {/* a held job's attempt ended when it was held: the job has not finished */}
          <dt>{job.state === 'held' ? 'Held since' : 'Finished'}</dt>
          <dd>
            <Time iso={job.finishedAt} />
          </dd>
          <dt>Run time</dt>
          <dd>{runTime === null ? <span class="muted">–</span> : formatDuration(runTime)}</dd>
          {job.schedule ? (
            <>
              <dt>Schedule</dt>
              <dd>
                <a href={href('/schedules', { name: job.schedule })}>{job.schedule}</a>
              </dd>
            </>
          ) : null}
          {job.dispatchBy ? (
            <>
              <dt>Dispatch by</dt>
              <dd>
                <Time iso={job.dispatchBy} rel />
              </dd>
            </>
          ) : null}
          {job.parents && job.parents.length > 0 ? (
            <>
              <dt>Parents</dt>
              <dd>
                {job.parents.map((parent, i) => (
                  <span key={parent.id}>
                    {i > 0 ? ', ' : ''}
                    <a href={href(`/jobs/${seg(parent.id)}`)}>{parent.id}</a>
                    {parent.onParentFailure === 'fail' ? '' : ` (if it fails: ${parent.onParentFailure})`}
                  </span>
                ))}
                {job.pendingParents ? ` (waiting for ${job.pendingParents})` : ''}
              </dd>
            </>
          ) : null}
          {job.invokedBy && job.invokedBy.length > 0 ? (
            <>
              <dt>Invoked by</dt>
              <dd>
                {job.invokedBy.map((parent, i) => (
                  <span key={parent}>
                    {i > 0 ? ', ' : ''}
                    <a href={href(`/jobs/${seg(parent)}`)}>{parent}</a>
                  </span>
                ))}{' '}
                (its end resumes the job that invoked it)
              </dd>
            </>
          ) : null}
          {dependents.length > 0 ? (
            <>
              <dt>Children</dt>
              <dd>
                {dependents.map((child, i) => (
                  <span key={child}>
                    {i > 0 ? ', ' : ''}
                    <a href={href(`/jobs/${seg(child)}`)}>{child}</a>
                  </span>
                ))}
              </dd>
            </>
          ) : null}
          {job.resumes ? (
            <>
              <dt>Waits</dt>
              <dd>
                {job.resumes} (sleeps, signal and event waits, invokes; each resumption replays its recorded steps)
              </dd>
            </>
          ) : null}
          {job.waitingFor ? (
            <>
              <dt>Waiting for</dt>
              {job.waitingFor.kind === 'sleep' || job.waitingFor.kind === 'signal' ? (
                <dd>
                  {job.waitingFor.kind === 'sleep' ? 'the end of its sleep' : 'the signal'}{' '}
                  <code>{job.waitingFor.key}</code> since <Time iso={job.waitingFor.since} />
                  {job.waitingFor.until ? (
                    <>
                      , {job.waitingFor.kind === 'sleep' ? 'wakes' : 'times out'}{' '}
                      <Time iso={job.waitingFor.until} rel />
                    </>
                  ) : null}
                </dd>
              ) : job.waitingFor.kind === 'invoke' ? (
                <dd>
                  the jobs it invoked (below), since <Time iso={job.waitingFor.since} />
                </dd>
              ) : (
                <dd>
                  {job.waitingFor.kind} key{' '}
                  <a href={href('/keys', { type: job.type, key: job.waitingFor.key })}>{job.waitingFor.key}</a> since{' '}
                  <Time iso={job.waitingFor.since} />
                </dd>
              )}
            </>
          ) : null}
          {job.skipReason ? (
            <>
              <dt>Skipped by</dt>
              <dd>
                {job.skipReason.kind} (key {job.skipReason.key})
                {job.skipReason.by ? (
                  <>
                    , see <a href={href(`/jobs/${seg(job.skipReason.by)}`)}>{job.skipReason.by}</a>
                  </>
                ) : null}
              </dd>
            </>
          ) : null}
          {keys.length > 0 ? (
            <>
              <dt>Flow-control keys</dt>
              <dd>
                <ul class="plain">
                  {keys.map(({ label, key }) => (
                    <li key={label}>
                      {label}: <a href={href('/keys', { type: job.type, key })}>{key}</a>
                    </li>
                  ))}
                </ul>
              </dd>
            </>
          ) : null}
          {job.cost ? (
            <>
              <dt>Cost</dt>
              <dd>
                {job.cost.requests} AWS requests, {job.cost.writeUnits} write units
              </dd>
            </>
          ) : null}
        </dl>
        <div>
          <h2>Progress</h2>
          {job.progress ? (
            <p>
              <progress max={100} value={job.progress.percent} aria-label="progress">
                {job.progress.percent}%
              </progress>{' '}
              {job.progress.percent}% {job.progress.detail ? `– ${job.progress.detail}` : ''} (
              <Time iso={job.progress.at} />)
            </p>
          ) : (
            <p class="muted">No progress reported.</p>
          )}
          <h2>Payload</h2>
          <Json value={job.payload} label="payload" />
          <h2>Result</h2>
          {job.result === undefined || job.result === null ? (
            <p class="muted">No result.</p>
          ) : (
            <Json value={job.result} label="result" />
          )}
        </div>
      </div>
      {job.resumes || job.waitingFor?.kind === 'invoke' ? <InvokedJobs job={job} /> : null}
      <RunTimeline job={job} onChanged={onChanged} />
      <h2>Timeline</h2>
      <Timeline job={job} />
    </>
  );
}

/** How a timeline entry names an operator action. */
const CONTROL_DONE: Record<OperatorAction['action'], string> = {
  cancel: 'cancelled',
  retry: 'retried',
  rerun: 'rerun',
};

type TimelineEntry =
  | { at: string; kind: 'error'; error: JobView['errors'][number] }
  | { at: string; kind: 'control'; control: OperatorAction };

function Timeline({ job }: { job: JobView }) {
  // failed attempts and operator actions, oldest first (a retry sits between the attempts it separates)
  const entries: TimelineEntry[] = [
    ...job.errors.map((error): TimelineEntry => ({ at: error.at, kind: 'error', error })),
    ...(job.controls ?? []).map((control): TimelineEntry => ({ at: control.at, kind: 'control', control })),
  ].sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
  return (
    <ol class="timeline" aria-label="attempts">
      <li>
        <Time iso={job.createdAt} /> created{job.schedule ? ` by schedule ${job.schedule}` : ''}
      </li>
      {entries.map((entry) =>
        entry.kind === 'control' ? (
          <li key={`control-${entry.control.action}-${entry.at}`} class="operator-action">
            {CONTROL_DONE[entry.control.action]} by <Who arn={entry.control.by} /> at <Time iso={entry.at} />
          </li>
        ) : (
          <li key={`${entry.error.attempt}-${entry.at}`} class="failed-attempt">
            <Time iso={entry.at} /> attempt {entry.error.attempt} failed ({entry.error.reason}):{' '}
            <strong class="error-text">
              {entry.error.name}: {entry.error.message}
            </strong>
            {entry.error.stack ? (
              <details>
                <summary>Stack</summary>
                <pre class="stack">{entry.error.stack}</pre>
              </details>
            ) : null}
          </li>
        ),
      )}
      {job.state === 'running' && job.startedAt ? (
        <li>
          <Time iso={job.startedAt} /> attempt {job.attempts} running
        </li>
      ) : null}
      {job.finishedAt ? (
        <li class={`end end-${job.state}`}>
          <Time iso={job.finishedAt} /> {job.state}
          {job.state === 'succeeded' ? ` on attempt ${job.attempts}` : ''}
        </li>
      ) : null}
    </ol>
  );
}

/**
 * The jobs this one started with `ctx.invoke` (`GET /jobs/{id}/invoked`, 100 a page): only for a
 * job that waited (an invoke ends the attempt until its children end), so a plain job costs no
 * journal read. Nothing is shown for a job that invoked none, or an API without the route.
 */
function InvokedJobs({ job }: { job: JobView }) {
  const [more, setMore] = useState<{ items: InvokedJob[]; cursor: string | null } | undefined>();
  const [moreError, setMoreError] = useState<unknown>();
  const first = usePoll(() => api<InvokedPage>('GET', `/jobs/${seg(job.id)}/invoked`), `invoked:${job.id}`);
  if (first.error && isMissingRoute(first.error)) return null;
  const items = [...(first.data?.items ?? []), ...(more?.items ?? [])];
  const cursor = more ? more.cursor : (first.data?.nextCursor ?? null);
  if (!first.error && items.length === 0) return null;
  async function loadMore() {
    if (!cursor) return;
    setMoreError(undefined);
    try {
      const page = await api<InvokedPage>('GET', `/jobs/${seg(job.id)}/invoked${queryString({ cursor })}`);
      setMore({ items: [...(more?.items ?? []), ...page.items], cursor: page.nextCursor });
    } catch (e) {
      setMoreError(e);
    }
  }
  return (
    <>
      <h2 id="invoked-title">Invoked jobs</h2>
      <ErrorBox error={first.error} what="could not list the invoked jobs" />
      <div class="scroll">
        <table class="jobs" aria-labelledby="invoked-title">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Job</th>
              <th scope="col">Type</th>
              <th scope="col">State</th>
            </tr>
          </thead>
          <tbody>
            {items.map((child) => (
              <tr key={child.id}>
                <td>{child.name}</td>
                <td>
                  <JobLink id={child.id} />
                </td>
                <td>{child.type ?? <span class="muted">–</span>}</td>
                <td>
                  {child.state ? <StateBadge state={child.state} /> : <span class="muted">no longer stored</span>}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {cursor ? (
        <button type="button" onClick={() => void loadMore()}>
          Show more
        </button>
      ) : null}
      <ErrorBox error={moreError} what="could not load more invoked jobs" />
    </>
  );
}
