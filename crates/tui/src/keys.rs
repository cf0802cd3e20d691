//! Where a key goes. Ctrl-C is handled first everywhere; then the approval modal, an open
//! elicitation and an overlay each take every key while they are shown (so nothing typed
//! there reaches the input box); otherwise the input box edits, submits, and routes slash
//! commands.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::approval::{Outcome, has_command_modifier};
use crate::state::{Overlay, Scroll, filter_tools};
use crate::text::{clean_line, clean_paste};
use crate::{App, Command};

/// What the status line says after a first Ctrl-C while idle.
pub(crate) const PRESS_AGAIN: &str = "press Ctrl-C again to quit";
/// The notice after a first Ctrl-C while a turn runs.
pub(crate) const CANCELLING: &str = "cancelling… (Ctrl-C again to quit)";
/// The query of the `/tools` search box is capped; it is a filter, not a document.
const QUERY_MAX_CHARS: usize = 200;

fn is_ctrl(key: KeyEvent, c: char) -> bool {
    key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char(c)
}

/// A slash line, split into what the screen does itself and what the runtime does.
#[derive(Debug, PartialEq)]
pub(crate) enum Routed {
    Overlay(Overlay),
    Command(Command),
}

/// Routes one submitted line. `/mcp`, `/tools` and `/help` open overlays; `/quit` quits;
/// every other `/name rest` goes to the runtime; `//text` sends `/text` as a message.
pub(crate) fn route(line: &str) -> Option<Routed> {
    if line.trim().is_empty() {
        return None;
    }
    let trimmed = line.trim_start();
    let Some(rest) = trimmed.strip_prefix('/') else {
        return Some(Routed::Command(Command::Submit(line.to_string())));
    };
    if rest.starts_with('/') {
        return Some(Routed::Command(Command::Submit(rest.to_string())));
    }
    let (name, args) = match rest.find(char::is_whitespace) {
        Some(i) => (&rest[..i], rest[i..].trim()),
        None => (rest.trim_end(), ""),
    };
    Some(match name {
        "" | "help" | "?" => Routed::Overlay(Overlay::Help { scroll: 0 }),
        "mcp" => Routed::Overlay(Overlay::Mcp {
            selected: 0,
            confirming: false,
            scroll: 0,
        }),
        "tools" => Routed::Overlay(Overlay::Tools {
            query: args.to_string(),
            selected: 0,
        }),
        "quit" | "exit" => Routed::Command(Command::Quit),
        _ => Routed::Command(Command::Slash {
            name: name.to_string(),
            args: args.to_string(),
        }),
    })
}

impl App {
    pub(crate) fn handle_key(&mut self, key: KeyEvent) -> Vec<Command> {
        // Key-up events (kitty protocol, Windows) would double every key.
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        if is_ctrl(key, 'c') {
            return self.ctrl_c();
        }
        self.ctrl_c_armed = false;
        self.flash = None;

        if let Some(modal) = self.approvals.active_mut() {
            let outcome = modal.on_key(key);
            return self.approval_outcome(outcome);
        }
        if let Some(e) = self.elicitations.active_mut() {
            let Some(answer) = e.on_key(key) else {
                return Vec::new();
            };
            let id = e.id().to_string();
            self.elicitations.pop();
            return vec![Command::ElicitationAnswer { id, answer }];
        }
        if self.overlay.is_some() {
            return self.overlay_key(key);
        }
        self.input_key(key)
    }

    fn ctrl_c(&mut self) -> Vec<Command> {
        if self.ctrl_c_armed {
            self.ctrl_c_armed = false;
            return vec![Command::Quit];
        }
        self.ctrl_c_armed = true;
        if self.busy {
            self.transcript.notice(CANCELLING);
            vec![Command::CancelTurn]
        } else {
            self.flash = Some(PRESS_AGAIN.to_string());
            Vec::new()
        }
    }

    fn approval_outcome(&mut self, outcome: Outcome) -> Vec<Command> {
        if outcome == Outcome::Nothing {
            return Vec::new();
        }
        let Some(modal) = self.approvals.pop() else {
            return Vec::new();
        };
        let call_id = modal.view.call_id;
        let now = self.now();
        let command = match outcome {
            Outcome::Approve(scope) => {
                self.transcript.answered(&call_id, true, now);
                Command::Approve { call_id, scope }
            }
            Outcome::Deny(reason) => {
                self.transcript.answered(&call_id, false, now);
                Command::Deny { call_id, reason }
            }
            Outcome::Nothing => return Vec::new(),
        };
        vec![command]
    }

    pub(crate) fn handle_paste(&mut self, text: &str) {
        self.ctrl_c_armed = false;
        self.flash = None;
        if let Some(m) = self.approvals.active_mut() {
            m.on_paste(text);
        } else if let Some(e) = self.elicitations.active_mut() {
            e.on_paste(text);
        } else if let Some(Overlay::Tools { query, selected }) = &mut self.overlay {
            push_query(query, &clean_line(text));
            *selected = 0;
        } else if self.overlay.is_none() {
            self.input.insert_str(&clean_paste(text));
        }
    }

    fn overlay_key(&mut self, key: KeyEvent) -> Vec<Command> {
        let n_servers = self.servers.len();
        let n_tools = match &self.overlay {
            Some(Overlay::Tools { query, .. }) => filter_tools(&self.tools, query).len(),
            _ => 0,
        };
        let Some(overlay) = &mut self.overlay else {
            return Vec::new();
        };
        if key.code == KeyCode::Esc {
            self.overlay = None;
            return Vec::new();
        }
        match overlay {
            Overlay::Help { scroll } => match key.code {
                KeyCode::Char('q') | KeyCode::Enter => self.overlay = None,
                KeyCode::Up => *scroll = scroll.saturating_sub(1),
                KeyCode::Down => *scroll += 1,
                KeyCode::PageUp => *scroll = scroll.saturating_sub(10),
                KeyCode::PageDown => *scroll += 10,
                _ => {}
            },
            // Approving is a second key on purpose: the first shows the question beside what
            // the definition runs and sends; anything but `y` withdraws it.
            // Scrolling the details keeps the question open: reading the rest is the point.
            Overlay::Mcp { scroll, .. } if key.code == KeyCode::PageDown => *scroll += 5,
            Overlay::Mcp { scroll, .. } if key.code == KeyCode::PageUp => {
                *scroll = scroll.saturating_sub(5);
            }
            Overlay::Mcp {
                selected,
                confirming,
                ..
            } if *confirming => {
                *confirming = false;
                let row = self.servers.get(*selected);
                if let (KeyCode::Char('y' | 'Y'), Some(row)) = (key.code, row)
                    && row.needs_approval
                    && !has_command_modifier(key)
                {
                    return vec![Command::ApproveProjectServer(row.name.clone())];
                }
            }
            Overlay::Mcp {
                selected,
                confirming,
                scroll,
            } => match key.code {
                KeyCode::Up => {
                    *selected = selected.saturating_sub(1);
                    *scroll = 0;
                }
                KeyCode::Down => {
                    *selected = (*selected + 1).min(n_servers.saturating_sub(1));
                    *scroll = 0;
                }
                KeyCode::Char('q') => self.overlay = None,
                KeyCode::Char(c @ ('r' | 'e' | 'a')) if !has_command_modifier(key) => {
                    let Some(row) = self.servers.get(*selected) else {
                        return Vec::new();
                    };
                    return match c {
                        'r' => vec![Command::Reconnect(row.name.clone())],
                        'e' => vec![Command::SetEnabled {
                            server: row.name.clone(),
                            enabled: !row.enabled,
                        }],
                        _ => {
                            *confirming = row.needs_approval;
                            Vec::new()
                        }
                    };
                }
                _ => {}
            },
            Overlay::Tools { query, selected } => match key.code {
                KeyCode::Up => *selected = selected.saturating_sub(1),
                KeyCode::Down => *selected = (*selected + 1).min(n_tools.saturating_sub(1)),
                KeyCode::PageUp => *selected = selected.saturating_sub(10),
                KeyCode::PageDown => *selected = (*selected + 10).min(n_tools.saturating_sub(1)),
                KeyCode::Backspace => {
                    query.pop();
                    *selected = 0;
                }
                KeyCode::Char('u') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                    query.clear();
                    *selected = 0;
                }
                KeyCode::Char(c) if !has_command_modifier(key) => {
                    push_query(query, &c.to_string());
                    *selected = 0;
                }
                _ => {}
            },
        }
        Vec::new()
    }

    fn input_key(&mut self, key: KeyEvent) -> Vec<Command> {
        let m = key.modifiers;
        match key.code {
            KeyCode::Enter if m.intersects(KeyModifiers::ALT | KeyModifiers::SHIFT) => {
                self.input.insert_char('\n');
            }
            KeyCode::Enter => return self.submit(),
            // Many terminals send Ctrl-J for Shift-Enter.
            KeyCode::Char('j') if m.contains(KeyModifiers::CONTROL) => self.input.insert_char('\n'),
            KeyCode::Char('u') if m.contains(KeyModifiers::CONTROL) => self.input.clear(),
            KeyCode::Char('w') if m.contains(KeyModifiers::CONTROL) => self.input.delete_word(),
            KeyCode::Char('a') if m.contains(KeyModifiers::CONTROL) => self.input.home(),
            KeyCode::Char('e') if m.contains(KeyModifiers::CONTROL) => self.input.end(),
            KeyCode::Char(c) if !has_command_modifier(key) && !c.is_control() => {
                self.input.insert_char(c);
            }
            KeyCode::Backspace => self.input.backspace(),
            KeyCode::Delete => self.input.delete(),
            KeyCode::Left => self.input.left(),
            KeyCode::Right => self.input.right(),
            KeyCode::Home => self.input.home(),
            KeyCode::End => self.input.end(),
            KeyCode::Up => {
                if !self.input.is_multiline() {
                    self.input.history_prev();
                } else {
                    self.input.line_up();
                }
            }
            KeyCode::Down => {
                if !self.input.is_multiline() {
                    self.input.history_next();
                } else {
                    self.input.line_down();
                }
            }
            KeyCode::PageUp => self.transcript.page_up(),
            KeyCode::PageDown => self.transcript.page_down(),
            _ => {}
        }
        Vec::new()
    }

    fn submit(&mut self) -> Vec<Command> {
        let Some(routed) = route(self.input.text()) else {
            return Vec::new();
        };
        let line = self.input.take();
        self.input.push_history(&line);
        match routed {
            Routed::Overlay(o) => {
                self.overlay = Some(o);
                Vec::new()
            }
            Routed::Command(c) => {
                if matches!(c, Command::Submit(_)) {
                    // Sending a message means wanting to see the reply.
                    self.transcript.scroll = Scroll::Follow;
                }
                vec![c]
            }
        }
    }
}

fn push_query(q: &mut String, add: &str) {
    let room = QUERY_MAX_CHARS.saturating_sub(q.chars().count());
    q.extend(add.chars().filter(|c| !c.is_control()).take(room));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(line: &str) -> Option<Command> {
        match route(line) {
            Some(Routed::Command(c)) => Some(c),
            _ => None,
        }
    }

    #[test]
    fn routes_slash_lines() {
        assert_eq!(
            cmd("/model anthropic:claude"),
            Some(Command::Slash {
                name: "model".into(),
                args: "anthropic:claude".into()
            })
        );
        assert_eq!(
            cmd("/git:commit-msg  staged "),
            Some(Command::Slash {
                name: "git:commit-msg".into(),
                args: "staged".into()
            })
        );
        assert_eq!(cmd("/quit"), Some(Command::Quit));
        assert_eq!(
            cmd("//etc/hosts?"),
            Some(Command::Submit("/etc/hosts?".into()))
        );
        assert_eq!(
            cmd("read @fs:file:///x"),
            Some(Command::Submit("read @fs:file:///x".into()))
        );
        assert_eq!(route("   "), None);
        assert_eq!(
            route("/tools fetch"),
            Some(Routed::Overlay(Overlay::Tools {
                query: "fetch".into(),
                selected: 0
            }))
        );
        assert_eq!(
            route("/mcp"),
            Some(Routed::Overlay(Overlay::Mcp {
                selected: 0,
                confirming: false,
                scroll: 0
            }))
        );
        assert_eq!(
            route("/help"),
            Some(Routed::Overlay(Overlay::Help { scroll: 0 }))
        );
    }
}
