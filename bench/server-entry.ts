// A bench-only server entry for the "rate limiter off" throughput variant: what src/main.ts does
// for HUBOPS_DEMO=0 without REDIS_URL (configuration, database, buildApp, listen, graceful stop),
// except that BENCH_RATE_LIMITS=off injects a limiter that allows everything through buildApp's
// `limiter` dependency. The real entry deliberately has no such switch.
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/open.ts';
import { MemoryRateLimiter, type RateLimiter } from '../src/platform/rate-limit.ts';
import { UnlimitedRateLimiter } from './unlimited-limiter.ts';

const config = loadConfig();
if (!config.databaseUrl) throw new Error('bench/server-entry.ts needs DATABASE_URL');
const database = await openDatabase(config, { applicationName: 'hubops-server' });
const limiter: RateLimiter = process.env.BENCH_RATE_LIMITS === 'off' ? new UnlimitedRateLimiter() : new MemoryRateLimiter();
const app = await buildApp({ config, db: database.db, limiter });
await app.fastify.listen({ port: config.port, host: config.host });

const stop = async () => {
  await app.close();
  await limiter.close();
  await database.close();
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
