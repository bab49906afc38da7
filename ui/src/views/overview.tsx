/** Overview: per job type, counts by state, throughput and failures over the last hour, DLQ depth, oldest queued job. */
import { api, isMissingRoute, JOB_STATES, type JobPage, type Overview, type OverviewType } from '../api';
import { ErrorBox, formatDuration, Time } from '../components';
import { usePoll } from '../poll';
import { href } from '../router';

const WINDOW_MINUTES = 60;

type Loaded = { kind: 'overview'; overview: Overview } | { kind: 'fallback'; page: JobPage };

async function loadOverview(): Promise<Loaded> {
  try {
    return { kind: 'overview', overview: await api<Overview>('GET', `/overview?windowMinutes=${WINDOW_MINUTES}`) };
  } catch (error) {
    if (!isMissingRoute(error)) throw error;
    return { kind: 'fallback', page: await api<JobPage>('GET', '/jobs?limit=100') };
  }
}

/** Bars per time bucket: succeeded (up) and failed (down, red), scaled to the busiest bucket. */
function Throughput({ row, bucketMs }: { row: OverviewType; bucketMs: number }) {
  const series = row.series;
  const succeeded = series.reduce((n, b) => n + b.succeeded, 0);
  const failed = series.reduce((n, b) => n + b.failed, 0);
  const created = series.reduce((n, b) => n + b.created, 0);
  const rate = succeeded + failed === 0 ? 0 : failed / (succeeded + failed);
  const max = Math.max(1, ...series.map((b) => Math.max(b.succeeded, b.failed, b.created)));
  const width = 180;
  const height = 36;
  const step = series.length ? width / series.length : width;
  const label = `last ${WINDOW_MINUTES} min in ${formatDuration(bucketMs)} buckets: ${created} created, ${succeeded} succeeded, ${failed} failed`;
  return (
    <div class="throughput">
      <svg width={width} height={height} viewBox={`0 0 ${width} ${height}`} role="img" aria-label={label}>
        <title>{label}</title>
        <line x1="0" x2={width} y1={height / 2} y2={height / 2} class="axis" />
        {series.map((b, i) => {
          const up = ((height / 2 - 1) * b.succeeded) / max;
          const down = ((height / 2 - 1) * b.failed) / max;
          return (
            <g key={b.start}>
              {up > 0 ? (
                <rect class="ok" x={i * step} y={height / 2 - up} width={Math.max(1, step - 1)} height={up} />
              ) : null}
              {down > 0 ? (
                <rect class="bad" x={i * step} y={height / 2} width={Math.max(1, step - 1)} height={down} />
              ) : null}
            </g>
          );
        })}
      </svg>
      <span class="figures">
        {succeeded} ok · {failed} failed · <strong>{(rate * 100).toFixed(1)}%</strong> failure
      </span>
    </div>
  );
}

const SHOWN_STATES = JOB_STATES;

export function OverviewView() {
  const loaded = usePoll(loadOverview, 'overview');
  const data = loaded.data;
  return (
    <section aria-labelledby="overview-title">
      <h1 id="overview-title">Overview</h1>
      <ErrorBox error={loaded.error} what="could not load the overview" />
      {!data && loaded.loading ? <p aria-live="polite">Loading…</p> : null}
      {data?.kind === 'overview' ? <OverviewTable overview={data.overview} /> : null}
      {data?.kind === 'fallback' ? <Fallback page={data.page} /> : null}
    </section>
  );
}

function OverviewTable({ overview }: { overview: Overview }) {
  return (
    <>
      <p class="muted">
        Jobs created since <Time iso={overview.windowStart} />, by their state as of <Time iso={overview.generatedAt} />
        ; DLQ depth and the oldest queued job now.
      </p>
      <div class="scroll">
        <table class="overview">
          <caption class="sr-only">Jobs per type and state</caption>
          <thead>
            <tr>
              <th scope="col">Type</th>
              {SHOWN_STATES.map((state) => (
                <th scope="col" key={state} class="num">
                  {state}
                </th>
              ))}
              <th scope="col" class="num">
                DLQ
              </th>
              <th scope="col">Oldest queued</th>
              <th scope="col">Last {WINDOW_MINUTES} min</th>
            </tr>
          </thead>
          <tbody>
            {overview.types.map((row) => (
              <tr key={row.type}>
                <th scope="row">
                  <a href={href('/jobs', { type: row.type })}>{row.type}</a>
                  {/truncated/.test(row.countsScope) ? <div class="muted small scope">{row.countsScope}</div> : null}
                </th>
                {SHOWN_STATES.map((state) => {
                  const count = row.counts[state] ?? 0;
                  return (
                    <td key={state} class={`num${count === 0 ? ' muted' : ''}`}>
                      {count > 0 ? (
                        <a
                          href={href('/jobs', { type: row.type, state })}
                          aria-label={`${count} ${state} ${row.type} jobs`}
                        >
                          {count}
                        </a>
                      ) : (
                        '0'
                      )}
                    </td>
                  );
                })}
                <td class="num">
                  {row.dlqDepth === null ? (
                    <span class="muted">–</span>
                  ) : (
                    <a
                      class={row.dlqDepth > 0 ? 'warn' : ''}
                      href={href('/dlq', { type: row.type })}
                      aria-label={`${row.dlqDepth} messages in the ${row.type} DLQ`}
                    >
                      {row.dlqDepth}
                    </a>
                  )}
                </td>
                <td>
                  {row.oldestQueuedAgeMs === null ? (
                    <span class="muted">none</span>
                  ) : (
                    formatDuration(row.oldestQueuedAgeMs)
                  )}
                </td>
                <td>
                  <Throughput row={row} bucketMs={overview.bucketMs} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

/** An API without `GET /overview`: what the newest 100 jobs show. */
function Fallback({ page }: { page: JobPage }) {
  const byType = new Map<string, Record<string, number>>();
  for (const job of page.items) {
    const counts = byType.get(job.type) ?? {};
    counts[job.state] = (counts[job.state] ?? 0) + 1;
    byType.set(job.type, counts);
  }
  return (
    <>
      <p class="notice" role="status">
        This API has no <code>GET /overview</code> (an older deployment): counts below are of the newest{' '}
        {page.items.length} jobs only; throughput, DLQ depth and queue age need the newer API.
      </p>
      <table>
        <caption class="sr-only">States of the newest jobs per type</caption>
        <thead>
          <tr>
            <th scope="col">Type</th>
            {SHOWN_STATES.map((state) => (
              <th scope="col" class="num" key={state}>
                {state}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {[...byType].map(([type, counts]) => (
            <tr key={type}>
              <th scope="row">
                <a href={href('/jobs', { type })}>{type}</a>
              </th>
              {SHOWN_STATES.map((state) => (
                <td class="num" key={state}>
                  {counts[state] ?? 0}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
