// The link an alert carries points at the dashboard's pages: `/{slug}` for a project and
// `/{slug}/issues/{fingerprint}` for an issue, the fingerprint URL-encoded.
import { describe, expect, it } from 'vitest';
import { alertLink, telegramText, webhookPayload } from '../../src/alerts/channels.js';

const project = { slug: 'shop-app', name: 'Shop app' };
const at = Date.UTC(2026, 10, 21, 14, 5);

describe('alert links', () => {
  it('name the dashboard page of the issue, with the fingerprint encoded', () => {
    const content = {
      type: 'new_issue' as const,
      title: 'boom',
      fingerprint: 'custom/fp 1?',
      event_count: 1,
      triggered_at: at,
    };
    const issueUrl = 'https://errors.example.com/shop-app/issues/custom%2Ffp%201%3F';
    expect(alertLink('https://errors.example.com', project, content)).toBe(issueUrl);
    expect(webhookPayload(content, project, 'https://errors.example.com').url).toBe(issueUrl);
    expect(telegramText(content, project, 'https://errors.example.com').split('\n').at(-1)).toBe(issueUrl);
  });

  it('name the dashboard page of the project when no issue is concerned', () => {
    const content = { type: 'crash_spike' as const, recent: 12, baseline: 1, triggered_at: at };
    expect(alertLink('https://errors.example.com/faultline', project, content)).toBe(
      'https://errors.example.com/faultline/shop-app',
    );
    expect(alertLink(null, project, content)).toBeUndefined();
  });
});
