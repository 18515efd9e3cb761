// The files test: alice attaches an image and a text file in the
// composer and sends them with a message; bob sees the image's preview
// and the file's chip live, and downloads the file. Each step waits for
// the other page's DOM to change (bounded in time), never for a fixed
// delay.
//
// Run from web/: node --test test/files.test.mjs (PARLEY_BIN may name a
// built binary; otherwise the test builds one).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { deflateSync, crc32 } from 'node:zlib';
import { Server, launchBrowser, parleyBinary, tempDir } from './harness.mjs';
import { person, until, signUp, api, twoInRoom, openRoom, shot } from './pages.mjs';

let tmp, server, browser;

before(async () => {
  tmp = tempDir('parley-web-files-');
  server = new Server(parleyBinary(tmp.dir), join(tmp.dir, 'data'));
  await server.start();
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close().catch(() => {});
  if (server) await server.stop().catch(() => {});
  if (tmp) tmp.cleanup();
});

/** png makes a w×h PNG of one colour (RGB, no filter). */
function png(w, h, [r, g, b]) {
  const chunk = (type, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(td));
    return Buffer.concat([len, td, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  const row = Buffer.alloc(1 + 3 * w);
  for (let x = 0; x < w; x++) row.set([r, g, b], 1 + 3 * x);
  const raw = Buffer.concat(Array.from({ length: h }, () => row));
  return Buffer.concat([Buffer.from('\x89PNG\r\n\x1a\n', 'latin1'), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

test('alice sends an image and a text file; bob sees the preview and downloads the file', async () => {
  const { people: [alice, bob], room: { id: roomId } } = await twoInRoom(browser, server.url, { title: 'Files' });

  const notes = 'shopping list\n- bread\n- tea\n';
  await alice.page.setInputFiles('#attach-input', [
    { name: 'sunset.png', mimeType: 'image/png', buffer: png(800, 600, [230, 120, 40]) },
    { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from(notes) },
  ]);
  await until(alice.page, 'two chips uploaded', () => {
    const chips = [...document.querySelectorAll('#attachments .attach-chip')];
    return chips.length === 2 && chips.every((c) => !c.classList.contains('pending') && !c.classList.contains('failed'));
  });
  await alice.page.fill('#composer-input', 'holiday pictures');
  await alice.page.press('#composer-input', 'Enter');
  await until(alice.page, 'the chips are gone once sent', () => document.getElementById('attachments').hidden);

  for (const p of [alice, bob]) {
    await until(p.page, `${p.name} sees the preview`, () => {
      const img = document.querySelector('#messages li[data-seq] img.file-preview');
      return img && img.complete && img.naturalWidth === 320 && img.naturalHeight === 240;
    });
    await until(p.page, `${p.name} sees the file chip`, () =>
      [...document.querySelectorAll('#messages li[data-seq] .file-chip .file-name')].some((e) => e.textContent === 'notes.txt'));
  }
  // The message as the API has it.
  const page = await api(bob, 'GET', `/api/rooms/${roomId}/messages`);
  const m = page.data.messages[0];
  assert.equal(m.body, 'holiday pictures');
  assert.deepEqual(m.files.map((f) => [f.name, f.type, !!f.preview]), [['sunset.png', 'image/png', true], ['notes.txt', 'text/plain; charset=utf-8', false]]);

  // bob downloads the text file.
  const [download] = await Promise.all([
    bob.page.waitForEvent('download'),
    bob.page.click('#messages .file-chip'),
  ]);
  assert.equal(download.suggestedFilename(), 'notes.txt');
  assert.equal(readFileSync(await download.path(), 'utf8'), notes);
  await shot(bob.page, 'files.png');
  for (const p of [alice, bob]) assert.deepEqual(p.errors, [], `${p.name}'s page errors`);
});

test('a file alone, pasted into the composer, is sent without text', async () => {
  const carol = await person(browser, 'carol', server.url);
  await signUp(carol);
  const created = await api(carol, 'POST', '/api/rooms', { kind: 'group', title: 'Paste' });
  await openRoom(carol, created.data.id);
  await carol.page.evaluate(async (b64) => {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const dt = new DataTransfer();
    dt.items.add(new File([bytes], 'clip.png', { type: 'image/png' }));
    document.getElementById('composer-input').dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
  }, png(40, 30, [0, 100, 200]).toString('base64'));
  await until(carol.page, 'the pasted image uploaded', () => {
    const c = document.querySelector('#attachments .attach-chip');
    return c && !c.classList.contains('pending');
  });
  await carol.page.press('#composer-input', 'Enter');
  await until(carol.page, 'the image is shown', () => {
    const img = document.querySelector('#messages li[data-seq] img.file-preview');
    return img && img.complete && img.naturalWidth === 40;
  });
  assert.deepEqual(carol.errors, []);
});
