//! The typing guard that keeps stray keys from answering a dialog. A dialog can open while
//! the person is typing a message; without a guard, the letters of "yes, do it" would pick
//! options. The rule: a letter counts as a shortcut only when it is not part of a run of
//! typing. Two printable keys in a row, or any printable key that is not a shortcut, mean
//! "this person is typing": the guard locks, letters stop doing anything, and only a
//! navigation key (an arrow or Tab) unlocks it, which nobody types by accident.

#[derive(Debug, Default, Clone)]
pub(crate) struct TypingGuard {
    last_printable: bool,
    locked: bool,
}

/// What a printable key means after the guard looked at it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Letter {
    /// A deliberate letter: the dialog may treat it as a shortcut.
    Key(char),
    /// Part of typing: ignore it (the dialog should clear any selection).
    Stray,
}

impl TypingGuard {
    /// A printable key arrived.
    pub(crate) fn printable(&mut self, c: char) -> Letter {
        if self.locked || self.last_printable {
            self.locked = true;
            self.last_printable = true;
            return Letter::Stray;
        }
        self.last_printable = true;
        Letter::Key(c)
    }

    /// The dialog did not recognise a letter the guard let through: that is typing too.
    pub(crate) fn lock(&mut self) {
        self.locked = true;
    }

    /// An arrow or Tab: deliberate navigation unlocks letters again.
    pub(crate) fn navigate(&mut self) {
        self.last_printable = false;
        self.locked = false;
    }

    /// Any other non-printable key (Enter, Backspace, ...) ends a run of typing without
    /// unlocking.
    pub(crate) fn other(&mut self) {
        self.last_printable = false;
    }

    pub(crate) fn locked(&self) -> bool {
        self.locked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_of_letters_locks_until_navigation() {
        let mut g = TypingGuard::default();
        assert_eq!(g.printable('s'), Letter::Key('s'));
        assert_eq!(g.printable('o'), Letter::Stray);
        g.other();
        assert_eq!(g.printable('o'), Letter::Stray);
        g.navigate();
        assert_eq!(g.printable('o'), Letter::Key('o'));
    }
}
