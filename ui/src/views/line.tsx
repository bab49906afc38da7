/** A line of waiting jobs, as the keys view lists it (a limit's, or a throttle's). */

import { seg } from '../api';
import { Time } from '../components';
import { href } from '../router';

/** The first jobs in line, first served first (the API lists up to 50; the first 5 here). */
export function Line({ line, waiting }: { line: { jobId: string; rankedAt?: string }[] | undefined; waiting: number }) {
  const shown = (line ?? []).slice(0, 5);
  if (shown.length === 0) return <span class="muted">{waiting > 0 ? `${waiting} waiting` : 'none'}</span>;
  return (
    <ol class="plain">
      {shown.map((e) => (
        <li key={e.jobId}>
          <a href={href(`/jobs/${seg(e.jobId)}`)}>{e.jobId}</a>
          {e.rankedAt ? (
            <span class="muted">
              {' '}
              ranked at <Time iso={e.rankedAt} />
            </span>
          ) : null}
        </li>
      ))}
      {waiting > shown.length ? <li class="muted">and {waiting - shown.length} more</li> : null}
    </ol>
  );
}
