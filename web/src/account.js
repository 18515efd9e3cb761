// The account's own data (docs/api.md, "Your own data"): "Download my
// data" saves GET /api/me/export as a file; "Delete my account" asks for
// the password in a small dialog, then DELETE /api/me ends the session
// here (and the server ends it in every other tab and device). An account
// with no password (OpenID Connect, JWT) is asked for none: the server
// takes a token of a recent sign-in instead, and when this one's is older
// (403 "sign in again …") the dialog offers "Sign in again" (the OpenID
// provider, when the server has one), which comes back here with the
// dialog open again (deleteAfterSignIn), a fresh token in hand.

import { ApiError } from './api.js';
import { $, setText } from './dom.js';
import { oidcStart } from './signin.js';

/** deleteAfterSignIn marks, across the provider's round trip, a sign-in made to delete the account. */
const deleteAfterSignIn = 'parley.delete-after-signin';

/** bindAccount wires the two account buttons and the dialog to app. */
export function bindAccount(app) {
  $('download-data').addEventListener('click', () => download(app));
  const dialog = $('delete-dialog');
  const err = $('delete-error');
  $('delete-account').addEventListener('click', () => openDelete(app));
  $('delete-cancel').addEventListener('click', () => dialog.close());
  $('delete-signin').addEventListener('click', () => sessionStorage.setItem(deleteAfterSignIn, '1'));
  $('delete-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const external = isExternal(app.me);
    const password = $('delete-password').value;
    if (!external && !password) { setText(err, 'Enter your password.'); return; }
    setText(err, 'Deleting…');
    try {
      await app.api.deleteMe(external ? undefined : password);
    } catch (e) {
      if (external && e.code === 'forbidden' && /sign in again/.test(e.message)) {
        await offerSignIn(app);
        return;
      }
      setText(err, e.code === 'forbidden' && !external ? 'Wrong password: nothing was deleted.' : 'Could not delete the account: ' + e.message);
      return;
    }
    dialog.close();
    app.logout('Your account is deleted: its sessions are over and your messages are gone.');
  });
}

/** openDelete opens the delete dialog, with the password field for a password account only. */
function openDelete(app) {
  const external = isExternal(app.me);
  $('delete-password').value = '';
  $('delete-password-row').hidden = external;
  $('delete-signin-hint').hidden = !external;
  $('delete-signin-row').hidden = true;
  setText($('delete-error'), '');
  $('delete-dialog').showModal();
  (external ? $('delete-confirm') : $('delete-password')).focus();
}

/**
 * offerSignIn says that the sign-in is too old to delete the account and
 * shows "Sign in again" when the server has an OpenID provider (a JWT's
 * issuer is outside the page: the user gets a fresh token there).
 */
async function offerSignIn(app) {
  const start = await oidcStart(app.api);
  $('delete-signin-row').hidden = !start;
  if (start) $('delete-signin').href = start;
  setText($('delete-error'), start
    ? 'Nothing was deleted: sign in again to confirm it is you, then delete.'
    : 'Nothing was deleted: sign in again at your identity provider, then delete with the new token.');
}

/** resumeDelete opens the delete dialog again after a sign-in made for it (app.js calls it once signed in). */
export function resumeDelete(app) {
  if (!sessionStorage.getItem(deleteAfterSignIn)) return;
  sessionStorage.removeItem(deleteAfterSignIn);
  if (isExternal(app.me)) openDelete(app);
}

/** isExternal reports whether u is an outside identity's account (chat.IsExternalUser): "x" and 26 characters. */
function isExternal(u) {
  return !!u && u.id.length === 27 && u.id[0] === 'x';
}

/** download fetches the export with the token and saves it as the server names it. */
async function download(app) {
  const banner = (text) => app.showBanner(text);
  try {
    const res = await fetch('/api/me/export', { headers: { Authorization: 'Bearer ' + app.api.token }, cache: 'no-store' });
    if (!res.ok) throw new ApiError(res.status, 'http_' + res.status, res.statusText || 'request failed');
    const blob = await res.blob();
    const m = /filename="([^"]+)"/.exec(res.headers.get('Content-Disposition') || '');
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = m ? m[1] : 'parley-export.jsonl';
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 60000);
  } catch (e) {
    banner('Could not download your data: ' + e.message);
  }
}
