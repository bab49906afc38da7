/**
 * Hash routing: `#/jobs?type=flaky&state=failed` is a shareable address of a filtered view,
 * and needs nothing from the server (every page is `/ui/`).
 */
import { useEffect, useState } from 'preact/hooks';

export interface Route {
  /** `/jobs`, `/jobs/abc`, … (decoded segments joined with `/`). */
  path: string;
  segments: string[];
  params: URLSearchParams;
}

export function currentRoute(): Route {
  const hash = window.location.hash.replace(/^#/, '') || '/';
  const [pathPart = '/', search = ''] = hash.split('?', 2);
  const segments = pathPart
    .split('/')
    .filter(Boolean)
    .map((s) => {
      try {
        return decodeURIComponent(s);
      } catch {
        return s;
      }
    });
  return { path: `/${segments.join('/')}`, segments, params: new URLSearchParams(search) };
}

/** The address of a view: `href('/jobs', { state: 'failed' })` → `#/jobs?state=failed`. */
export function href(path: string, params: Record<string, string | undefined> | URLSearchParams = {}): string {
  const search = new URLSearchParams();
  const entries = params instanceof URLSearchParams ? [...params] : Object.entries(params);
  for (const [key, value] of entries) if (value) search.set(key, value);
  const text = search.toString();
  return `#${path}${text ? `?${text}` : ''}`;
}

export function navigate(path: string, params: Record<string, string | undefined> | URLSearchParams = {}): void {
  window.location.hash = href(path, params);
}

/** The current route; re-renders on every hash change. */
export function useRoute(): Route {
  const [route, setRoute] = useState(currentRoute);
  useEffect(() => {
    const onChange = () => setRoute(currentRoute());
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return route;
}
