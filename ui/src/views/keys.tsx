/** Flow-control keys: who holds a key's slots and how many wait (`GET /types/{type}/keys/{key}`). */
import { useState } from 'preact/hooks';
import { ApiError, api, seg } from '../api';
import { ErrorBox, Json, Time, TypeSelect } from '../components';
import { usePoll } from '../poll';
import { href, navigate, type Route } from '../router';

interface Holder {
  jobId: string;
  since: string;
}
interface KeyState {
  type: string;
  key: string;
  limits: { index: number; limit: number; key: string; running: Holder[]; waiting: number }[];
  singleton?: { scope: string; mode: string; key: string; running: Holder[]; waiting: number };
  [other: string]: unknown;
}

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
            placeholder="e.g. t1, or * "
          />
        </div>
        <div class="actions">
          <button type="submit" class="primary">
            Show
          </button>
        </div>
      </form>
      {type && key ? <KeyPanel key={`${type}/${key}`} type={type} value={key} /> : null}
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
  const { type: _t, key: _k, limits = [], singleton, ...others } = state ?? ({} as KeyState);
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
                  <th scope="col">Holding a slot</th>
                  <th scope="col" class="num">
                    Waiting
                  </th>
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
                      <Holders running={l.running} />
                    </td>
                    <td class="num">{l.waiting}</td>
                  </tr>
                ))}
              </tbody>
            </table>
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
