import { HubCatalogCache } from '../../domain/opt-ins/hub-catalog.ts';
import { OptInSummaryCache } from '../../domain/opt-ins/opt-in.service.ts';
import { SpendReportCache } from '../../domain/spend/spend.service.ts';

// What an instance keeps of the hub reports between requests. buildApp makes one set and gives it
// to every surface that serves them (the Hub API, the main MCP server's hub-wide tools, the web
// admin), so a report built for one is reused by the others.

export interface ReportCaches {
  /** Spend reports per (hub, period, UTC day) while the hub's report_version is unchanged. */
  readonly spend: SpendReportCache;
  /** Workspaces and playbooks as opt-in rows embed them, per hub at its catalog_version. */
  readonly catalogs: HubCatalogCache;
  /** Opt-in summaries per hub and day at their summary version: repeated polls count nothing. */
  readonly summaries: OptInSummaryCache;
}

export function createReportCaches(): ReportCaches {
  return { spend: new SpendReportCache(), catalogs: new HubCatalogCache(), summaries: new OptInSummaryCache() };
}
