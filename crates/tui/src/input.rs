//! The input box's editor: a multi-line buffer with a cursor, and the history of submitted
//! lines (Up/Down recall it while the input is one line). Key routing lives in `keys.rs`;
//! this file only knows how to edit text.

/// History beyond this many lines is dropped, oldest first.
const HISTORY_CAP: usize = 500;

#[derive(Debug, Default)]
pub(crate) struct InputBox {
    text: String,
    /// Byte offset into `text`, always on a char boundary.
    cursor: usize,
    history: Vec<String>,
    /// Which history line is shown, when the person is browsing it.
    hist_pos: Option<usize>,
    /// What was being typed before browsing started, restored when browsing past the end.
    draft: String,
}

impl InputBox {
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    pub(crate) fn cursor(&self) -> usize {
        self.cursor
    }

    pub(crate) fn is_multiline(&self) -> bool {
        self.text.contains('\n')
    }

    /// Any edit ends history browsing: the edited text is now the draft.
    fn edited(&mut self) {
        self.hist_pos = None;
    }

    pub(crate) fn insert_str(&mut self, s: &str) {
        self.text.insert_str(self.cursor, s);
        self.cursor += s.len();
        self.edited();
    }

    pub(crate) fn insert_char(&mut self, c: char) {
        self.text.insert(self.cursor, c);
        self.cursor += c.len_utf8();
        self.edited();
    }

    fn prev_boundary(&self) -> usize {
        self.text[..self.cursor]
            .char_indices()
            .next_back()
            .map_or(0, |(i, _)| i)
    }

    fn next_boundary(&self) -> usize {
        self.text[self.cursor..]
            .chars()
            .next()
            .map_or(self.cursor, |c| self.cursor + c.len_utf8())
    }

    pub(crate) fn backspace(&mut self) {
        if self.cursor > 0 {
            let p = self.prev_boundary();
            self.text.replace_range(p..self.cursor, "");
            self.cursor = p;
            self.edited();
        }
    }

    pub(crate) fn delete(&mut self) {
        if self.cursor < self.text.len() {
            let n = self.next_boundary();
            self.text.replace_range(self.cursor..n, "");
            self.edited();
        }
    }

    /// Ctrl-W: deletes the word before the cursor and the spaces after it.
    pub(crate) fn delete_word(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end_matches(' ');
        let start = trimmed.rfind([' ', '\n']).map_or(0, |i| i + 1);
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
        self.edited();
    }

    pub(crate) fn left(&mut self) {
        self.cursor = self.prev_boundary();
    }

    pub(crate) fn right(&mut self) {
        self.cursor = self.next_boundary();
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    pub(crate) fn home(&mut self) {
        self.cursor = self.line_start();
    }

    pub(crate) fn end(&mut self) {
        self.cursor = self.line_end();
    }

    /// Moves to the same column (in chars) of the line above; false on the first line.
    pub(crate) fn line_up(&mut self) -> bool {
        let start = self.line_start();
        if start == 0 {
            return false;
        }
        let col = self.text[start..self.cursor].chars().count();
        let prev_start = self.text[..start - 1].rfind('\n').map_or(0, |i| i + 1);
        self.cursor = column_offset(&self.text, prev_start, start - 1, col);
        true
    }

    /// Moves to the same column of the line below; false on the last line.
    pub(crate) fn line_down(&mut self) -> bool {
        let end = self.line_end();
        if end >= self.text.len() {
            return false;
        }
        let col = self.text[self.line_start()..self.cursor].chars().count();
        let next_start = end + 1;
        let next_end = self.text[next_start..]
            .find('\n')
            .map_or(self.text.len(), |i| next_start + i);
        self.cursor = column_offset(&self.text, next_start, next_end, col);
        true
    }

    pub(crate) fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
        self.edited();
    }

    /// Empties the box and returns what was in it.
    pub(crate) fn take(&mut self) -> String {
        let t = std::mem::take(&mut self.text);
        self.cursor = 0;
        self.hist_pos = None;
        self.draft.clear();
        t
    }

    pub(crate) fn push_history(&mut self, line: &str) {
        if self.history.last().map(String::as_str) != Some(line) {
            self.history.push(line.to_string());
        }
        if self.history.len() > HISTORY_CAP {
            self.history.remove(0);
        }
    }

    fn show(&mut self, s: String) {
        self.text = s;
        self.cursor = self.text.len();
    }

    pub(crate) fn history_prev(&mut self) {
        let pos = match self.hist_pos {
            None if self.history.is_empty() => return,
            None => {
                self.draft = self.text.clone();
                self.history.len() - 1
            }
            Some(p) => p.saturating_sub(1),
        };
        self.hist_pos = Some(pos);
        let line = self.history.get(pos).cloned().unwrap_or_default();
        self.show(line);
    }

    pub(crate) fn history_next(&mut self) {
        let Some(p) = self.hist_pos else {
            return;
        };
        if p + 1 < self.history.len() {
            self.hist_pos = Some(p + 1);
            let line = self.history.get(p + 1).cloned().unwrap_or_default();
            self.show(line);
        } else {
            self.hist_pos = None;
            let d = std::mem::take(&mut self.draft);
            self.show(d);
        }
    }
}

/// The byte offset of char column `col` within `text[start..end]`, clamped to `end`.
fn column_offset(text: &str, start: usize, end: usize, col: usize) -> usize {
    text[start..end]
        .char_indices()
        .nth(col)
        .map_or(end, |(i, _)| start + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_at_the_cursor() {
        let mut b = InputBox::default();
        b.insert_str("héllo");
        b.left();
        b.left();
        b.insert_char('X');
        assert_eq!(b.text(), "hélXlo");
        b.backspace();
        b.delete();
        assert_eq!(b.text(), "hélo");
        b.end();
        b.insert_str(" big world");
        b.delete_word();
        assert_eq!(b.text(), "hélo big ");
    }

    #[test]
    fn moves_between_lines_by_column() {
        let mut b = InputBox::default();
        b.insert_str("abc\nde\nfghi");
        assert!(b.line_up());
        assert_eq!(&b.text()[b.cursor()..], "\nfghi");
        assert!(b.line_up());
        assert_eq!(&b.text()[b.cursor()..], "c\nde\nfghi");
        assert!(!b.line_up());
        assert!(b.line_down());
        assert!(b.line_down());
        assert!(!b.line_down());
    }

    #[test]
    fn history_browses_and_restores_the_draft() {
        let mut b = InputBox::default();
        b.push_history("one");
        b.push_history("two");
        b.push_history("two");
        b.insert_str("draft");
        b.history_prev();
        assert_eq!(b.text(), "two");
        b.history_prev();
        assert_eq!(b.text(), "one");
        b.history_prev();
        assert_eq!(b.text(), "one");
        b.history_next();
        assert_eq!(b.text(), "two");
        b.history_next();
        assert_eq!(b.text(), "draft");
    }
}
