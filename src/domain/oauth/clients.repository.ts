import type { Db } from '../../db/database.ts';

// The SQL of pre-provisioned OAuth clients (clients.service.ts decides their metadata). Dynamically
// registered clients are stored by the OAuth storage adapter (src/surfaces/oauth/adapter.ts).

/** Stores a provisioned client's metadata (oidc-provider's shape) under its id. */
export async function insertClient(db: Db, clientId: string, metadata: Record<string, unknown>): Promise<void> {
  await db.kysely
    .insertInto('oauth_clients')
    .values({ client_id: clientId, metadata: JSON.stringify(metadata), provisioned: true })
    .execute();
}
