/**
 * A flow's page (`GET /flows/{id}`): its graph drawn in layers (a job sits one layer right of its
 * deepest parent in the flow), each node with its state, as an SVG and as the same layers in a
 * list (links to each job's page, and what each waits for); and the form that opens a flow by id.
 */
import { ApiError, api, type FlowView, seg } from '../api';
import { ErrorBox, IdLookup, JobLink, StateBadge, Time } from '../components';
import { layers } from '../flow-layers';
import { usePoll } from '../poll';
import { href } from '../router';

const NODE_W = 190;
const NODE_H = 46;
const GAP_X = 70;
const GAP_Y = 18;

const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

function FlowGraph({ flow }: { flow: FlowView }) {
  const levels = layers(flow.nodes);
  const place = new Map<string, { x: number; y: number }>();
  levels.forEach((layer, i) => {
    layer.forEach((node, j) => {
      place.set(node.id, { x: 10 + i * (NODE_W + GAP_X), y: 10 + j * (NODE_H + GAP_Y) });
    });
  });
  const width = 20 + levels.length * (NODE_W + GAP_X) - GAP_X;
  const height = 20 + Math.max(1, ...levels.map((layer) => layer.length)) * (NODE_H + GAP_Y) - GAP_Y;
  const edges = flow.nodes.flatMap((node) =>
    node.dependsOn.flatMap((edge) => {
      const from = place.get(edge.id);
      const to = place.get(node.id);
      return from && to ? [{ key: `${edge.id}->${node.id}`, from, to, policy: edge.onParentFailure }] : [];
    }),
  );
  const summary = levels
    .map((layer, i) => `layer ${i + 1}: ${layer.map((n) => `${n.id} ${n.state ?? 'gone'}`).join(', ')}`)
    .join('; ');
  return (
    <div class="scroll">
      <svg
        class="flow-graph"
        width={width}
        height={height}
        viewBox={`0 0 ${width} ${height}`}
        role="img"
        aria-labelledby="flow-graph-title"
      >
        <title id="flow-graph-title">{`Graph of flow ${flow.id}: ${summary}`}</title>
        <defs>
          <marker id="flow-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto">
            <path d="M 0 0 L 10 5 L 0 10 z" class="flow-arrowhead" />
          </marker>
        </defs>
        {edges.map(({ key, from, to, policy }) => {
          const x1 = from.x + NODE_W;
          const y1 = from.y + NODE_H / 2;
          const x2 = to.x;
          const y2 = to.y + NODE_H / 2;
          const mid = (x1 + x2) / 2;
          return (
            <path
              key={key}
              class={`flow-edge${policy === 'fail' ? '' : ' flow-edge-soft'}`}
              d={`M ${x1} ${y1} C ${mid} ${y1}, ${mid} ${y2}, ${x2} ${y2}`}
              marker-end="url(#flow-arrow)"
            />
          );
        })}
        {flow.nodes.map((node) => {
          const at = place.get(node.id);
          if (!at) return null;
          return (
            <g
              key={node.id}
              class={`flow-node flow-node-${node.state ?? 'gone'}`}
              transform={`translate(${at.x} ${at.y})`}
            >
              <rect width={NODE_W} height={NODE_H} rx={6} />
              <text x={10} y={19} class="flow-node-id">
                {cut(node.id, 24)}
              </text>
              <text x={10} y={36} class="flow-node-state">
                {cut(`${node.type} · ${node.state ?? 'no longer stored'}`, 28)}
              </text>
            </g>
          );
        })}
      </svg>
    </div>
  );
}

function FlowLayers({ flow }: { flow: FlowView }) {
  return (
    <ol class="flow-layers" aria-label="flow layers">
      {layers(flow.nodes).map((layer, i) => (
        <li key={layer[0]?.id ?? i}>
          Layer {i + 1}
          <ul class="plain">
            {layer.map((node) => (
              <li key={node.id}>
                <JobLink id={node.id} /> <code>{node.type}</code>{' '}
                {node.state ? <StateBadge state={node.state} /> : <span class="muted">no longer stored</span>}
                {node.dependsOn.length > 0 ? (
                  <span class="muted small">
                    {' '}
                    after{' '}
                    {node.dependsOn
                      .map((edge) =>
                        edge.onParentFailure === 'fail' ? edge.id : `${edge.id} (${edge.onParentFailure})`,
                      )
                      .join(', ')}
                  </span>
                ) : null}
              </li>
            ))}
          </ul>
        </li>
      ))}
    </ol>
  );
}

function FlowDetail({ id }: { id: string }) {
  const loaded = usePoll(() => api<FlowView>('GET', `/flows/${seg(id)}`), `flow:${id}`);
  const notFound = loaded.error instanceof ApiError && loaded.error.status === 404;
  const flow = loaded.data;
  return (
    <>
      {notFound ? (
        <p role="alert" class="error">
          No flow {id}: it never existed, or it is past its retention.
        </p>
      ) : (
        <ErrorBox error={loaded.error} what="could not load the flow" />
      )}
      {!flow && loaded.loading ? <p aria-live="polite">Loading…</p> : null}
      {flow ? (
        <>
          <p>
            Created <Time iso={flow.createdAt} />, {flow.nodes.length} {flow.nodes.length === 1 ? 'job' : 'jobs'}.
          </p>
          <h2>Graph</h2>
          <FlowGraph flow={flow} />
          <h2>Layers</h2>
          <FlowLayers flow={flow} />
        </>
      ) : null}
    </>
  );
}

export function FlowPageView({ id }: { id: string | undefined }) {
  return (
    <section aria-labelledby="flow-title">
      <p>
        <a href={href('/jobs')}>← Jobs</a>
      </p>
      <h1 id="flow-title">
        {id ? (
          <>
            Flow <span class="mono">{id}</span>
          </>
        ) : (
          'Flows'
        )}
      </h1>
      <IdLookup key={id ?? ''} what="flow" label="Flow id" inputId="lookup-flow" initial={id ?? ''} />
      {id ? (
        <FlowDetail id={id} />
      ) : (
        <p class="muted">
          A flow (`POST /flows`) is a graph of jobs. Enter its id to see its graph and each job's state.
        </p>
      )}
    </section>
  );
}
