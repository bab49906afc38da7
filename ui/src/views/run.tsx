/**
 * A job's run (`GET /jobs/{id}/timeline`): each attempt, and within it each step (name, end,
 * estimated duration, result size and preview), sleep, signal or event wait and invoke, in the
 * order the journal recorded them; and "Rerun from here" on each step (`POST /jobs/{id}/rerun`
 * with its `fromStep`), after a confirmation. Read-only mode hides the button.
 */
import { useState } from 'preact/hooks';
import {
  api,
  config,
  isMissingRoute,
  type JobView,
  queryString,
  RERUNNABLE,
  seg,
  type Timeline,
  type TimelineEntry,
} from '../api';
import { ConfirmDialog, ErrorBox, formatDuration, JobLink, StateBadge, Time, Writable } from '../components';
import { usePoll } from '../poll';

/** `312 B`, `4.1 KB`. */
function formatBytes(bytes: number): string {
  return bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(1)} KB`;
}

/**
 * Only while the job may still record entries is the run polled; otherwise it is read again when
 * the job changes. A held job records none until an operator acts.
 */
const ENDED = ['held', 'succeeded', 'failed', 'cancelled', 'expired', 'skipped'];

export function RunTimeline({ job, onChanged }: { job: JobView; onChanged: () => void }) {
  const [loaded, setLoaded] = useState<
    { series: string | null; entries: TimelineEntry[]; cursor: string | null } | undefined
  >();
  const [moreError, setMoreError] = useState<unknown>();
  const [rerunFrom, setRerunFrom] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  const [rerunError, setRerunError] = useState<unknown>();
  const [done, setDone] = useState<string | undefined>();
  const first = usePoll(
    () => api<Timeline>('GET', `/jobs/${seg(job.id)}/timeline`),
    `timeline:${job.id}:${job.updatedAt}`,
    { poll: !ENDED.includes(job.state) },
  );
  if (first.error && isMissingRoute(first.error)) return null;
  const timeline = first.data;
  // later pages read of another series (a rerun made elsewhere since) are not this run's
  const more = loaded && timeline && loaded.series === timeline.series ? loaded : undefined;
  const entries = [...(timeline?.entries ?? []), ...(more?.entries ?? [])];
  const cursor = more ? more.cursor : (timeline?.nextCursor ?? null);
  const canRerun = RERUNNABLE.includes(job.state) && !busy;

  async function loadMore() {
    if (!cursor) return;
    setMoreError(undefined);
    try {
      const page = await api<Timeline>('GET', `/jobs/${seg(job.id)}/timeline${queryString({ cursor })}`);
      setLoaded({ series: page.series, entries: [...(more?.entries ?? []), ...page.entries], cursor: page.nextCursor });
    } catch (e) {
      setMoreError(e);
    }
  }

  async function rerun(step: string) {
    setRerunFrom(undefined);
    setBusy(true);
    setRerunError(undefined);
    try {
      const after = await api<JobView>('POST', `/jobs/${seg(job.id)}/rerun`, { fromStep: step });
      setDone(`Rerun from step ${step}: the job is ${after.state}.`);
      setLoaded(undefined);
      onChanged();
    } catch (e) {
      setRerunError(e);
    } finally {
      setBusy(false);
    }
  }

  const attempts = timeline?.attempts ?? [];
  const groups: { key: string; title: string; outcome?: string; entries: TimelineEntry[]; attempt?: number }[] =
    attempts.map((attempt, i) => ({
      key: `attempt-${i}`,
      title: `Attempt ${attempt.attempt}`,
      outcome: attempt.outcome,
      attempt: i,
      entries: entries.filter((e) => e.attempt === i),
    }));
  const unplaced = entries.filter((e) => e.attempt === null);
  if (unplaced.length > 0) groups.unshift({ key: 'unplaced', title: 'Recorded entries', entries: unplaced });

  return (
    <section aria-labelledby="run-title" class="run">
      <h2 id="run-title">Run</h2>
      <ErrorBox error={first.error} what="could not load the run" />
      {!timeline && first.loading ? <p aria-live="polite">Loading the run…</p> : null}
      {done ? (
        <p role="status" class="notice">
          {done}
        </p>
      ) : null}
      <ErrorBox error={rerunError} what="could not rerun the job" />
      {timeline && entries.length === 0 && attempts.length === 0 ? <p class="muted">Nothing recorded yet.</p> : null}
      {timeline?.series ? (
        <p class="muted small">
          Journal series <code>{timeline.series}</code> (the last rerun's): entries a rerun dropped are not shown.
        </p>
      ) : null}
      {groups.map((group) => (
        <section key={group.key} class="attempt" aria-labelledby={`run-${group.key}`}>
          <h3 id={`run-${group.key}`}>
            {group.title} {group.outcome ? <StateBadge state={group.outcome} /> : null}
          </h3>
          {group.attempt !== undefined ? <AttemptFacts attempt={attempts[group.attempt]} /> : null}
          {group.entries.length === 0 ? (
            <p class="muted small">No step, sleep, wait or invoke recorded in this attempt.</p>
          ) : (
            <ol class="run-entries" aria-label={`${group.title} entries`}>
              {group.entries.map((entry) => (
                <li key={`${entry.kind}-${entry.name}`} class={`run-entry run-${entry.kind}`}>
                  <Entry entry={entry} />
                  {entry.kind === 'step' && !config.readOnly ? (
                    <Writable>
                      {' '}
                      <button
                        type="button"
                        class="small"
                        disabled={!canRerun}
                        aria-label={`Rerun from here (step ${entry.name})`}
                        onClick={() => setRerunFrom(entry.name)}
                      >
                        Rerun from here
                      </button>
                    </Writable>
                  ) : null}
                </li>
              ))}
            </ol>
          )}
        </section>
      ))}
      {cursor ? (
        <button type="button" onClick={() => void loadMore()}>
          Show more of the run
        </button>
      ) : null}
      <ErrorBox error={moreError} what="could not load more of the run" />
      {rerunFrom !== undefined ? (
        <ConfirmDialog
          title={`Rerun the job from step ${rerunFrom}?`}
          confirmLabel="Rerun from this step"
          onConfirm={() => void rerun(rerunFrom)}
          onCancel={() => setRerunFrom(undefined)}
        >
          <p>
            The entries recorded before <code>{rerunFrom}</code> are kept and not run again; <code>{rerunFrom}</code>{' '}
            and every step, sleep, wait and invoke recorded after it run again, on a new series of the job's journal.
          </p>
        </ConfirmDialog>
      ) : null}
    </section>
  );
}

function AttemptFacts({ attempt }: { attempt: Timeline['attempts'][number] | undefined }) {
  if (!attempt) return null;
  return (
    <p class="small">
      {attempt.startedAt ? (
        <>
          its last run started <Time iso={attempt.startedAt} />
          {attempt.endedAt ? ', ' : ''}
        </>
      ) : null}
      {attempt.endedAt ? (
        <>
          ended <Time iso={attempt.endedAt} />
        </>
      ) : null}
      {attempt.error ? (
        <>
          {' '}
          ({attempt.error.reason}):{' '}
          <strong class="error-text">
            {attempt.error.name}: {attempt.error.message}
          </strong>
        </>
      ) : null}
    </p>
  );
}

function Entry({ entry }: { entry: TimelineEntry }) {
  switch (entry.kind) {
    case 'step':
      return (
        <>
          <span class="run-kind">Step</span> <strong>{entry.name}</strong>: ended <Time iso={entry.at} />
          {entry.durationMs !== null ? `, took about ${formatDuration(entry.durationMs)}` : ''}, result{' '}
          {formatBytes(entry.bytes)} <code class="preview">{entry.preview}</code>
        </>
      );
    case 'sleep':
      return (
        <>
          <span class="run-kind">Sleep</span> <strong>{entry.name}</strong>: from <Time iso={entry.at} /> until{' '}
          <Time iso={entry.until} />, {entry.woke ? 'woke at its time' : 'sleeping'}
        </>
      );
    case 'wait':
      return (
        <>
          <span class="run-kind">{entry.event ? 'Event wait' : 'Signal wait'}</span> <strong>{entry.name}</strong>: from{' '}
          <Time iso={entry.at} />
          {entry.until ? (
            <>
              {' '}
              until <Time iso={entry.until} />
            </>
          ) : null}
          ,{' '}
          {entry.wokenBy === null ? (
            'waiting'
          ) : (
            <>
              woken by {entry.wokenBy === 'timeout' ? 'its timeout' : `the ${entry.wokenBy}`} at{' '}
              <Time iso={entry.endedAt} />
            </>
          )}
          {entry.preview !== null ? (
            <>
              {' '}
              <code class="preview">{entry.preview}</code>
            </>
          ) : null}
        </>
      );
    case 'invoke':
      return (
        <>
          <span class="run-kind">Invoke</span> <strong>{entry.name}</strong>: started <Time iso={entry.at} /> child{' '}
          <JobLink id={entry.child.id} /> {entry.child.type ? <code>{entry.child.type}</code> : null}{' '}
          {entry.child.state ? <StateBadge state={entry.child.state} /> : <span class="muted">no longer stored</span>}
          {entry.endedAt ? (
            <>
              , ended {entry.outcome ?? ''} at <Time iso={entry.endedAt} />
            </>
          ) : (
            ', running'
          )}
        </>
      );
  }
}
