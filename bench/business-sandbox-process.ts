// The Business Profile sandbox in a process of its own, for bench/reviews.ts (the benchmark
// measures hubops's side of the review sync). Argument: JSON {locations, reviewsPerLocation}.
// Prints one JSON line (url, OAuth client, a refresh token) and serves until killed.
import { startGoogleBusinessSandbox } from '../src/integrations/google-business/sandbox.ts';

const shape = JSON.parse(process.argv[2] ?? '{}') as { locations: number; reviewsPerLocation: number };
const sandbox = await startGoogleBusinessSandbox({ generate: shape });
process.stdout.write(
  `${JSON.stringify({ url: sandbox.url, clientId: sandbox.clientId, clientSecret: sandbox.clientSecret, refreshToken: sandbox.issueRefreshToken() })}\n`,
);
