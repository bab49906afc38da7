/**
 * Live updates by polling: a loader runs at once, then every `pollMs` while live updates are
 * on and the tab is visible (a hidden tab sends nothing), and again when the tab comes back.
 */
import { createContext } from 'preact';
import { useCallback, useContext, useEffect, useRef, useState } from 'preact/hooks';

/** Whether live updates are on (the header's switch). */
export const LiveContext = createContext<{ live: boolean; pollMs: number }>({ live: true, pollMs: 5_000 });

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  /** Loads again now. */
  reload: () => void;
  /** When the data was last loaded. */
  at: Date | undefined;
}

/**
 * Runs `load` when `key` changes, and polls it while live. A slow answer never overwrites a
 * newer one, and nothing is started while the previous call is still out.
 */
export function usePoll<T>(load: () => Promise<T>, key: string, options: { poll?: boolean } = {}): Loaded<T> {
  const { live, pollMs } = useContext(LiveContext);
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean; at: Date | undefined }>({
    data: undefined,
    error: undefined,
    loading: true,
    at: undefined,
  });
  const generation = useRef(0);
  const inFlight = useRef(false);
  const loadRef = useRef(load);
  loadRef.current = load;

  const run = useCallback(() => {
    if (inFlight.current) return;
    inFlight.current = true;
    const mine = generation.current;
    setState((s) => ({ ...s, loading: true }));
    loadRef
      .current()
      .then(
        (data) => {
          if (mine === generation.current) setState({ data, error: undefined, loading: false, at: new Date() });
        },
        (error: unknown) => {
          if (mine === generation.current) setState((s) => ({ ...s, error, loading: false, at: new Date() }));
        },
      )
      .finally(() => {
        inFlight.current = false;
      });
  }, []);

  useEffect(() => {
    generation.current += 1;
    inFlight.current = false;
    setState({ data: undefined, error: undefined, loading: true, at: undefined });
    run();
  }, [key, run]);

  const polling = live && options.poll !== false;
  useEffect(() => {
    if (!polling) return;
    const timer = setInterval(() => {
      if (!document.hidden) run();
    }, pollMs);
    const onVisible = () => {
      if (!document.hidden) run();
    };
    document.addEventListener('visibilitychange', onVisible);
    return () => {
      clearInterval(timer);
      document.removeEventListener('visibilitychange', onVisible);
    };
  }, [polling, pollMs, run]);

  return { ...state, reload: run };
}
