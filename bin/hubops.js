#!/usr/bin/env node
// The CLI is TypeScript run directly (type stripping, Node >= 22.18): no build step. Check the
// version first so an older Node says what is wrong instead of failing on the .ts import.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  process.stderr.write(
    `hubops: needs Node.js 22.18 or newer, this is ${process.version}; inside the checkout use: npm run --silent hubops -- ARGS\n`,
  );
  process.exit(2);
}
await import('../src/cli/main.ts');
