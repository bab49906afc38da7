/** Small shared pieces: state badges, times, errors, the confirmation dialog, JSON blocks. */
import type { ComponentChildren, VNode } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api, config, isMissingRoute, type JobPage, type Overview, seg, shortPrincipal } from './api';
import { usePoll } from './poll';
import { href, navigate } from './router';

export function StateBadge({ state }: { state: string }) {
  return <span class={`badge badge-${state}`}>{state}</span>;
}

const pad = (n: number) => String(n).padStart(2, '0');

/** `2026-11-23 10:04:05` in the viewer's time zone. */
export function formatTime(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** `1.2 s`, `3 min 4 s`, `2 h 5 min`, `3 d 4 h`. */
export function formatDuration(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 1_000) return `${Math.round(abs)} ms`;
  if (abs < 60_000) return `${(abs / 1_000).toFixed(1)} s`;
  const s = Math.round(abs / 1_000);
  if (s < 3_600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 86_400) return `${Math.floor(s / 3_600)} h ${Math.floor((s % 3_600) / 60)} min`;
  return `${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3_600)} h`;
}

/** `in 3 min 4 s` / `12.0 s ago`. */
export function relative(iso: string, now = Date.now()): string {
  const diff = new Date(iso).getTime() - now;
  return diff >= 0 ? `in ${formatDuration(diff)}` : `${formatDuration(diff)} ago`;
}

export function Time({ iso, rel }: { iso: string | null | undefined; rel?: boolean }) {
  if (!iso) return <span class="muted">–</span>;
  return (
    <time dateTime={iso} title={iso}>
      {formatTime(iso)}
      {rel ? <span class="muted"> ({relative(iso)})</span> : null}
    </time>
  );
}

/** A caller, shortened (`role/billing (session ci)`), with its full ARN as the title. */
export function Who({ arn }: { arn: string }) {
  const short = shortPrincipal(arn);
  return short === arn ? (
    <span class="who">{arn}</span>
  ) : (
    <span class="who" title={arn}>
      {short}
    </span>
  );
}

/**
 * Where a limit or pace comes from: `spec`, or set at run time (by whom, when), then what the
 * spec says (`spec`, already worded).
 */
export function Source(props: {
  source: 'spec' | 'runtime';
  setBy?: string | undefined;
  setAt?: string | undefined;
  spec: string;
}) {
  if (props.source === 'spec') return <span class="muted">spec</span>;
  return (
    <span>
      set at run time
      {props.setBy ? (
        <>
          {' '}
          by <Who arn={props.setBy} />
        </>
      ) : null}
      {props.setAt ? (
        <>
          {' '}
          <Time iso={props.setAt} rel />
        </>
      ) : null}
      ; spec {props.spec}
    </span>
  );
}

/** An error, announced (`role="alert"`); `id` lets the fields it names point at it (`aria-describedby`). */
export function ErrorBox({ error, what, id }: { error: unknown; what?: string; id?: string }) {
  if (!error) return null;
  const message =
    error instanceof ApiError
      ? `${error.code}: ${error.message}`
      : error instanceof Error
        ? error.message
        : String(error);
  return (
    <p class="error" role="alert" id={id}>
      {what ? `${what}: ` : ''}
      {message}
    </p>
  );
}

export function Json({ value, label }: { value: unknown; label: string }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable block must be focusable to be scrolled with the keyboard
    <section class="json" aria-label={label} tabIndex={0}>
      <pre>{value === undefined ? 'null' : JSON.stringify(value, null, 2)}</pre>
    </section>
  );
}

/**
 * A modal confirmation (`<dialog>`: focus stays inside, Escape closes it). Its title states
 * what will happen, with the count.
 */
export function ConfirmDialog(props: {
  title: string;
  children?: ComponentChildren;
  confirmLabel: string;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (dialog && !dialog.open) dialog.showModal();
    return () => dialog?.close();
  }, []);
  return (
    <dialog
      ref={ref}
      class="confirm"
      aria-labelledby="confirm-title"
      onCancel={(event) => {
        event.preventDefault();
        props.onCancel();
      }}
    >
      <h2 id="confirm-title">{props.title}</h2>
      {props.children}
      <div class="actions">
        <button type="button" class="primary" onClick={props.onConfirm}>
          {props.confirmLabel}
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </dialog>
  );
}

/** Hidden in read-only mode: the server refuses the calls anyway. */
export function Writable({ children }: { children: ComponentChildren }) {
  return config.readOnly ? null : (children as VNode);
}

let typesCache: Promise<string[]> | undefined;

/**
 * The deployed job types: from `GET /overview`, or, on an API without it, the types seen in
 * the newest jobs and the schedules.
 */
export function loadTypes(): Promise<string[]> {
  typesCache ??= (async () => {
    try {
      const overview = await api<Overview>('GET', '/overview?windowMinutes=60');
      return overview.types.map((t) => t.type).sort();
    } catch (error) {
      if (!isMissingRoute(error)) throw error;
      const page = await api<JobPage>('GET', '/jobs?limit=100');
      return [...new Set(page.items.map((job) => job.type))].sort();
    }
  })().catch((error: unknown) => {
    typesCache = undefined;
    throw error;
  });
  return typesCache;
}

export function useTypes(): string[] {
  return usePoll(loadTypes, 'types', { poll: false }).data ?? [];
}

export function TypeSelect(props: { id: string; value: string; onChange: (value: string) => void; any?: string }) {
  const types = useTypes();
  const options = props.value && !types.includes(props.value) ? [props.value, ...types] : types;
  return (
    <select id={props.id} value={props.value} onChange={(e) => props.onChange((e.target as HTMLSelectElement).value)}>
      {props.any !== undefined ? <option value="">{props.any}</option> : null}
      {options.map((type) => (
        <option key={type} value={type}>
          {type}
        </option>
      ))}
    </select>
  );
}

/**
 * A form that opens a page by an id typed in: a job's (`/jobs/<id>`), an event's (`/events/<id>`)
 * or a flow's (`/flows/<id>`).
 *
 * @example
 * <IdLookup what="job" label="Job id" inputId="lookup-id" />
 */
export function IdLookup(props: { what: 'job' | 'event' | 'flow'; label: string; inputId: string; initial?: string }) {
  const [id, setId] = useState(props.initial ?? '');
  return (
    <form
      class="lookup"
      aria-label={`Open ${props.what === 'event' ? 'an event' : `a ${props.what}`} by id`}
      onSubmit={(event) => {
        event.preventDefault();
        if (id.trim()) navigate(`/${props.what}s/${seg(id.trim())}`);
      }}
    >
      <label for={props.inputId}>{props.label}</label>
      <input
        id={props.inputId}
        value={id}
        onInput={(e) => setId((e.target as HTMLInputElement).value)}
        autoComplete="off"
      />
      <button type="submit">Open</button>
    </form>
  );
}

/** A job's id, linked to its page. @example <JobLink id="o7" /> */
export function JobLink({ id }: { id: string }) {
  return (
    <a href={href(`/jobs/${seg(id)}`)} class="mono">
      {id}
    </a>
  );
}
