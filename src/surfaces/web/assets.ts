// The one script of the web admin, served from our own origin (CSP script-src 'self'): copy
// buttons, forms that submit once, the hub switcher submitting on change. Pages work without it.
export const APP_JS = `'use strict';
document.addEventListener('click', async (event) => {
  const button = event.target.closest('[data-copy-target]');
  if (!button) return;
  const source = document.getElementById(button.dataset.copyTarget);
  if (!source) return;
  const text = source.textContent.trim();
  let done = false;
  try { await navigator.clipboard.writeText(text); done = true; } catch {}
  if (!done) {
    const range = document.createRange(); range.selectNodeContents(source);
    const selection = getSelection(); selection.removeAllRanges(); selection.addRange(range);
    try { done = document.execCommand('copy'); } catch {}
  }
  const label = button.textContent;
  button.textContent = done ? 'Copied' : 'Select and copy';
  setTimeout(() => { button.textContent = label; }, 2000);
});
document.addEventListener('submit', (event) => {
  const form = event.target;
  if (!form.hasAttribute('data-once')) return;
  if (form.dataset.submitted) { event.preventDefault(); return; }
  form.dataset.submitted = '1';
  setTimeout(() => { for (const b of form.querySelectorAll('button[type=submit]')) b.disabled = true; }, 0);
});
document.addEventListener('change', (event) => {
  const form = event.target.closest('form[data-autosubmit]');
  if (form) form.requestSubmit();
});
`;

/** The hubops icon: a lower-case h on the accent blue. */
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><rect width="64" height="64" rx="14" fill="#2956d6"/><path d="M22 14v36M22 35c0-7 4.5-11 10.5-11S43 28 43 35v15" fill="none" stroke="#fff" stroke-width="7" stroke-linecap="round" stroke-linejoin="round"/></svg>`;

/** /favicon.ico: FAVICON_SVG rendered by Chromium at 32×32, one PNG in an ICO container. */
export const FAVICON_ICO = Buffer.from(
  'AAABAAEAICAAAAEAIADHAgAAFgAAAIlQTkcNChoKAAAADUlIRFIAAAAgAAAAIAgGAAAAc3p69AAAAnxJREFUeJzsl0toE0EYx/+z2ZAmVWJsUqxoa1CrbRREUHLrQcHHQQuWHhR8K0IR9CSIoBehgujJ4qEieBIa0Yqgdx94ECliTFs0aTWNTWO0SJsm2WbHmZWEpiTZbNxsPPR3mW9mPub77zevHRELWNcZWlFnTlwEiBeg2wghjdABSukUG3OIWW+Tku322BP3dLaPZI3WLv8+QSD9rGE1qggFIrJMT4/6PM9zAjZ3B/YQ0BcwkIxM93MRpPnwuMMmzfoJQRMMhGdCoHSrWJ+ePQbB2OAcPtWUkqMis7xqzi6HiFMHGhT73tM4Yr/moQsstsgKVQFnO504steh2CaB4Pr9SeiEl2egRc2rtdlS0P5nWGwBNabmAkRUQJu7Djvbbdi41oIGu4jh8SQCoSReDs1gLkU1jaVZwJb1Vjzqdee1dWxfppThKQmX+yJ4F0igXDRPgdVCivataTTjwbUWHOywo2oCFhKJSfAHk0gsSvuVE6vgtJvKGqOiNRCcSOPCrTA+h1NK3cQ+49whF3q6nEq93irg6pkmnL8ZVh1LcwYyMtjA33LBs213BmJ49up3rm3XjuWwlZiuigVMxiWEIumCfW8+zOTVXQ4zdBfw/YdUtC/6M/+OWFnGOtC8BmiJbT6fye8UTVWYAr1ZErAk4H8QQKNqTqNfUwXtxQQnUsqpyOHll3Bx37/QqMnp6dlNQDaUcuP3vZnt6fcjc+gfjCORlAv68X8Bfkrys6LPF8NHdlGVDA+8Jpu6P/WyNFxCDWCfcUMgArnLJE/DaFhMHlsYftg2xn5PT8JgZIrjPLayCwID7Y/5W40/l1BleAwea8TnGeT1vNuiFs/zPwAAAP//24UfKgAAAAZJREFUAwAh+ugQna88swAAAABJRU5ErkJggg==',
  'base64',
);
