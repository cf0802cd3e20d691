// The page's markdown renderer on hostile and ordinary text: `node --test tests/web/`.
// (scripts/web-e2e.sh runs it before the browser test.)

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderMarkdown as md, escapeHtml } from '../../crates/serve/assets/markdown.js';

// Text cannot hold a raw `<` (it is escaped), so every `<…>` in the output is a tag, and
// each must be one of these exact shapes: no other element, no other attribute.
const TAG = new RegExp(
  '^(?:</?(?:p|strong|em|code|pre|ul|ol|li|h[1-6]|blockquote)>|<br>|<hr>|<ol start="\\d+">|<pre data-lang="[\\w+#.-]+">'
    + '|<a href="https?://[^"<>\\s]+" target="_blank" rel="noopener noreferrer">|</a>)$',
);

const HOSTILE = [
  '<img src=x onerror=alert(1)>',
  '<script>alert(1)</script>',
  '"><svg onload=alert(1)>',
  '[x](javascript:alert(1))',
  '[x](JAVASCRIPT:alert(1))',
  '[x](data:text/html,<script>alert(1)</script>)',
  '[x](https://a.example" onmouseover="alert(1))',
  "[x](https://a.example' onmouseover='alert(1))",
  'https://a.example/"onmouseover=alert(1)//',
  '**<b>x</b>**',
  '`</code><script>alert(1)</script>`',
  '```\n</pre><script>alert(1)</script>\n```',
  '```"><img src=x onerror=alert(1)>\ncode\n```',
  '# <iframe src=//evil>',
  '- <a href=javascript:alert(1)>x</a>',
  '\uE0000\uE001<script>',
  '&lt;script&gt; already escaped',
  '[**x**](https://a.example/`y`)',
];

test('hostile text never becomes markup', () => {
  for (const input of HOSTILE) {
    const html = md(input);
    for (const [tag] of html.matchAll(/<[^>]*>?/g)) {
      assert.match(tag, TAG, `${JSON.stringify(input)} made ${tag}: ${html}`);
    }
    assert.doesNotMatch(html.replace(/<[^>]*>/g, ''), /[<>"]/, `raw markup characters left in the text: ${html}`);
  }
});

test('escapeHtml escapes the five characters', () => {
  assert.equal(escapeHtml(`<a href="x" title='y'>&</a>`), '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;');
});

test('the supported markup', () => {
  assert.equal(md('You said: **bold** and `code`'), '<p>You said: <strong>bold</strong> and <code>code</code></p>');
  assert.equal(md('*it* and _it_ but snake_case_name'), '<p><em>it</em> and <em>it</em> but snake_case_name</p>');
  assert.equal(md('## Title'), '<h2>Title</h2>');
  assert.equal(md('# Learn C#'), '<h1>Learn C#</h1>');
  assert.equal(md('### closed ###'), '<h3>closed</h3>');
  assert.equal(md('#not a heading'), '<p>#not a heading</p>');
  assert.equal(md('- a\n- **b**'), '<ul><li>a</li><li><strong>b</strong></li></ul>');
  assert.equal(md('3. c\n4. d'), '<ol start="3"><li>c</li><li>d</li></ol>');
  assert.equal(md('```js\nlet a = 1 < 2;\n```'), '<pre data-lang="js"><code>let a = 1 &lt; 2;</code></pre>');
  assert.equal(md('one\ntwo\n\nthree'), '<p>one<br>two</p><p>three</p>');
  assert.equal(md('> quoted'), '<blockquote>quoted</blockquote>');
  assert.equal(md('`**not bold**`'), '<p><code>**not bold**</code></p>');
});

test('links: http and https only, in a new tab without referrer', () => {
  assert.equal(
    md('[docs](https://example.com/a?b=1&c=2)'),
    '<p><a href="https://example.com/a?b=1&amp;c=2" target="_blank" rel="noopener noreferrer">docs</a></p>',
  );
  assert.equal(
    md('see https://example.com/x.'),
    '<p>see <a href="https://example.com/x" target="_blank" rel="noopener noreferrer">https://example.com/x</a>.</p>',
  );
  assert.equal(md('[x](ftp://example.com)'), '<p>[x](ftp://example.com)</p>');
  assert.equal(md('[x](javascript:alert(1))'), '<p>[x](javascript:alert(1))</p>');
});

test('text still streaming renders as it stands', () => {
  assert.equal(md('```\nunclosed'), '<pre><code>unclosed</code></pre>');
  assert.equal(md('**half'), '<p>**half</p>');
  assert.equal(md('`half'), '<p>`half</p>');
});

test('random mixes of markup characters keep the same shapes', () => {
  const pieces = ['<', '>', '"', "'", '&', '`', '``', '*', '**', '_', '__', '[', ']', '(', ')', '#', '- ', '1. ', '> ', '\n', '\n\n', '```', ' ',
    'https://', 'http://a.example/', 'javascript:', 'x', 'onerror=', 'img', '\uE000', '\uE001', '0', ';', '&quot;'];
  let seed = 12345;
  const rand = (n) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  for (let i = 0; i < 3000; i += 1) {
    let input = '';
    for (let j = rand(30); j >= 0; j -= 1) input += pieces[rand(pieces.length)];
    const html = md(input);
    for (const [tag] of html.matchAll(/<[^>]*>?/g)) {
      assert.match(tag, TAG, `${JSON.stringify(input)} made ${tag}: ${html}`);
    }
    assert.doesNotMatch(html.replace(/<[^>]*>/g, ''), /[<>"\uE000\uE001]/, `${JSON.stringify(input)} left raw characters: ${html}`);
  }
});
