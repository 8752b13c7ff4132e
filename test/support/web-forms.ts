import assert from 'node:assert/strict';
import type { TestApp } from './app.ts';
import { Browser } from './oauth-flow.ts';
import { ADMIN } from './world.ts';

// The web admin's HTML forms over plain HTTP (no browser): hidden fields, form posts, sign-in.

/** The value of a hidden (or any) input named `name` in a page; '' when there is none. */
export const hidden = (html: string, name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? '';

/** A urlencoded POST of `fields`, as a browser submits a form. */
export const form = (fields: Record<string, string>) => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams(fields).toString(),
});

/** A browser signed in to the web admin as `user` (the web world's admin by default). */
export async function signedIn(web: TestApp, user: { email: string; password: string } = ADMIN): Promise<Browser> {
  const b = new Browser();
  const page = await (await b.fetch(`${web.baseUrl}/app/sign-in`)).text();
  const r = await b.fetch(
    `${web.baseUrl}/app/sign-in`,
    form({ csrf: hidden(page, 'csrf'), next: '/app', email: user.email, password: user.password }),
  );
  assert.equal(r.status, 303);
  return b;
}
