// The front door at {base_url}/: what this server is and where each way in lives, as a page for
// people and as JSON for programs (the same links).
import { escapeHtml as h } from '../../shared/html.ts';
import { publicPage } from './layout.ts';

export interface FrontDoor {
  name: 'hubops';
  description: string;
  webAdmin: string;
  docs: string;
  apis: { name: string; url: string; openapi: string; mcp: string; authentication: string }[];
}

const DESCRIPTION =
  'A marketing-operations platform for franchise networks: hubs (brands), their workspaces (locations), playbooks and opt-ins, paid ad spend, social posts, media and analytics.';

/** Every link of the front door, absolute for this server's public address (BASE_URL). */
export function frontDoor(baseUrl: string): FrontDoor {
  const hub = `${baseUrl}/v1/hub`;
  return {
    name: 'hubops',
    description: DESCRIPTION,
    webAdmin: `${baseUrl}/app`,
    docs: `${baseUrl}/docs`,
    apis: [
      {
        name: 'Hub API',
        url: hub,
        openapi: `${hub}/openapi.json`,
        mcp: `${hub}/mcp`,
        authentication: 'Authorization: Bearer <HUB_API_KEY> (a read key a hub admin creates under Manage Hub → API)',
      },
      {
        name: 'main API',
        url: baseUrl,
        openapi: `${baseUrl}/openapi.json`,
        mcp: `${baseUrl}/mcp`,
        authentication: 'OAuth 2.1 with PKCE; MCP clients discover the authorization server from the MCP URL',
      },
    ],
  };
}

const urlRow = (label: string, url: string) => `<dt class="muted">${h(label)}</dt><dd><a class="url" href="${h(url)}">${h(url)}</a></dd>`;

export function frontDoorPage(door: FrontDoor, nonce: string): string {
  const apis = door.apis
    .map(
      (api) => `<div class="card"><h2>${h(api.name)}</h2><p class="muted">${h(api.authentication)}</p>
<dl class="pairs">${urlRow('Base URL', api.url)}${urlRow('OpenAPI', api.openapi)}${urlRow('MCP', api.mcp)}</dl></div>`,
    )
    .join('');
  return publicPage(
    'Welcome',
    `<div class="card"><h1>This is a hubops server</h1><p>${h(door.description)}</p>
<ul class="links"><li><a href="${h(door.webAdmin)}">Web admin<small>Sign in to manage your hub: reports, spend, API keys, connected apps.</small></a></li>
<li><a href="${h(door.docs)}">Documentation<small>Quick start, the APIs, MCP for AI assistants, operations.</small></a></li></ul></div>
${apis}<p class="muted"><small>Programs asking for JSON (<code>Accept: application/json</code>) get these links as JSON from this same URL.</small></p>`,
    nonce,
  );
}
