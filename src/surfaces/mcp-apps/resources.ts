import { readFileSync } from 'node:fs';
import type { McpResource } from '../mcp.ts';

// The MCP Apps resources (io.modelcontextprotocol/ui): HTML a host that supports the extension
// renders in a sandboxed frame beside a tool's result. One view serves both report tools: it tells
// the spend report from the opt-in summary by the result's shape, and the host fetches and caches
// one template. Clients without the extension never read it and get the tools' results as before.

/** The view of get_spend_by_workspace and get_opt_in_summary: their `mcp.ui`, on both endpoints. */
export const REPORT_VIEW_URI = 'ui://hubops/report-view';

const reportView: McpResource = {
  uri: REPORT_VIEW_URI,
  name: 'report-view',
  title: 'Spend and opt-in report',
  description:
    'Shows the result of get_spend_by_workspace (spend per workspace against the prior period, with the freshness banner) or get_opt_in_summary (the four periods and live opt-ins).',
  mimeType: 'text/html;profile=mcp-app',
  // Read once, at start.
  text: readFileSync(new URL('./report-view.html', import.meta.url), 'utf8'),
  // No ui.csp: the view loads nothing, so the host's strictest default applies. A border, because
  // the view is a report card of its own and hosts' defaults differ.
  _meta: { ui: { prefersBorder: true } },
};

/** What an MCP endpoint serves with resources/list and resources/read. */
export const mcpAppResources: readonly McpResource[] = [reportView];
