// Plain JavaScript, so any Node runs it: hubops is TypeScript run directly (type stripping, Node
// >= 22.18), and an older Node fails on the first .ts file with ERR_UNKNOWN_FILE_EXTENSION, which
// says nothing useful. `npm start`, `npm run hubops` (node --import) and bin/hubops.js load this
// first and stop with one line instead.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  process.stderr.write(
    `hubops needs Node.js 22.18 or newer (this is ${process.version}): run npm install without --omit=dev (it brings Node 22 for npm scripts), or install Node 22 LTS from https://nodejs.org\n`,
  );
  process.exit(1);
}
