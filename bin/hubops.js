#!/usr/bin/env node
// The CLI is TypeScript run directly (type stripping, Node >= 22.18): no build step. The version
// check comes first, so an older Node says what is wrong instead of failing on the .ts import.
import './require-node.js';

await import('../src/cli/main.ts');
