// The ways in (docs/api.md, "Signing in with OpenID Connect"): GET
// /api/config says whether passwords are on and which OpenID provider
// there is; the "Sign in with …" button is a link to the server's start
// route. After the provider, the server sends the browser back to #oidc
// (the token waits in an HttpOnly cookie, taken once by POST
// /api/auth/oidc/session) or to #oidc-error=<message>.

import { $, setText } from './dom.js';

/**
 * finishOIDC ends a sign-in the server sent back here: {token, user} after
 * #oidc, {error} after #oidc-error=… or a failed hand-off, {} otherwise.
 * The fragment is removed either way, so a reload does not repeat it.
 */
export async function finishOIDC(api) {
  const hash = location.hash;
  if (hash !== '#oidc' && !hash.startsWith('#oidc-error=')) return {};
  history.replaceState(null, '', location.pathname + location.search);
  if (hash !== '#oidc') {
    let msg = hash.slice('#oidc-error='.length);
    try {
      msg = decodeURIComponent(msg.replace(/\+/g, ' '));
    } catch {
      // not valid percent-encoding: show it as it is
    }
    return { error: 'Sign-in failed: ' + msg };
  }
  try {
    return await api.oidcSession();
  } catch (e) {
    return { error: 'Sign-in failed: ' + e.message };
  }
}

/**
 * showMethods shows the ways in the server offers: the OpenID button when
 * it has a provider, the password form unless passwords are off. It asks
 * the server once per page.
 */
let methods = null;
export async function showMethods(api) {
  if (!(await loadMethods(api))) return; // the server cannot be reached: leave the form as it is
  const oidc = methods.oidc;
  $('oidc-signin').hidden = !oidc;
  if (oidc) {
    const a = $('oidc-button');
    a.href = oidc.start;
    setText(a, 'Sign in with ' + oidc.name);
  }
  const passwords = methods.password_login !== false;
  for (const el of document.querySelectorAll('#auth .password-only')) el.hidden = !passwords;
  $('auth-or').hidden = !(passwords && oidc);
  if (!passwords && oidc) $('oidc-button').focus();
}

/** loadMethods asks the server for its ways in, once per page: false when it cannot. */
async function loadMethods(api) {
  if (!methods) {
    try {
      methods = await api.config();
    } catch {
      return false;
    }
  }
  return true;
}

/** oidcStart returns the URL that starts an OpenID Connect sign-in, '' when the server has no provider. */
export async function oidcStart(api) {
  return (await loadMethods(api)) && methods.oidc ? methods.oidc.start : '';
}
