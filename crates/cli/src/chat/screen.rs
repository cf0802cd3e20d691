//! The terminal while the interactive host runs: raw mode, the alternate screen, bracketed
//! paste, and stderr redirected to a log file (a stray write from a library or a child
//! would otherwise paint over the screen). Everything is put back when the guard drops, on
//! an error path too, and a panic restores the terminal before its message is printed.

use anyhow::Context;
use crossterm::event::{DisableBracketedPaste, EnableBracketedPaste};
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use std::io::Stdout;
use std::os::fd::OwnedFd;
use std::path::Path;

pub struct Screen {
    pub terminal: Terminal<CrosstermBackend<Stdout>>,
    /// The real stderr, put back on drop.
    saved_stderr: Option<OwnedFd>,
}

/// Puts the terminal back. Also used by the forced exit after a signal, when the chat
/// loop could not do it itself; leaving the alternate screen is harmless when it is not up.
pub(crate) fn restore_terminal() {
    let _ = disable_raw_mode();
    let _ = crossterm::execute!(
        std::io::stdout(),
        DisableBracketedPaste,
        LeaveAlternateScreen
    );
}

impl Screen {
    pub fn enter(stderr_log: &Path) -> anyhow::Result<Self> {
        if let Some(dir) = stderr_log.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(stderr_log)
            .with_context(|| format!("cannot open {}", stderr_log.display()))?;
        let saved = nix::unistd::dup(std::io::stderr()).context("cannot save stderr")?;
        nix::unistd::dup2_stderr(&log).context("cannot redirect stderr")?;
        enable_raw_mode().context("cannot put the terminal in raw mode")?;
        crossterm::execute!(
            std::io::stdout(),
            EnterAlternateScreen,
            EnableBracketedPaste
        )?;
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore_terminal();
            previous(info);
        }));
        let terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
        Ok(Self {
            terminal,
            saved_stderr: Some(saved),
        })
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore_terminal();
        if let Some(saved) = self.saved_stderr.take() {
            let _ = nix::unistd::dup2_stderr(&saved);
        }
    }
}
