// Files and attachments (docs/files.md): the composer's attach button,
// paste and drop of files, each uploaded at once (shown as a chip,
// "uploading…" until the server has it), sent with the message as its
// files; and a message's files drawn under its text: an image's preview,
// opened full size on click, any other file a chip that downloads it.
//
// The API takes the token in the Authorization header only (no cookie,
// no token in a URL), so files are fetched with it and shown from blob:
// URLs, never linked to directly.

import { $, h, setText } from './dom.js';

/** size is a byte count in words: 532 B, 12 KB, 3.4 MB. */
export function size(n) {
  if (n < 1000) return n + ' B';
  if (n < 1e6) return Math.round(n / 1000) + ' KB';
  return (n / 1e6).toFixed(n < 1e7 ? 1 : 0) + ' MB';
}

/** upload posts one file into a room and returns {id, name, type, size, preview}. */
export async function upload(api, roomId, file) {
  let res;
  try {
    res = await fetch('/api/rooms/' + encodeURIComponent(roomId) + '/files', {
      method: 'POST',
      headers: {
        Authorization: 'Bearer ' + api.token,
        'Content-Type': file.type || 'application/octet-stream',
        'X-Filename': encodeURIComponent(file.name || 'pasted'),
      },
      body: file,
    });
  } catch {
    throw new Error('the server cannot be reached');
  }
  const data = await res.json().catch(() => null);
  if (!res.ok) throw new Error((data && data.error && data.error.message) || res.statusText);
  return data;
}

/** blobURL fetches a file (or its preview) with the token and returns a blob: URL of it. */
export async function blobURL(api, id, preview = false) {
  const res = await fetch('/api/files/' + encodeURIComponent(id) + (preview ? '/preview' : ''), {
    headers: { Authorization: 'Bearer ' + api.token },
  });
  if (!res.ok) throw new Error('file ' + res.status);
  return URL.createObjectURL(await res.blob());
}

/** download saves a file under its name. */
async function download(api, f) {
  const url = await blobURL(api, f.id);
  const a = h('a', { href: url, download: f.name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** openImage shows an image full size in a new tab (from a blob: URL). */
async function openImage(api, f) {
  const url = await blobURL(api, f.id);
  window.open(url, '_blank', 'noopener');
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** renderFiles draws a message's files: previews of images, chips of the rest. */
export function renderFiles(api, files) {
  if (!files || files.length === 0) return null;
  const box = h('div', { class: 'msg-files' });
  for (const f of files) {
    if (f.preview) {
      const img = h('img', { class: 'file-preview', alt: f.name, title: f.name + ' · ' + size(f.size), dataset: { file: f.id } });
      img.addEventListener('click', () => openImage(api, f).catch(() => {}));
      blobURL(api, f.id, true).then((u) => { img.src = u; }).catch(() => img.classList.add('broken'));
      box.append(img);
    } else {
      box.append(h('button', {
        type: 'button', class: 'file-chip', dataset: { file: f.id }, title: 'Download ' + f.name,
        onclick: () => download(api, f).catch(() => {}),
      }, '⇩ ', h('span', { class: 'file-name' }, f.name), h('span', { class: 'file-size' }, ' ' + size(f.size))));
    }
  }
  return box;
}

/**
 * Attachments are the composer's uploads waiting for the next send: each
 * a chip "name · uploading…", then "name ×" once the server has it.
 */
export class Attachments {
  constructor(app) {
    this.app = app;
    this.items = []; // {file, chip, done: {id,...} | null, failed}
    this.box = $('attachments');
    const input = $('attach-input');
    $('attach-button').addEventListener('click', () => input.click());
    input.addEventListener('change', () => {
      for (const f of input.files) this.add(f);
      input.value = '';
    });
    const composer = $('composer');
    $('composer-input').addEventListener('paste', (ev) => {
      const fs = [...(ev.clipboardData?.files || [])];
      if (fs.length === 0) return;
      ev.preventDefault();
      for (const f of fs) this.add(f);
    });
    composer.addEventListener('dragover', (ev) => {
      if (ev.dataTransfer?.types?.includes('Files')) ev.preventDefault();
    });
    composer.addEventListener('drop', (ev) => {
      const fs = [...(ev.dataTransfer?.files || [])];
      if (fs.length === 0) return;
      ev.preventDefault();
      for (const f of fs) this.add(f);
    });
  }

  /** add uploads file into the open room and shows its chip. */
  add(file) {
    const view = this.app.view;
    if (!view) return;
    const label = h('span', { class: 'attach-state' }, 'uploading…');
    const item = { file, done: null, failed: false, roomId: view.roomId };
    item.chip = h('li', { class: 'attach-chip pending' }, h('span', { class: 'file-name' }, file.name || 'pasted'), ' ', label,
      h('button', { type: 'button', class: 'link-button', 'aria-label': 'Remove ' + (file.name || 'file'), onclick: () => this.remove(item) }, '×'));
    this.items.push(item);
    this.box.append(item.chip);
    this.box.hidden = false;
    upload(this.app.api, view.roomId, file).then((f) => {
      item.done = f;
      item.chip.classList.remove('pending');
      setText(label, size(f.size));
    }, (e) => {
      item.failed = true;
      item.chip.classList.replace('pending', 'failed');
      setText(label, 'not uploaded: ' + e.message);
    });
  }

  remove(item) {
    this.items = this.items.filter((x) => x !== item);
    item.chip.remove();
    this.box.hidden = this.items.length === 0;
  }

  /** busy says an upload is still running: the send waits for it. */
  busy() { return this.items.some((x) => !x.done && !x.failed); }

  /** take returns the uploaded files of roomId for a send and clears the composer's chips. */
  take(roomId) {
    const files = this.items.filter((x) => x.done && x.roomId === roomId).map((x) => x.done);
    for (const x of this.items) x.chip.remove();
    this.items = [];
    this.box.hidden = true;
    return files;
  }

  /** clear drops the chips (another room was opened). */
  clear() { this.take(''); }
}
