import { existsSync } from 'node:fs';

// Chromium for the browser tests (test/web/browser.test.ts): skipped with a reason when it is missing.

export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'];
export const chromiumMissing = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is not installed (apt-get install -y chromium; .ci/run installs it)`;
