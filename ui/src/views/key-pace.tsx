/**
 * A key's throttle or rate limit in the keys view: the pace that holds, where it comes from and
 * the next start it allows (from `GET /types/{type}/keys/{key}`), and, unless read-only, a form
 * that sets one at run time in place of the spec's (`PUT /types/{type}/keys/{key}/limits`) or
 * removes it (`DELETE …/limits?field=throttle|rateLimit`). Shown only for a type whose spec has
 * one: the GET answers `throttle` or `rateLimit` only then, and the PUT refuses the others (400).
 */
import { useState } from 'preact/hooks';
import { api, fieldIssues, type KeyState, seg } from '../api';
import { ErrorBox, Source, Time, Writable } from '../components';
import { Line } from './line';

export type PaceKind = 'throttle' | 'rateLimit';
type Pace = NonNullable<KeyState['throttle']>;

const NAMES: Record<PaceKind, { title: string; noun: string; next: string }> = {
  throttle: { title: 'Throttle', noun: 'throttle', next: 'Next turn' },
  rateLimit: { title: 'Rate limit', noun: 'rate limit', next: 'Accepts again' },
};

/** `5 per 1 s, bursts of 5`. */
function paceText(limit: number, periodSeconds: number, burst?: number): string {
  return `${limit} per ${periodSeconds} s${burst === undefined ? '' : `, bursts of ${burst}`}`;
}

/** The key's throttle or rate limit (`what`), and the form that changes it. */
export function PacePanel(props: { type: string; what: PaceKind; pace: Pace; onChanged: () => void }) {
  const { what, pace } = props;
  const names = NAMES[what];
  return (
    <section aria-labelledby={`${what}-title`}>
      <h2 id={`${what}-title`}>{names.title}</h2>
      <dl class="facts">
        <dt>Key</dt>
        <dd class="mono">{pace.key}</dd>
        <dt>Holds</dt>
        <dd>{paceText(pace.limit, pace.periodSeconds, pace.burst)}</dd>
        <dt>Source</dt>
        <dd>
          <Source
            source={pace.source}
            setBy={pace.setBy}
            setAt={pace.setAt}
            spec={paceText(pace.specLimit, pace.specPeriodSeconds)}
          />
        </dd>
        {pace.line ? (
          <>
            <dt>In line</dt>
            <dd>
              <Line line={pace.line} waiting={pace.line.length} />
            </dd>
          </>
        ) : null}
        <dt>{names.next}</dt>
        <dd>
          {Date.parse(pace.nextStartAt) <= Date.now() ? (
            <time dateTime={pace.nextStartAt} title={pace.nextStartAt}>
              now
            </time>
          ) : (
            <Time iso={pace.nextStartAt} rel />
          )}
        </dd>
      </dl>
      <Writable>
        <PaceForm {...props} />
      </Writable>
    </section>
  );
}

const FIELDS = ['limit', 'periodSeconds', 'burst'] as const;
type Field = (typeof FIELDS)[number];

/**
 * Sets the pace for the key (the pace's own key: `*` for one without a key function) or removes
 * the run-time one. An empty field keeps the value that holds now. The API checks the values:
 * the browser's own checks are off (`noValidate`), so a bad value is answered with the API's 400,
 * shown beside the form with the field marked.
 */
function PaceForm(props: { type: string; what: PaceKind; pace: Pace; onChanged: () => void }) {
  const { type, what, pace } = props;
  const names = NAMES[what];
  const [values, setValues] = useState<Record<Field, string>>({ limit: '', periodSeconds: '', burst: '' });
  const [error, setError] = useState<unknown>(undefined);
  const [done, setDone] = useState('');
  const path = `/types/${seg(type)}/keys/${seg(pace.key)}/limits`;
  const send = async (message: string, run: () => Promise<unknown>) => {
    setError(undefined);
    setDone('');
    try {
      await run();
      setDone(message);
      props.onChanged();
    } catch (e) {
      setError(e);
    }
  };
  // a 400 names `throttle` (or `rateLimit`), its message the field within: `limit must be …`
  const issue = fieldIssues(error).find((i) => i.path === what);
  const bad = FIELDS.find((f) => issue?.message.startsWith(`${f} `));
  const errorId = `${what}-error`;
  const value = (field: Field, holds: number | undefined) =>
    values[field].trim() === '' ? holds : Number(values[field]);
  const input = (field: Field, label: string, holds: number, max: number) => (
    <div class="field">
      <label for={`${what}-${field}`}>
        {names.title} {label}
      </label>
      <input
        id={`${what}-${field}`}
        type="number"
        min={1}
        max={max}
        step={1}
        value={values[field]}
        placeholder={String(holds)}
        aria-invalid={bad === field || (issue !== undefined && bad === undefined) ? 'true' : undefined}
        aria-describedby={issue ? errorId : undefined}
        onInput={(e) => {
          const text = (e.target as HTMLInputElement).value;
          setValues((v) => ({ ...v, [field]: text }));
        }}
      />
    </div>
  );
  return (
    <form
      class="filters"
      aria-label={`Change this key's ${names.noun}`}
      noValidate
      onSubmit={(event) => {
        event.preventDefault();
        const body = {
          [what]: {
            limit: value('limit', pace.limit),
            periodSeconds: value('periodSeconds', pace.periodSeconds),
            ...(what === 'throttle' ? { burst: value('burst', pace.burst) } : {}),
          },
        };
        void send(`${names.title} set.`, () => api('PUT', path, body));
      }}
    >
      <p class="hint muted">Set at run time, in place of the spec's; an empty field keeps the value that holds.</p>
      {input('limit', 'limit', pace.limit, 10_000)}
      {input('periodSeconds', 'period (seconds)', pace.periodSeconds, 86_400)}
      {what === 'throttle' ? input('burst', 'burst', pace.burst ?? 1, 1000) : null}
      <div class="actions">
        <button type="submit" class="primary">
          Set {names.noun}
        </button>
        {pace.source === 'runtime' ? (
          <button
            type="button"
            onClick={() => void send(`Run-time ${names.noun} removed.`, () => api('DELETE', `${path}?field=${what}`))}
          >
            Remove run-time {names.noun}
          </button>
        ) : null}
      </div>
      {done ? <p role="status">{done}</p> : null}
      <ErrorBox error={error} what={`could not change the ${names.noun}`} id={errorId} />
    </form>
  );
}
