// Preloaded (node --import) into the server by signals.test.ts: SIGUSR2 makes an error that
// nothing catches, as a bug in a timer or event handler would.
process.on('SIGUSR2', () => {
  setImmediate(() => {
    throw new Error('injected uncaught error');
  });
});
