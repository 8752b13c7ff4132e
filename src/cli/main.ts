// Entry point of the `hubops` operator CLI (bin/hubops.js and `npm run --silent hubops -- …`).
import { runCli } from './cli.ts';

const code = await runCli(process.argv.slice(2));
// Exit explicitly with the command's status (the embedded database is stopped on 'exit'), once
// stdout and stderr are flushed.
process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
