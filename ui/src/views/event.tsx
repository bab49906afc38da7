/** An event's page: the jobs it made (`GET /events/{id}`), each with its state; and the form that opens one by id. */
import { ApiError, api, type EventJobs, seg } from '../api';
import { ErrorBox, IdLookup, JobLink, StateBadge, Time } from '../components';
import { usePoll } from '../poll';
import { href } from '../router';

/** The form that opens an event's page by its id (the id given at `POST /events`, or the one it answered). */
export function EventLookup({ initial = '' }: { initial?: string }) {
  return <IdLookup what="event" label="Event id" inputId="lookup-event" initial={initial} />;
}

export function EventView({ id }: { id: string | undefined }) {
  return (
    <section aria-labelledby="event-title">
      <p>
        <a href={href('/jobs')}>← Jobs</a>
      </p>
      <h1 id="event-title">
        {id ? (
          <>
            Event <span class="mono">{id}</span>
          </>
        ) : (
          'Events'
        )}
      </h1>
      <EventLookup key={id ?? ''} initial={id ?? ''} />
      {id ? (
        <EventJobsTable id={id} />
      ) : (
        <p class="muted">An event makes one job per job type that subscribes to it. Enter its id to see them.</p>
      )}
    </section>
  );
}

function EventJobsTable({ id }: { id: string }) {
  const loaded = usePoll(() => api<EventJobs>('GET', `/events/${seg(id)}`), `event:${id}`);
  const notFound = loaded.error instanceof ApiError && loaded.error.status === 404;
  const found = loaded.data;
  return (
    <>
      {notFound ? (
        <p role="alert" class="error">
          No event {id}: no job it made exists (never sent, no subscriber took it, or its jobs are past the retention).
        </p>
      ) : (
        <ErrorBox error={loaded.error} what="could not load the event" />
      )}
      {!found && loaded.loading ? <p aria-live="polite">Loading…</p> : null}
      {found ? (
        <div class="scroll">
          <table class="jobs">
            <caption>Jobs the event made</caption>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Type</th>
                <th scope="col">Job</th>
                <th scope="col">State</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {found.jobs.map((job) => (
                <tr key={job.id}>
                  <td>{job.name}</td>
                  <td>
                    <a href={href('/jobs', { type: job.type })}>{job.type}</a>
                  </td>
                  <td>
                    <JobLink id={job.id} />
                  </td>
                  <td>
                    <StateBadge state={job.state} />
                  </td>
                  <td>
                    <Time iso={job.createdAt} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </>
  );
}
