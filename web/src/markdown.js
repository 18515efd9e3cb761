// Formatting in messages (issue 31 part 5): a Markdown subset, rendered
// safely. marked's lexer reads the text into tokens; this file builds the
// DOM from those tokens itself, with createElement and text nodes, and an
// allow-list of what it draws: paragraphs, line breaks, emphasis (em,
// strong, del), code spans, fenced and indented code blocks, quotes, lists
// and links. No HTML string is ever parsed, so no markup in a message can
// become an element or an attribute: raw HTML (inline or a block), images,
// headings, tables and anything else the lexer knows and this file does
// not, show as the text that was typed. A link keeps only an http(s) or
// mailto URL (javascript:, data:, vbscript:, relative and every other
// scheme are drawn as plain text) and opens apart from the chat with
// rel="noopener noreferrer nofollow". The server stores the text as sent.

import { Lexer } from 'marked';
import { h } from './dom.js';

const options = { gfm: true, breaks: true };

/** safeHref returns the URL when it is http(s) or mailto, absolute; else null. */
export function safeHref(href) {
  if (typeof href !== 'string') return null;
  // Control characters and spaces inside a scheme are how "java\tscript:"
  // slips past a naive check: the URL parser strips them, so check its result.
  let u;
  try {
    u = new URL(href);
  } catch {
    return null; // relative, or not a URL at all
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:' && u.protocol !== 'mailto:') return null;
  return u.href;
}

/** link draws a link token: an allowed URL opens in a new tab; any other is text. */
function link(t) {
  const children = inline(t.tokens || [{ type: 'text', text: t.text }]);
  const href = safeHref(t.href);
  if (!href) return h('span', { class: 'md-refused' }, t.raw || t.text);
  // An autolink keeps the text as written (the parser may add http://).
  return h('a', { href, target: '_blank', rel: 'noopener noreferrer nofollow' }, ...children);
}

/** inline draws inline tokens. */
function inline(tokens) {
  const out = [];
  for (const t of tokens || []) {
    switch (t.type) {
      case 'text':
        // A text token of a tight list item holds inline tokens of its own.
        if (t.tokens) out.push(...inline(t.tokens));
        else out.push(t.text);
        break;
      case 'escape':
        out.push(t.text);
        break;
      case 'strong':
        out.push(h('strong', {}, ...inline(t.tokens)));
        break;
      case 'em':
        out.push(h('em', {}, ...inline(t.tokens)));
        break;
      case 'del':
        out.push(h('del', {}, ...inline(t.tokens)));
        break;
      case 'codespan':
        out.push(h('code', {}, t.text));
        break;
      case 'br':
        out.push(h('br', {}));
        break;
      case 'link':
        out.push(link(t));
        break;
      default:
        // html, image and whatever else: the text as typed.
        out.push(t.raw != null ? t.raw : t.text || '');
    }
  }
  return out;
}

/** block draws block tokens. */
function block(tokens) {
  const out = [];
  for (const t of tokens || []) {
    switch (t.type) {
      case 'space':
        break;
      case 'paragraph':
        out.push(h('p', {}, ...inline(t.tokens)));
        break;
      case 'text':
        out.push(h('p', {}, ...(t.tokens ? inline(t.tokens) : [t.text])));
        break;
      case 'code':
        out.push(h('pre', {}, h('code', t.lang ? { dataset: { lang: String(t.lang).slice(0, 32) } } : {}, t.text)));
        break;
      case 'blockquote':
        out.push(h('blockquote', {}, ...block(t.tokens)));
        break;
      case 'list': {
        const attrs = {};
        if (t.ordered && Number.isInteger(Number(t.start)) && Number(t.start) !== 1) attrs.start = String(Number(t.start));
        out.push(h(t.ordered ? 'ol' : 'ul', attrs, ...t.items.map((it) => h('li', {}, ...listItem(it)))));
        break;
      }
      default:
        // html blocks, headings, tables, rules: the text as typed.
        out.push(h('p', { class: 'md-plain' }, (t.raw || t.text || '').replace(/\n+$/, '')));
    }
  }
  return out;
}

/** listItem draws an item: a tight one's text inline, a loose one's as paragraphs. */
function listItem(it) {
  const out = [];
  for (const t of it.tokens || []) {
    if (t.type === 'text' && !it.loose) out.push(...(t.tokens ? inline(t.tokens) : [t.text]));
    else out.push(...block([t]));
  }
  return out;
}

/** plain tells text that needs no parsing: no Markdown character, no URL, one line. */
const special = /[*_`~[\]<>#\\|!&\n:]|^\s*(?:[-+]|\d+[.)])\s|^ {4}/;

/**
 * renderMarkdown returns the nodes of a message body. Every string in it
 * comes from the lexer's tokens and enters the page as a text node.
 */
export function renderMarkdown(text) {
  if (!special.test(text)) return [h('p', {}, text)];
  let tokens;
  try {
    tokens = Lexer.lex(text, options);
  } catch {
    return [h('p', {}, text)];
  }
  const nodes = block(tokens);
  return nodes.length ? nodes : [h('p', {}, text)];
}
