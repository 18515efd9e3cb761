// The small dialog that confirms a destructive action (leave, delete,
// remove, ban): a title, a sentence, the action's own word on a red
// button and Cancel, which has the focus (Enter or Escape does no harm).

import { $, setText } from './dom.js';

let pending = null; // the resolve of the question on screen

/**
 * confirmAction asks; it resolves true when the action's button is
 * pressed, false on Cancel, Escape or a click outside.
 */
export function confirmAction({ title, text = '', ok = 'OK' }) {
  const dialog = $('confirm-dialog');
  if (pending) pending(false);
  setText($('confirm-title'), title);
  setText($('confirm-text'), text);
  setText($('confirm-ok'), ok);
  dialog.returnValue = '';
  return new Promise((resolve) => {
    pending = resolve;
    const done = () => {
      dialog.removeEventListener('close', done);
      if (pending === resolve) pending = null;
      resolve(dialog.returnValue === 'ok');
    };
    dialog.addEventListener('close', done);
    dialog.showModal();
    $('confirm-cancel').focus();
  });
}

/** bindConfirm wires the dialog's buttons once. */
export function bindConfirm() {
  const dialog = $('confirm-dialog');
  $('confirm-ok').addEventListener('click', () => dialog.close('ok'));
  $('confirm-cancel').addEventListener('click', () => dialog.close('cancel'));
  // A click on the backdrop (outside the form) cancels.
  dialog.addEventListener('click', (e) => {
    if (e.target === dialog) dialog.close('cancel');
  });
}
