/** Recurring schedules: next fire times, pause and resume, run now. */
import { useState } from 'preact/hooks';
import { api, isMissingRoute, type JobSummary, queryString, type ScheduleView, seg } from '../api';
import { ErrorBox, Time, Who, Writable } from '../components';
import { usePoll } from '../poll';
import { href, type Route } from '../router';

/** The latest change's verb, as the state cell says who did it. */
const CHANGE_DONE: Record<NonNullable<ScheduleView['changedBy']>['action'], string> = {
  create: 'created',
  update: 'updated',
  pause: 'paused',
  resume: 'resumed',
};

async function listSchedules(): Promise<ScheduleView[]> {
  const out: ScheduleView[] = [];
  let cursor: string | undefined;
  do {
    const page = await api<{ schedules: ScheduleView[]; nextCursor: string | null }>(
      'GET',
      `/schedules${queryString({ limit: 100, cursor })}`,
    );
    out.push(...page.schedules);
    cursor = page.nextCursor ?? undefined;
  } while (cursor && out.length < 5_000);
  return out;
}

export function SchedulesView({ route }: { route: Route }) {
  const loaded = usePoll(listSchedules, 'schedules');
  const [message, setMessage] = useState<{ text?: string; link?: string; error?: unknown }>({});
  const highlight = route.params.get('name');

  async function act(schedule: ScheduleView, action: 'pause' | 'resume' | 'run') {
    setMessage({});
    try {
      if (action === 'run') {
        const answer = await api<{ job: JobSummary }>('POST', `/schedules/${seg(schedule.name)}/run`);
        setMessage({ text: `Started a run of ${schedule.name}: `, link: answer.job.id });
      } else {
        const after = await api<ScheduleView>('POST', `/schedules/${seg(schedule.name)}/${action}`);
        setMessage({ text: `${schedule.name} is ${after.state}.` });
      }
      loaded.reload();
    } catch (error) {
      setMessage({
        error:
          isMissingRoute(error) && action === 'run'
            ? new Error('this API cannot run a schedule now (an older deployment)')
            : error,
      });
    }
  }

  const schedules = loaded.data ?? [];
  return (
    <section aria-labelledby="schedules-title">
      <h1 id="schedules-title">Schedules</h1>
      <ErrorBox error={loaded.error} what="could not list schedules" />
      <div aria-live="polite">
        {message.text ? (
          <p role="status" class="notice">
            {message.text}
            {message.link ? <a href={href(`/jobs/${seg(message.link)}`)}>{message.link}</a> : null}
          </p>
        ) : null}
      </div>
      <ErrorBox error={message.error} />
      {loaded.data && schedules.length === 0 ? <p>No schedules.</p> : null}
      {schedules.length > 0 ? (
        <div class="scroll">
          <table class="schedules">
            <caption class="sr-only">Recurring schedules</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Type</th>
                <th scope="col">When</th>
                <th scope="col">State</th>
                <th scope="col">Next fire</th>
                <th scope="col">Last fire</th>
                <th scope="col">Last run</th>
                <th scope="col" class="num">
                  Skipped / missed
                </th>
                {/* the actions column is empty in read-only mode */}
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {schedules.map((s) => (
                <tr key={s.name} class={s.name === highlight ? 'highlight' : ''} data-schedule={s.name}>
                  <th scope="row" class="mono">
                    {s.name}
                  </th>
                  <td>
                    <a href={href('/jobs', { type: s.type })}>{s.type}</a>
                  </td>
                  <td>
                    <code>{s.cron ?? s.rate ?? s.expression}</code> <span class="muted small">{s.timezone}</span>
                  </td>
                  <td>
                    <span class={`badge badge-${s.state}`}>{s.state}</span>
                    {s.changedBy ? (
                      <span class="muted small changed-by">
                        {' '}
                        {CHANGE_DONE[s.changedBy.action]} by <Who arn={s.changedBy.by} />{' '}
                        <Time iso={s.changedBy.at} rel />
                      </span>
                    ) : null}
                  </td>
                  <td class="next-fire">
                    <Time iso={s.nextFireAt} rel />
                  </td>
                  <td>
                    <Time iso={s.lastFireAt} />
                  </td>
                  <td>
                    {s.lastRunId ? (
                      <a href={href(`/jobs/${seg(s.lastRunId)}`)}>{s.lastRunId}</a>
                    ) : (
                      <span class="muted">–</span>
                    )}
                  </td>
                  <td class="num">
                    {s.skipped.count} / {s.missed}
                  </td>
                  <td class="row-actions">
                    <Writable>
                      {s.state === 'enabled' ? (
                        <button type="button" onClick={() => void act(s, 'pause')}>
                          Pause<span class="sr-only"> {s.name}</span>
                        </button>
                      ) : (
                        <button type="button" onClick={() => void act(s, 'resume')}>
                          Resume<span class="sr-only"> {s.name}</span>
                        </button>
                      )}
                      <button type="button" onClick={() => void act(s, 'run')}>
                        Run now<span class="sr-only"> {s.name}</span>
                      </button>
                    </Writable>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}
