// The signed embeds' bodies: a report under the hub's name, or why it cannot be shown.
import { escapeHtml as h } from '../../shared/html.ts';

export function embedRefusalView(reason: string): string {
  return `<div class="card"><h1>This view cannot be shown</h1><p class="error" role="alert" data-embed-error>${h(reason)}</p>
<p class="muted">The site that embeds it must sign a fresh token with an active embed key of the hub.</p></div>`;
}

/** An embed address that is no view, one Fastify refused before any route ran, or a failure on our side. */
export function embedMessageView(heading: string, message: string, hint?: string): string {
  return `<div class="card"><h1>${h(heading)}</h1><p class="error" role="alert" data-embed-error>${h(message)}</p>${hint ? `<p class="muted">${h(hint)}</p>` : ''}</div>`;
}

/** What an embed address that is no view is told. */
export const EMBED_VIEWS_HINT = 'The embeddable views are /embed/spend and /embed/opt-in-summary, each with a signed token.';

export function embedReportView(heading: string, report: string): string {
  return `<h1>${h(heading)}</h1>${report}`;
}
