// The account's own data (docs/api.md, "Your own data"): "Download my
// data" saves GET /api/me/export as a file; "Delete my account" asks for
// the password in a small dialog, then DELETE /api/me ends the session
// here (and the server ends it in every other tab and device).

import { ApiError } from './api.js';
import { $, setText } from './dom.js';

/** bindAccount wires the two account buttons and the dialog to app. */
export function bindAccount(app) {
  $('download-data').addEventListener('click', () => download(app));
  const dialog = $('delete-dialog');
  const err = $('delete-error');
  $('delete-account').addEventListener('click', () => {
    $('delete-password').value = '';
    setText(err, '');
    dialog.showModal();
    $('delete-password').focus();
  });
  $('delete-cancel').addEventListener('click', () => dialog.close());
  $('delete-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const password = $('delete-password').value;
    if (!password) { setText(err, 'Enter your password.'); return; }
    setText(err, 'Deleting…');
    try {
      await app.api.deleteMe(password);
    } catch (e) {
      // An account of an outside identity (OpenID Connect, JWT) has no
      // password: the server says so, and that is what to show.
      setText(err, e.code === 'forbidden' && !isExternal(app.me) ? 'Wrong password: nothing was deleted.' : 'Could not delete the account: ' + e.message);
      return;
    }
    dialog.close();
    app.logout('Your account is deleted: its sessions are over and your messages are gone.');
  });
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
