//! The model's answer as markdown: parses with `pulldown-cmark` into width-independent blocks
//! (styled logical lines, rules and tables), which [`layout`] wraps to the screen width at
//! render time. Parsing happens once per text delta; only wrapping happens per frame.
//!
//! Code blocks are shown as boxed plain text, never highlighted (no syntax highlighter, which
//! would mean a C build). Links are shown as their text followed by the URL, never as OSC 8
//! hyperlinks. Every string taken from the parser is sanitised again, because the parser
//! decodes entities: `&#x1b;` in the source becomes a real ESC in its output.

use pulldown_cmark::{
    Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd, TextMergeStream,
};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use crate::text::{LogicalLine, clean_line, clean_text, truncate, width, wrap};
use crate::theme::Theme;

/// A piece of rendered markdown before wrapping.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum MdBlock {
    Line(LogicalLine),
    /// A horizontal rule, as wide as the screen.
    Rule {
        prefix: Vec<Span<'static>>,
        style: Style,
    },
    Table(MdTable),
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct MdTable {
    prefix: Vec<Span<'static>>,
    aligns: Vec<Alignment>,
    header: Vec<Vec<Span<'static>>>,
    rows: Vec<Vec<Vec<Span<'static>>>>,
    border: Style,
    head: Style,
}

/// Parses markdown into blocks styled by `theme`.
pub(crate) fn parse(markdown: &str, theme: &Theme) -> Vec<MdBlock> {
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut r = Renderer::new(theme);
    // Merged text events: an entity arrives as its own event, and `&#x1b;]0;title&#x07;` must
    // be sanitised as one string for the escape sequence to be recognised whole.
    for ev in TextMergeStream::new(Parser::new_ext(markdown, opts)) {
        r.event(ev);
    }
    r.finish()
}

/// Wraps blocks to `width` cells.
pub(crate) fn layout(blocks: &[MdBlock], width: usize, out: &mut Vec<Line<'static>>) {
    for b in blocks {
        match b {
            MdBlock::Line(l) => wrap(l, width, out),
            MdBlock::Rule { prefix, style } => {
                let pw: usize = prefix.iter().map(|s| s.width()).sum();
                let mut spans = prefix.clone();
                spans.push(Span::styled(
                    "─".repeat(width.saturating_sub(pw).max(1)),
                    *style,
                ));
                out.push(Line::from(spans));
            }
            MdBlock::Table(t) => layout_table(t, width, out),
        }
    }
}

enum Container {
    Quote,
    List { next: Option<u64> },
    Item { marker: String, first: bool },
}

struct CodeBuild {
    lang: String,
    text: String,
}

struct TableBuild {
    aligns: Vec<Alignment>,
    header: Vec<Vec<Span<'static>>>,
    rows: Vec<Vec<Vec<Span<'static>>>>,
    row: Vec<Vec<Span<'static>>>,
    cell: Vec<Span<'static>>,
}

struct Renderer<'t> {
    theme: &'t Theme,
    out: Vec<MdBlock>,
    inline: Vec<Span<'static>>,
    styles: Vec<Style>,
    containers: Vec<Container>,
    /// Open links: their URL and where their text starts in `inline`.
    links: Vec<(String, usize)>,
    code: Option<CodeBuild>,
    table: Option<TableBuild>,
    /// A block ended: the next one starts after a blank row.
    pending_blank: bool,
}

impl<'t> Renderer<'t> {
    fn new(theme: &'t Theme) -> Self {
        Self {
            theme,
            out: Vec::new(),
            inline: Vec::new(),
            styles: Vec::new(),
            containers: Vec::new(),
            links: Vec::new(),
            code: None,
            table: None,
            pending_blank: false,
        }
    }

    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or(self.theme.base)
    }

    fn push_style(&mut self, patch: Style) {
        let s = self.style().patch(patch);
        self.styles.push(s);
    }

    fn push_modifier(&mut self, m: Modifier) {
        let s = self.style().add_modifier(m);
        self.styles.push(s);
    }

    fn in_item(&self) -> bool {
        self.containers
            .iter()
            .any(|c| matches!(c, Container::Item { .. }))
    }

    /// The prefixes for the next row: quote bars and list markers (the marker only on an
    /// item's first row).
    fn prefixes(&mut self) -> (Vec<Span<'static>>, Vec<Span<'static>>) {
        let mut first = Vec::new();
        let mut cont = Vec::new();
        let bar = self.theme.quote_bar;
        let dim = self.theme.dim;
        for c in &mut self.containers {
            match c {
                Container::Quote => {
                    first.push(Span::styled("│ ", bar));
                    cont.push(Span::styled("│ ", bar));
                }
                Container::List { .. } => {}
                Container::Item { marker, first: f } => {
                    let pad = " ".repeat(width(marker));
                    if *f {
                        first.push(Span::styled(marker.clone(), dim));
                        *f = false;
                    } else {
                        first.push(Span::raw(pad.clone()));
                    }
                    cont.push(Span::raw(pad));
                }
            }
        }
        (first, cont)
    }

    fn emit_line(&mut self, spans: Vec<Span<'static>>) {
        let (prefix, cont) = self.prefixes();
        self.out.push(MdBlock::Line(LogicalLine {
            prefix,
            cont,
            spans,
        }));
    }

    fn flush(&mut self) {
        if !self.inline.is_empty() {
            let spans = std::mem::take(&mut self.inline);
            self.emit_line(spans);
        }
    }

    /// A block begins: finish the running line and leave a blank row after the last block.
    fn start_block(&mut self) {
        self.flush();
        if self.pending_blank && !self.out.is_empty() {
            // Only quote bars continue through the gap; list markers must not repeat.
            let bars: Vec<Span<'static>> = self
                .containers
                .iter()
                .filter(|c| matches!(c, Container::Quote))
                .map(|_| Span::styled("│", self.theme.quote_bar))
                .collect();
            self.out.push(MdBlock::Line(LogicalLine::plain(bars)));
        }
        self.pending_blank = false;
    }

    fn push_span(&mut self, span: Span<'static>) {
        if let Some(t) = &mut self.table {
            t.cell.push(span);
        } else {
            self.inline.push(span);
        }
    }

    fn push_text(&mut self, text: &str) {
        if let Some(code) = &mut self.code {
            code.text.push_str(&clean_text(text));
            return;
        }
        let style = self.style();
        // Inline text has no line breaks except in HTML blocks, which keep them.
        let cleaned = clean_text(text);
        let mut parts = cleaned.split('\n').peekable();
        while let Some(part) = parts.next() {
            if !part.is_empty() {
                self.push_span(Span::styled(part.to_string(), style));
            }
            if parts.peek().is_some() && self.table.is_none() {
                self.flush();
            }
        }
    }

    fn event(&mut self, ev: Event<'_>) {
        match ev {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => self.push_text(&t),
            Event::Code(t) => {
                let s = Span::styled(clean_line(&t), self.theme.inline_code);
                self.push_span(s);
            }
            Event::InlineMath(t) | Event::DisplayMath(t) => self.push_text(&t),
            Event::Html(t) | Event::InlineHtml(t) => self.push_text(&t),
            Event::FootnoteReference(t) => {
                let s = format!("[^{}]", clean_line(&t));
                self.push_text(&s);
            }
            Event::SoftBreak => self.push_text(" "),
            Event::HardBreak => self.flush(),
            Event::Rule => {
                self.start_block();
                let (prefix, _) = self.prefixes();
                self.out.push(MdBlock::Rule {
                    prefix,
                    style: self.theme.dim,
                });
                self.pending_blank = true;
            }
            Event::TaskListMarker(done) => {
                let s = if done { "[x] " } else { "[ ] " };
                self.push_span(Span::styled(s, self.theme.dim));
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph | Tag::HtmlBlock => self.start_block(),
            Tag::Heading { level, .. } => {
                self.start_block();
                let st = if level == HeadingLevel::H1 {
                    self.theme.heading1
                } else {
                    self.theme.heading
                };
                self.push_style(st);
                // The hashes stay: without colour they are what tells a heading apart.
                let hashes = format!("{} ", "#".repeat(level as usize));
                self.push_span(Span::styled(hashes, st));
            }
            Tag::BlockQuote(_) => {
                self.start_block();
                self.containers.push(Container::Quote);
                self.push_style(self.theme.quote);
            }
            Tag::CodeBlock(kind) => {
                self.start_block();
                let lang = match kind {
                    CodeBlockKind::Fenced(l) => clean_line(&l),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some(CodeBuild {
                    lang,
                    text: String::new(),
                });
            }
            Tag::List(start) => {
                if self.in_item() {
                    self.flush();
                } else {
                    self.start_block();
                }
                self.containers.push(Container::List { next: start });
            }
            Tag::Item => {
                self.start_block();
                let depth = self
                    .containers
                    .iter()
                    .filter(|c| matches!(c, Container::List { .. }))
                    .count();
                let marker = match self.containers.last_mut() {
                    Some(Container::List { next: Some(n) }) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ if depth > 1 => "◦ ".to_string(),
                    _ => "• ".to_string(),
                };
                self.containers.push(Container::Item {
                    marker,
                    first: true,
                });
            }
            Tag::Table(aligns) => {
                self.start_block();
                self.table = Some(TableBuild {
                    aligns,
                    header: Vec::new(),
                    rows: Vec::new(),
                    row: Vec::new(),
                    cell: Vec::new(),
                });
            }
            Tag::TableHead | Tag::TableRow | Tag::TableCell => {}
            Tag::Emphasis => self.push_modifier(Modifier::ITALIC),
            Tag::Strong => self.push_modifier(Modifier::BOLD),
            Tag::Strikethrough => self.push_modifier(Modifier::CROSSED_OUT),
            Tag::Superscript | Tag::Subscript => self.styles.push(self.style()),
            Tag::Link { dest_url, .. } => {
                self.links.push((clean_line(&dest_url), self.inline.len()));
                self.push_style(self.theme.link);
            }
            Tag::Image { dest_url, .. } => {
                self.links.push((clean_line(&dest_url), self.inline.len()));
                self.push_text("[image: ");
                self.push_style(self.theme.link);
            }
            Tag::FootnoteDefinition(label) => {
                self.start_block();
                let s = format!("[^{}]: ", clean_line(&label));
                self.push_text(&s);
            }
            Tag::DefinitionList | Tag::DefinitionListTitle | Tag::DefinitionListDefinition => {
                self.start_block();
            }
            Tag::MetadataBlock(_) => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock => {
                self.flush();
                self.pending_blank = true;
            }
            TagEnd::Heading(_) => {
                self.flush();
                self.styles.pop();
                self.pending_blank = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.styles.pop();
                self.containers.pop();
                self.pending_blank = true;
            }
            TagEnd::CodeBlock => self.end_code(),
            TagEnd::List(_) => {
                self.flush();
                self.containers.pop();
                if !self.in_item() {
                    self.pending_blank = true;
                }
            }
            TagEnd::Item => {
                self.flush();
                // An empty item still shows its bullet.
                if let Some(Container::Item { first: true, .. }) = self.containers.last() {
                    self.emit_line(Vec::new());
                }
                self.containers.pop();
            }
            TagEnd::TableCell => {
                if let Some(t) = &mut self.table {
                    let cell = std::mem::take(&mut t.cell);
                    t.row.push(cell);
                }
            }
            TagEnd::TableHead => {
                if let Some(t) = &mut self.table {
                    t.header = std::mem::take(&mut t.row);
                }
            }
            TagEnd::TableRow => {
                if let Some(t) = &mut self.table {
                    let row = std::mem::take(&mut t.row);
                    t.rows.push(row);
                }
            }
            TagEnd::Table => {
                if let Some(t) = self.table.take() {
                    let (prefix, _) = self.prefixes();
                    self.out.push(MdBlock::Table(MdTable {
                        prefix,
                        aligns: t.aligns,
                        header: t.header,
                        rows: t.rows,
                        border: self.theme.dim,
                        head: self.theme.bold,
                    }));
                }
                self.pending_blank = true;
            }
            TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Superscript
            | TagEnd::Subscript => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some((url, start)) = self.links.pop() {
                    let shown: String = self
                        .inline
                        .get(start..)
                        .unwrap_or_default()
                        .iter()
                        .map(|s| s.content.as_ref())
                        .collect();
                    // Autolinks show their URL as the text already.
                    if !url.is_empty() && shown != url {
                        self.push_span(Span::styled(format!(" ({url})"), self.theme.url));
                    }
                }
            }
            TagEnd::Image => {
                self.styles.pop();
                let url = self.links.pop().map(|(u, _)| u).unwrap_or_default();
                self.push_text("]");
                if !url.is_empty() {
                    self.push_span(Span::styled(format!(" ({url})"), self.theme.url));
                }
            }
            TagEnd::FootnoteDefinition
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition => {
                self.flush();
                self.pending_blank = true;
            }
            TagEnd::MetadataBlock(_) => {}
        }
    }

    /// A code block is a box with a left rule, so wrapped rows stay visibly inside it.
    fn end_code(&mut self) {
        let Some(code) = self.code.take() else {
            return;
        };
        let border = self.theme.code_border;
        let style = self.theme.code;
        let head = if code.lang.is_empty() {
            "┌──".to_string()
        } else {
            format!("┌─ {}", code.lang)
        };
        self.emit_line(vec![Span::styled(head, border)]);
        let body = code.text.strip_suffix('\n').unwrap_or(&code.text);
        for l in body.split('\n') {
            let (mut prefix, mut cont) = self.prefixes();
            prefix.push(Span::styled("│ ", border));
            cont.push(Span::styled("│ ", border));
            self.out.push(MdBlock::Line(LogicalLine {
                prefix,
                cont,
                spans: vec![Span::styled(l.to_string(), style)],
            }));
        }
        self.emit_line(vec![Span::styled("└──", border)]);
        self.pending_blank = true;
    }

    fn finish(mut self) -> Vec<MdBlock> {
        self.flush();
        self.out
    }
}

fn spans_width(spans: &[Span<'_>]) -> usize {
    spans.iter().map(|s| s.width()).sum()
}

/// Fits a cell's spans into exactly `w` cells, truncating with `…` and aligning.
fn fit_cell(spans: &[Span<'static>], w: usize, align: Alignment) -> Vec<Span<'static>> {
    let mut out = Vec::new();
    let natural = spans_width(spans);
    if natural > w {
        let mut left = w.saturating_sub(1);
        for s in spans {
            if left == 0 {
                break;
            }
            let t = truncate(&s.content, left + 1);
            let t = t.strip_suffix('…').map(str::to_string).unwrap_or(t);
            left = left.saturating_sub(width(&t));
            out.push(Span::styled(t, s.style));
        }
        out.push(Span::raw("…"));
        let used = spans_width(&out);
        if used < w {
            out.push(Span::raw(" ".repeat(w - used)));
        }
        return out;
    }
    let gap = w - natural;
    let (l, r) = match align {
        Alignment::Right => (gap, 0),
        Alignment::Center => (gap / 2, gap - gap / 2),
        Alignment::Left | Alignment::None => (0, gap),
    };
    if l > 0 {
        out.push(Span::raw(" ".repeat(l)));
    }
    out.extend(spans.iter().cloned());
    if r > 0 {
        out.push(Span::raw(" ".repeat(r)));
    }
    out
}

/// Tables are laid out as aligned columns separated by `│`, shrinking the widest columns
/// until the table fits the width.
fn layout_table(t: &MdTable, width: usize, out: &mut Vec<Line<'static>>) {
    let ncols = t
        .rows
        .iter()
        .map(Vec::len)
        .chain(std::iter::once(t.header.len()))
        .max()
        .unwrap_or(0);
    if ncols == 0 {
        return;
    }
    let mut widths = vec![1usize; ncols];
    for row in std::iter::once(&t.header).chain(t.rows.iter()) {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(spans_width(cell));
        }
    }
    let pw = spans_width(&t.prefix);
    let avail = width.saturating_sub(pw);
    let seps = 3 * (ncols - 1);
    while widths.iter().sum::<usize>() + seps > avail {
        let Some((i, w)) = widths.iter().copied().enumerate().max_by_key(|(_, w)| *w) else {
            break;
        };
        if w <= 3 {
            break;
        }
        widths[i] -= 1;
    }
    let row_line = |row: &[Vec<Span<'static>>], style: Option<Style>| {
        let mut spans = t.prefix.clone();
        for (i, w) in widths.iter().enumerate() {
            if i > 0 {
                spans.push(Span::styled(" │ ", t.border));
            }
            let empty = Vec::new();
            let cell = row.get(i).unwrap_or(&empty);
            let align = t.aligns.get(i).copied().unwrap_or(Alignment::None);
            for s in fit_cell(cell, *w, align) {
                spans.push(match style {
                    Some(st) => s.patch_style(st),
                    None => s,
                });
            }
        }
        Line::from(spans)
    };
    if !t.header.is_empty() {
        out.push(row_line(&t.header, Some(t.head)));
        let mut spans = t.prefix.clone();
        let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
        spans.push(Span::styled(rule.join("─┼─"), t.border));
        out.push(Line::from(spans));
    }
    for row in &t.rows {
        out.push(row_line(row, None));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::line_text;

    fn render(md: &str, w: usize) -> Vec<String> {
        let theme = Theme::new(false);
        let mut out = Vec::new();
        layout(&parse(md, &theme), w, &mut out);
        out.iter().map(line_text).collect()
    }

    #[test]
    fn headings_paragraphs_and_lists() {
        let rows = render(
            "# Title\n\nSome *em* and **strong**.\n\n- one\n- two\n  1. a\n",
            40,
        );
        assert_eq!(
            rows,
            vec![
                "# Title",
                "",
                "Some em and strong.",
                "",
                "• one",
                "• two",
                "  1. a"
            ]
        );
    }

    #[test]
    fn code_blocks_are_boxed_and_unclosed_fences_render() {
        let rows = render("```rust\nfn main() {}\n", 40);
        assert_eq!(rows, vec!["┌─ rust", "│ fn main() {}", "└──"]);
    }

    #[test]
    fn links_show_their_url_and_quotes_their_bar() {
        let rows = render("> see [docs](https://x.dev) and <https://y.dev>", 60);
        assert_eq!(rows, vec!["│ see docs (https://x.dev) and https://y.dev"]);
    }

    #[test]
    fn tables_align_and_shrink() {
        let rows = render("| a | bb |\n|---|---:|\n| 1 | 2 |\n", 40);
        assert_eq!(rows, vec!["a │ bb", "──┼───", "1 │  2"]);
        let narrow = render("| aaaaaaaaaa | bbbbbbbbbb |\n|---|---|\n| x | y |\n", 15);
        assert!(narrow.iter().all(|r| width(r) <= 15), "{narrow:?}");
    }

    #[test]
    fn entities_cannot_smuggle_escapes() {
        let rows = render("a&#x1b;]0;pwned&#x07;b &#155;31mc", 60);
        assert_eq!(rows, vec!["ab c"]);
    }
}
