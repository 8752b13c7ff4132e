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
