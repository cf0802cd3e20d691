// A small, safe Markdown renderer for the model's text. Every byte of the input is hostile:
// the whole text is HTML-escaped first, and only the markup made here from the escaped text
// reaches innerHTML. Supported: paragraphs, ATX headings, fenced code (an unclosed fence
// while the text still streams runs to the end), inline code, bold, italic, bullet and
// numbered lists, block quotes, and links (written `[text](url)` or bare) to http and https
// only, opened in a new tab with rel="noopener noreferrer". Anything else stays text.

const ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text made safe for HTML element content and quoted attribute values. */
export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

// Private-use characters delimit placeholders for code spans and links; any in the input
// are replaced first, so the input cannot forge one.
const MARK = '\uE000';
const MARK_END = '\uE001';
const FORGED = /[\uE000\uE001]/g;

/** Inline markup of one escaped line or paragraph. */
function inline(escaped) {
  const held = [];
  const hold = (html) => {
    held.push(html);
    return `${MARK}${held.length - 1}${MARK_END}`;
  };
  let s = escaped;
  // Code spans first: nothing inside them is markup.
  s = s.replace(/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g, (_, _ticks, code) =>
    hold(`<code>${code.trim() === '' ? code : code.replace(/^ (.*) $/, '$1')}</code>`),
  );
  // Links written [text](url): http and https only; others stay text.
  s = s.replace(/\[([^\]\n]{1,500})\]\((https?:\/\/[^\s()<>\uE000\uE001]+?)\)/gi, (_, label, url) =>
    hold(`<a href="${url}" target="_blank" rel="noopener noreferrer">${emphasis(label)}</a>`),
  );
  // Bare http(s) URLs (the escaped text has no quotes or angle brackets left).
  s = s.replace(/\bhttps?:\/\/(?:(?!&(?:lt|gt|quot|#39);)[^\s<>\uE000\uE001])+/gi, (url) => {
    // Trailing punctuation is the sentence's, not the URL's.
    const m = url.match(/^(.*?)([.,;:!?)\]]*)$/);
    const [link, tail] = m ? [m[1], m[2]] : [url, ''];
    if (!/^https?:\/\/[^/]/i.test(link)) return url;
    return hold(`<a href="${link}" target="_blank" rel="noopener noreferrer">${link}</a>`) + tail;
  });
  s = emphasis(s);
  // Placeholders may nest (a code span inside a link label): restore until none is left.
  const back = new RegExp(`${MARK}(\\d+)${MARK_END}`, 'g');
  for (let i = 0; i < 3 && s.includes(MARK); i += 1) s = s.replace(back, (_, n) => held[Number(n)]);
  return s;
}

/** Bold and italic on escaped text. Underscores only at word edges (snake_case stays). */
function emphasis(s) {
  return s
    .replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, '<strong>$1</strong>')
    .replace(/(^|[^\w])__(?=\S)([\s\S]*?\S)__(?!\w)/g, '$1<strong>$2</strong>')
    .replace(/(^|[^*\w])\*(?=[^\s*])([^*]*?[^\s*])\*(?!\*)/g, '$1<em>$2</em>')
    .replace(/(^|[^\w])_(?=[^\s_])([^_]*?[^\s_])_(?!\w)/g, '$1<em>$2</em>');
}

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$/;
const BULLET = /^( {0,3})[-*+]\s+(.*)$/;
const NUMBERED = /^( {0,3})(\d{1,9})[.)]\s+(.*)$/;
const QUOTE = /^ {0,3}&gt;\s?(.*)$/;
const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;

/** `source` (untrusted Markdown) as HTML that is safe to assign to innerHTML. */
export function renderMarkdown(source) {
  const lines = escapeHtml(String(source ?? '').replace(FORGED, '\uFFFD'))
    .replace(/\r\n?/g, '\n')
    .split('\n');
  const out = [];
  let para = [];
  const flush = () => {
    if (para.length) out.push(`<p>${inline(para.join('\n')).replace(/\n/g, '<br>')}</p>`);
    para = [];
  };
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(FENCE);
    if (fence) {
      flush();
      const closer = new RegExp(`^ {0,3}${fence[1][0] === '`' ? '`' : '~'}{${fence[1].length},}\\s*$`);
      const body = [];
      i += 1;
      while (i < lines.length && !closer.test(lines[i])) body.push(lines[i++]);
      i += 1; // the closing fence (or the end while it streams)
      const lang = fence[2] ? ` data-lang="${fence[2]}"` : '';
      out.push(`<pre${lang}><code>${body.join('\n')}</code></pre>`);
      continue;
    }
    const heading = line.match(HEADING);
    if (heading) {
      flush();
      const level = heading[1].length;
      out.push(`<h${level}>${inline(heading[2])}</h${level}>`);
      i += 1;
      continue;
    }
    if (RULE.test(line) && !para.length) {
      out.push('<hr>');
      i += 1;
      continue;
    }
    if (BULLET.test(line) || NUMBERED.test(line)) {
      flush();
      const ordered = !BULLET.test(line);
      const pattern = ordered ? NUMBERED : BULLET;
      const items = [];
      let start = ordered ? Number(line.match(NUMBERED)[2]) : 1;
      while (i < lines.length) {
        const m = lines[i].match(pattern);
        if (m) {
          items.push(ordered ? m[3] : m[2]);
        } else if (items.length && /^\s{2,}\S/.test(lines[i])) {
          items[items.length - 1] += `\n${lines[i].trim()}`; // a continuation line
        } else {
          break;
        }
        i += 1;
      }
      const lis = items.map((it) => `<li>${inline(it).replace(/\n/g, '<br>')}</li>`).join('');
      if (ordered) {
        out.push(`<ol${start !== 1 ? ` start="${start}"` : ''}>${lis}</ol>`);
      } else {
        out.push(`<ul>${lis}</ul>`);
      }
      start = 1;
      continue;
    }
    if (QUOTE.test(line)) {
      flush();
      const quoted = [];
      while (i < lines.length && QUOTE.test(lines[i])) quoted.push(lines[i++].match(QUOTE)[1]);
      out.push(`<blockquote>${inline(quoted.join('\n')).replace(/\n/g, '<br>')}</blockquote>`);
      continue;
    }
    if (line.trim() === '') {
      flush();
    } else {
      para.push(line);
    }
    i += 1;
  }
  flush();
  return out.join('');
}
