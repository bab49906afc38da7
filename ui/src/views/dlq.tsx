/** Dead-letter queues: depth and the first messages of a type's DLQ, and redrive. */
import { useState } from 'preact/hooks';
import { api, type DlqListing, seg } from '../api';
import { ConfirmDialog, ErrorBox, Time, TypeSelect, useTypes, Who, Writable } from '../components';
import { usePoll } from '../poll';
import { href, navigate, type Route } from '../router';

interface RedriveAnswer {
  method: 'move-task' | 'receive-send';
  status?: string;
  approximateMessages?: number | null;
  moved?: number;
  remaining?: number;
  stoppedBy?: string;
}

export function DlqView({ route }: { route: Route }) {
  const types = useTypes();
  const type = route.params.get('type') ?? types[0] ?? '';
  return (
    <section aria-labelledby="dlq-title">
      <h1 id="dlq-title">Dead-letter queues</h1>
      <div class="filters">
        <div class="field">
          <label for="dlq-type">Job type</label>
          <TypeSelect id="dlq-type" value={type} onChange={(value) => navigate('/dlq', { type: value })} />
        </div>
      </div>
      {type ? <DlqPanel key={type} type={type} /> : <p class="muted">No job types known yet.</p>}
    </section>
  );
}

function DlqPanel({ type }: { type: string }) {
  const loaded = usePoll(() => api<DlqListing>('GET', `/dlq?type=${seg(type)}&limit=10`), `dlq:${type}`);
  const [confirm, setConfirm] = useState(false);
  const [outcome, setOutcome] = useState<{ text?: string; error?: unknown }>({});
  const listing = loaded.data;
  // a message being looked at (by this page's own peek, or another) counts as in flight for a moment
  const depth = listing ? listing.approximateDepth.visible + listing.approximateDepth.inFlight : 0;

  async function redrive() {
    setConfirm(false);
    setOutcome({});
    try {
      const answer = await api<RedriveAnswer>('POST', '/dlq/redrive', { type });
      setOutcome({
        text:
          answer.method === 'move-task'
            ? `SQS is moving the ${type} DLQ back to its ready queue (${answer.status ?? 'started'}).`
            : `Moved ${answer.moved ?? 0} messages back to the ${type} ready queue; about ${answer.remaining ?? 0} left.`,
      });
      loaded.reload();
    } catch (error) {
      setOutcome({ error });
    }
  }

  return (
    <>
      <ErrorBox error={loaded.error} what={`could not read the ${type} DLQ`} />
      {listing ? (
        <p>
          About <strong data-testid="dlq-depth">{depth}</strong> {depth === 1 ? 'message' : 'messages'} in the DLQ (
          {listing.approximateDepth.inFlight} in flight).
        </p>
      ) : null}
      {listing?.lastRedrive ? <LastRedrive redrive={listing.lastRedrive} /> : null}
      <div class="toolbar">
        <Writable>
          <button
            type="button"
            class="primary"
            disabled={!listing || (depth === 0 && listing.messages.length === 0)}
            onClick={() => setConfirm(true)}
          >
            Redrive…
          </button>
        </Writable>
        {outcome.text ? <span role="status">{outcome.text}</span> : null}
        <ErrorBox error={outcome.error} what="redrive failed" />
      </div>
      {confirm ? (
        <ConfirmDialog
          title={`Redrive about ${depth} ${depth === 1 ? 'message' : 'messages'}?`}
          confirmLabel="Redrive"
          onConfirm={() => void redrive()}
          onCancel={() => setConfirm(false)}
        >
          <p>
            The {type} DLQ's messages go back to its ready queue; each is sent before it is deleted, so none is lost,
            and a job that already finished is not run again.
          </p>
        </ConfirmDialog>
      ) : null}
      {listing && listing.messages.length > 0 ? (
        <table>
          <caption>First messages (looked at, not consumed)</caption>
          <thead>
            <tr>
              <th scope="col">Message</th>
              <th scope="col">Job</th>
              <th scope="col" class="num">
                Receives
              </th>
              <th scope="col">Sent</th>
              <th scope="col">Body</th>
            </tr>
          </thead>
          <tbody>
            {listing.messages.map((m) => (
              <tr key={m.messageId}>
                <td class="mono">{m.messageId}</td>
                <td>
                  {m.jobId ? <a href={href(`/jobs/${seg(m.jobId)}`)}>{m.jobId}</a> : <span class="muted">–</span>}
                </td>
                <td class="num">{m.receiveCount}</td>
                <td>
                  <Time iso={m.sentAt} />
                </td>
                <td class="mono">{m.body ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : listing ? (
        <p>The {type} DLQ is empty.</p>
      ) : null}
    </>
  );
}

/** Who redrove the DLQ last, when, and how many messages it moved (a move task's count is SQS's, not known). */
function LastRedrive({ redrive }: { redrive: NonNullable<DlqListing['lastRedrive']> }) {
  return (
    <p class="last-redrive">
      Last redriven by <Who arn={redrive.by} /> at <Time iso={redrive.at} /> (
      {redrive.moved !== undefined ? `${redrive.moved} moved` : 'by an SQS move task'}).
    </p>
  );
}
