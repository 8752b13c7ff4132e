import type { Operation } from '../operation.ts';
import type { MainContext } from './context.ts';
import { contentOperations } from './content.operations.ts';
import { identityOperations } from './identity.operations.ts';
import { playbookOperations } from './playbook.operations.ts';

/** Every main API operation: mounted as REST routes, the OpenAPI document and MCP tools. */
export const mainOperations: readonly Operation<MainContext>[] = [...identityOperations, ...contentOperations, ...playbookOperations];
