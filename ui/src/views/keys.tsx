/**
 * Flow-control keys: who holds a key's slots, how many wait and in what order, where each limit
 * comes from (`GET /types/{type}/keys/{key}`); a type's fair keys and their shares
 * (`GET /types/{type}/keys`); and, unless read-only, a key's limit, weight, throttle and rate
 * limit set at run time (`PUT`/`DELETE /types/{type}/keys/{key}/limits`; the throttle and rate
 * limit in ./key-pace.tsx).
 */
import { useState } from 'preact/hooks';
import { ApiError, api, type KeyState, seg, type TypeKeys } from '../api';
import { ErrorBox, Json, Source, Time, TypeSelect, Writable } from '../components';
import { usePoll } from '../poll';
import { href, navigate, type Route } from '../router';
import { PacePanel } from './key-pace';
import { Line } from './line';

type LimitState = KeyState['limits'][number];
type Holder = LimitState['running'][number];

export function KeysView({ route }: { route: Route }) {
  const type = route.params.get('type') ?? '';
  const key = route.params.get('key') ?? '';
  const [formType, setFormType] = useState(type);
  const [formKey, setFormKey] = useState(key);
  return (
    <section aria-labelledby="keys-title">
      <h1 id="keys-title">Flow-control keys</h1>
      <form
        class="filters"
        aria-label="Look up a key"
        onSubmit={(event) => {
          event.preventDefault();
          navigate('/keys', { type: formType, key: formKey.trim() });
        }}
      >
        <div class="field">
          <label for="key-type">Job type</label>
          <TypeSelect id="key-type" value={formType} onChange={setFormType} any="choose a type" />
        </div>
        <div class="field">
          <label for="key-value">Key value</label>
          <input
            id="key-value"
            value={formKey}
            onInput={(e) => setFormKey((e.target as HTMLInputElement).value)}
            placeholder="e.g. t1, or * (empty: the type's keys)"
          />
        </div>
        <div class="actions">
          <button type="submit" class="primary">
            Show
          </button>
        </div>
      </form>
      {type && key ? <KeyPanel key={`${type}/${key}`} type={type} value={key} /> : null}
      {type && !key ? <TypeKeysPanel key={type} type={type} /> : null}
    </section>
  );
}

function Holders({ running }: { running: Holder[] }) {
  if (running.length === 0) return <span class="muted">none</span>;
  return (
    <ul class="plain">
      {running.map((h) => (
        <li key={h.jobId}>
          <a href={href(`/jobs/${seg(h.jobId)}`)}>{h.jobId}</a> since <Time iso={h.since} />
        </li>
      ))}
    </ul>
  );
}

function KeyPanel({ type, value }: { type: string; value: string }) {
  const loaded = usePoll(() => api<KeyState>('GET', `/types/${seg(type)}/keys/${seg(value)}`), `key:${type}:${value}`);
  const state = loaded.data;
  if (loaded.error instanceof ApiError && loaded.error.code === 'no_flow_control') {
    return (
      <p role="status">
        {type} has no flow control (no concurrency limit, singleton, throttle, rate limit or debounce).
      </p>
    );
  }
  const { type: _t, key: _k, limits = [], singleton, throttle, rateLimit, ...others } = state ?? ({} as KeyState);
  const fair = limits.find((l) => l.fair)?.fair;
  return (
    <>
      <ErrorBox error={loaded.error} what="could not read the key" />
      {state ? (
        <>
          {limits.length > 0 ? (
            <table>
              <caption>Concurrency limits</caption>
              <thead>
                <tr>
                  <th scope="col">Limit</th>
                  <th scope="col">Key</th>
                  <th scope="col">Source</th>
                  <th scope="col">Holding a slot</th>
                  <th scope="col" class="num">
                    Waiting
                  </th>
                  <th scope="col">Next in line</th>
                </tr>
              </thead>
              <tbody>
                {limits.map((l) => (
                  <tr key={l.index}>
                    <td>
                      #{l.index + 1}: {l.running.length} of {l.limit}
                    </td>
                    <td class="mono">{l.key}</td>
                    <td>
                      <Source source={l.source} setBy={l.setBy} setAt={l.setAt} spec={String(l.specLimit)} />
                    </td>
                    <td>
                      <Holders running={l.running} />
                    </td>
                    <td class="num">{l.waiting}</td>
                    <td>
                      <Line line={l.line} waiting={l.fair ? l.fair.waiting : l.waiting} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : null}
          {fair ? (
            <>
              <h2>Fair share</h2>
              <dl class="facts">
                <dt>Fair key</dt>
                <dd class="mono">{fair.key}</dd>
                <dt>Weight</dt>
                <dd>
                  {fair.weight}{' '}
                  <span class="muted">({fair.weightSource === 'runtime' ? 'set at run time' : 'spec'})</span>
                </dd>
                <dt>Running</dt>
                <dd>{fair.running}</dd>
                <dt>Waiting</dt>
                <dd>{fair.waiting}</dd>
              </dl>
            </>
          ) : null}
          {limits.length > 0 ? (
            <Writable>
              <LimitsForm type={type} value={value} state={state} onChanged={loaded.reload} />
            </Writable>
          ) : null}
          {singleton ? (
            <>
              <h2>Singleton</h2>
              <dl class="facts">
                <dt>Scope</dt>
                <dd>{singleton.scope}</dd>
                <dt>Mode</dt>
                <dd>{singleton.mode}</dd>
                <dt>Holder</dt>
                <dd>
                  <Holders running={singleton.running} />
                </dd>
                <dt>Waiting</dt>
                <dd>{singleton.waiting}</dd>
              </dl>
            </>
          ) : null}
          {throttle ? <PacePanel type={type} what="throttle" pace={throttle} onChanged={loaded.reload} /> : null}
          {rateLimit ? <PacePanel type={type} what="rateLimit" pace={rateLimit} onChanged={loaded.reload} /> : null}
          {Object.entries(others)
            .filter(([, v]) => v !== undefined)
            .map(([name, v]) => (
              <div key={name}>
                <h2>{name}</h2>
                <Json value={v} label={name} />
              </div>
            ))}
        </>
      ) : null}
    </>
  );
}

/** Sets or removes the key's concurrency limit (the first keyed one, or `*`'s) and, for a fair limit, its weight. */
function LimitsForm(props: { type: string; value: string; state: KeyState; onChanged: () => void }) {
  const { type, value, state } = props;
  const target = state.limits.find((l) => l.key === value && !l.fair) ?? undefined;
  const fair = state.limits.find((l) => l.fair);
  const [concurrency, setConcurrency] = useState('');
  const [weight, setWeight] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  const [done, setDone] = useState('');
  const path = `/types/${seg(type)}/keys/${seg(value)}/limits`;
  const send = async (what: string, run: () => Promise<unknown>) => {
    setError(undefined);
    setDone('');
    try {
      await run();
      setDone(what);
      props.onChanged();
    } catch (e) {
      setError(e);
    }
  };
  if (!target && !fair) return null;
  return (
    <form
      class="filters"
      aria-label="Change this key's limits"
      onSubmit={(event) => {
        event.preventDefault();
        const body = {
          ...(concurrency.trim() === '' ? {} : { concurrency: Number(concurrency), limit: target?.index }),
          ...(weight.trim() === '' ? {} : { weight: Number(weight) }),
        };
        void send('Limits set.', () => api('PUT', path, body));
      }}
    >
      <h2>Change at run time</h2>
      {target ? (
        <div class="field">
          <label for="set-concurrency">Concurrency limit #{target.index + 1}</label>
          <input
            id="set-concurrency"
            type="number"
            min={1}
            max={1000}
            value={concurrency}
            placeholder={String(target.limit)}
            onInput={(e) => setConcurrency((e.target as HTMLInputElement).value)}
          />
        </div>
      ) : null}
      {fair ? (
        <div class="field">
          <label for="set-weight">Weight in fair share</label>
          <input
            id="set-weight"
            type="number"
            min={0.001}
            max={1000}
            step="any"
            value={weight}
            placeholder={String(fair.fair?.weight ?? 1)}
            onInput={(e) => setWeight((e.target as HTMLInputElement).value)}
          />
        </div>
      ) : null}
      <div class="actions">
        <button type="submit" class="primary">
          Set
        </button>
        {target?.source === 'runtime' ? (
          <button
            type="button"
            onClick={() => void send('Run-time limit removed.', () => api('DELETE', `${path}?limit=${target.index}`))}
          >
            Remove run-time limit
          </button>
        ) : null}
        {fair?.fair?.weightSource === 'runtime' ? (
          <button
            type="button"
            onClick={() => void send('Weight removed.', () => api('DELETE', `${path}?field=weight`))}
          >
            Remove weight
          </button>
        ) : null}
      </div>
      {done ? <p role="status">{done}</p> : null}
      <ErrorBox error={error} what="could not change the limits" />
    </form>
  );
}

/** A type's keys that one read lists: each unkeyed limit, and a fair limit's keys with their shares. */
function TypeKeysPanel({ type }: { type: string }) {
  const loaded = usePoll(() => api<TypeKeys>('GET', `/types/${seg(type)}/keys`), `type-keys:${type}`);
  const limits = loaded.data?.limits ?? [];
  return (
    <>
      <ErrorBox error={loaded.error} what="could not list the type's keys" />
      {loaded.data && limits.length === 0 ? <p role="status">{type} has no concurrency limit.</p> : null}
      {limits.map((l) =>
        l.keyed ? (
          <p key={l.index} class="muted">
            Limit #{l.index + 1} is keyed: look a key up by its value.
          </p>
        ) : (
          <table key={l.index}>
            <caption>
              Limit #{l.index + 1}: {l.running ?? 0} of {l.limit} running, {l.waiting ?? 0} waiting
              {l.fair ? ', shared fairly' : ''}
            </caption>
            <thead>
              <tr>
                <th scope="col">{l.fair ? 'Fair key' : 'Key'}</th>
                <th scope="col" class="num">
                  Running
                </th>
                <th scope="col" class="num">
                  Waiting
                </th>
                <th scope="col">Weight</th>
              </tr>
            </thead>
            <tbody>
              {(l.fair
                ? l.keys
                : [
                    {
                      key: '*',
                      running: l.running ?? 0,
                      waiting: l.waiting ?? 0,
                      weight: 1,
                      weightSource: 'spec' as const,
                    },
                  ]
              ).map((k) => (
                <tr key={k.key}>
                  <td class="mono">
                    <a href={href('/keys', { type, key: k.key })}>{k.key}</a>
                  </td>
                  <td class="num">{k.running}</td>
                  <td class="num">{k.waiting}</td>
                  <td>
                    {l.fair ? (
                      <>
                        {k.weight}{' '}
                        <span class="muted">({k.weightSource === 'runtime' ? 'set at run time' : 'spec'})</span>
                      </>
                    ) : (
                      <span class="muted">-</span>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ),
      )}
    </>
  );
}
