import { describe, expect, it } from 'vitest';
import { createStyle, formatApiError } from '../../shared/cli/format';
import { errorFromResponse } from '../../shared/client/errors';

const answer = (status: number, body: unknown) =>
  errorFromResponse({
    status,
    bodyText: JSON.stringify(body),
    headers: new Headers(),
    method: 'POST',
    path: '/jobs/j1/cancel',
    attempts: 1,
  });

describe('a 403 in the CLI', () => {
  it("shows the API's reason: the action, a control call's sub-action and the type", () => {
    const error = answer(403, {
      error: {
        code: 'forbidden',
        message: 'arn:aws:sts::1:assumed-role/ops/a: control (cancel) is not granted on job type "charge"',
        action: 'control',
        control: 'cancel',
        type: 'charge',
      },
    });
    const text = formatApiError(error, createStyle(false));
    expect(text).toContain(
      'error: forbidden (HTTP 403): arn:aws:sts::1:assumed-role/ops/a: control (cancel) is not granted',
    );
    expect(text).toContain('  not granted: control (cancel) on job type charge');
  });

  it("keeps the Function URL's own 403 (no grant involved) as it was", () => {
    const text = formatApiError(answer(403, { Message: 'Forbidden' }), createStyle(false));
    expect(text).toMatch(/the Function URL refused the request/);
    expect(text).not.toContain('not granted');
  });
});
