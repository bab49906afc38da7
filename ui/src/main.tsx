/** The dashboard's entry: the header (navigation, live updates, read-only mark) and the routed view. */
import { render } from 'preact';
import { useState } from 'preact/hooks';
import { config, loadConfig } from './api';
import { LiveContext } from './poll';
import { href, useRoute } from './router';
import { DlqView } from './views/dlq';
import { EventView } from './views/event';
import { FlowPageView } from './views/flow';
import { JobDetailView } from './views/job';
import { JobsView } from './views/jobs';
import { KeysView } from './views/keys';
import { OverviewView } from './views/overview';
import { SchedulesView } from './views/schedules';
import './style.css';

const NAV = [
  { path: '/', label: 'Overview' },
  { path: '/jobs', label: 'Jobs' },
  { path: '/schedules', label: 'Schedules' },
  { path: '/dlq', label: 'DLQ' },
  { path: '/keys', label: 'Keys' },
  { path: '/flows', label: 'Flows' },
];

function App() {
  const route = useRoute();
  const [live, setLive] = useState(true);
  const section = route.segments[0] ?? '';
  let view: preact.JSX.Element;
  if (section === 'jobs' && route.segments[1]) view = <JobDetailView id={route.segments[1]} />;
  else if (section === 'jobs') view = <JobsView route={route} />;
  else if (section === 'schedules') view = <SchedulesView route={route} />;
  else if (section === 'dlq') view = <DlqView route={route} />;
  else if (section === 'keys') view = <KeysView route={route} />;
  else if (section === 'events') view = <EventView id={route.segments[1]} />;
  else if (section === 'flows') view = <FlowPageView id={route.segments[1]} />;
  else if (section === '') view = <OverviewView />;
  else view = <p role="alert">No page {route.path}.</p>;
  const title = NAV.find((item) => item.path === `/${section}`)?.label ?? (section === 'events' ? 'Event' : 'Orrery');
  document.title = `${title} · Orrery`;

  return (
    <LiveContext.Provider value={{ live, pollMs: config.pollMs }}>
      <button type="button" class="skip" onClick={() => document.getElementById('main')?.focus()}>
        Skip to content
      </button>
      <header>
        <span class="brand">Orrery</span>
        <nav aria-label="Views">
          <ul>
            {NAV.map((item) => (
              <li key={item.path}>
                <a href={href(item.path)} aria-current={`/${section}` === item.path ? 'page' : undefined}>
                  {item.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <label class="live">
          <input type="checkbox" checked={live} onChange={(e) => setLive((e.target as HTMLInputElement).checked)} />{' '}
          Live updates
        </label>
        {config.readOnly ? (
          <span class="badge badge-readonly" title="Actions are off; the server refuses them too">
            read-only
          </span>
        ) : null}
      </header>
      <main id="main" tabIndex={-1}>
        {view}
      </main>
    </LiveContext.Provider>
  );
}

void loadConfig().then(() => {
  const root = document.getElementById('app');
  if (root) render(<App />, root);
});
