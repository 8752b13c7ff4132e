import type { Page } from 'playwright-core';

// What the layout tests check on a page in Chromium (test/web/layout.test.ts, the ad accounts'
// browser test): nothing past the right edge, touch targets of 44 px on a phone, the profile
// menu inside the viewport.

const TOUCH_MIN_PX = 44;

/** What is wrong with the page's width: the document, and any visible box past the right edge outside a scroll container. */
export async function overflows(page: Page, width: number): Promise<string[]> {
  return page.evaluate((vw) => {
    const { document, getComputedStyle } = globalThis as any; // runs in the page
    const found: string[] = [];
    const root = document.documentElement;
    if (root.scrollWidth > vw) found.push(`the document is ${root.scrollWidth} px wide`);
    const name = (el: any) =>
      `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}${typeof el.className === 'string' && el.className ? `.${el.className.trim().split(/\s+/).join('.')}` : ''}`;
    const clipped = (el: any) => {
      for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
        if (['auto', 'scroll', 'hidden', 'clip'].includes(getComputedStyle(a).overflowX)) return true;
      }
      return false;
    };
    for (const el of document.body.querySelectorAll('*')) {
      const box = el.getBoundingClientRect();
      if (box.width === 0 || box.height === 0 || getComputedStyle(el).visibility === 'hidden') continue;
      if (box.right > vw + 0.5 && !clipped(el))
        found.push(`${name(el)} reaches ${Math.round(box.right)} px: "${(el.textContent ?? '').trim().slice(0, 40)}"`);
      if (found.length > 12) break;
    }
    return found;
  }, width);
}

/**
 * Touch targets under 44 px high: buttons, inputs, selects, the menu's summary and items, and
 * links that stand on their own. A link inside a sentence (display: inline) is exempt, as WCAG
 * 2.5.8 exempts it; a radio or checkbox is measured by the label around it.
 */
export async function smallTargets(page: Page): Promise<string[]> {
  return page.evaluate((min) => {
    const { document, getComputedStyle } = globalThis as any; // runs in the page
    const found: string[] = [];
    for (const el of document.querySelectorAll('a[href], button, input:not([type=hidden]), select, summary, [role=menuitem]')) {
      const style = getComputedStyle(el);
      if (el.tagName === 'A' && style.display === 'inline') continue;
      const target = el.matches('input[type=radio], input[type=checkbox]') ? (el.closest('label') ?? el) : el;
      const box = target.getBoundingClientRect();
      if (box.width === 0 || box.height === 0 || style.visibility === 'hidden') continue;
      if (box.height < min - 0.5)
        found.push(
          `${el.tagName.toLowerCase()} "${(el.innerText || el.name || '').trim().slice(0, 30)}" is ${Math.round(box.height)} px high`,
        );
    }
    return found;
  }, TOUCH_MIN_PX);
}

/** Opens the profile menu: it and each of its items lie wholly inside the viewport. */
export async function menuOutside(page: Page, width: number, height: number): Promise<string[]> {
  await page.click('details.profile summary');
  const found = await page.evaluate(
    ({ vw, vh }) => {
      const { document } = globalThis as any; // runs in the page
      const out: string[] = [];
      const menu = document.querySelector('details.profile .menu');
      if (!menu) return ['no profile menu'];
      for (const el of [menu, ...menu.querySelectorAll('a, button')]) {
        const box = el.getBoundingClientRect();
        if (box.width === 0) out.push(`${el.textContent?.trim()} is not shown`);
        else if (box.left < 0 || box.top < 0 || box.right > vw || box.bottom > vh)
          out.push(
            `"${el.textContent?.trim().slice(0, 30)}" at ${Math.round(box.left)}..${Math.round(box.right)} × ${Math.round(box.top)}..${Math.round(box.bottom)}`,
          );
      }
      return out;
    },
    { vw: width, vh: height },
  );
  return found;
}
