import type { Operation } from '../operation.ts';
import { analyticsOperations } from './analytics.operations.ts';
import { channelOperations } from './channel.operations.ts';
import type { MainContext } from './context.ts';
import { identityOperations } from './identity.operations.ts';
import { mediaOperations } from './media.operations.ts';
import { playbookOperations } from './playbook.operations.ts';
import { postOperations } from './post.operations.ts';

/** Every main API operation: mounted as REST routes, the OpenAPI document and MCP tools. */
export const mainOperations: readonly Operation<MainContext>[] = [
  ...identityOperations,
  ...channelOperations,
  ...postOperations,
  ...mediaOperations,
  ...analyticsOperations,
  ...playbookOperations,
];
