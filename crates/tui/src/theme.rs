//! The one place styles come from. Every view takes its styles from [`Theme`], so `NO_COLOR`
//! is honoured by construction: with `no_color` no style here carries a foreground or
//! background colour, only modifiers (bold, dim, reversed, ...).

use ratatui::style::{Color, Modifier, Style};

#[derive(Clone, Debug)]
pub(crate) struct Theme {
    pub base: Style,
    pub dim: Style,
    pub bold: Style,
    pub user: Style,
    pub notice: Style,
    pub heading: Style,
    pub heading1: Style,
    pub code: Style,
    pub code_border: Style,
    pub inline_code: Style,
    pub link: Style,
    pub url: Style,
    pub quote: Style,
    pub quote_bar: Style,
    pub border: Style,
    pub title: Style,
    pub selected: Style,
    pub status: Style,
    pub status_warn: Style,
    pub key: Style,
    pub ok: Style,
    pub warn: Style,
    pub error: Style,
    pub running: Style,
    pub background_job: Style,
    pub tainted: Style,
    pub diff_add: Style,
    pub diff_del: Style,
    pub diff_hunk: Style,
    pub progress: Style,
    pub field: Style,
    pub field_focus: Style,
}

impl Theme {
    pub(crate) fn new(no_color: bool) -> Self {
        // Builds a style from an optional colour and modifiers; the colour is dropped under
        // NO_COLOR, which is the only thing that differs between the two themes.
        let s = |fg: Option<Color>, m: Modifier| {
            let st = Style::new().add_modifier(m);
            match fg {
                Some(c) if !no_color => st.fg(c),
                _ => st,
            }
        };
        let none = Modifier::empty();
        let status = if no_color {
            Style::new().add_modifier(Modifier::REVERSED)
        } else {
            Style::new().fg(Color::White).bg(Color::DarkGray)
        };
        let status_warn = if no_color {
            Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD)
        } else {
            Style::new()
                .fg(Color::Yellow)
                .bg(Color::DarkGray)
                .add_modifier(Modifier::BOLD)
        };
        Self {
            base: Style::new(),
            dim: s(Some(Color::DarkGray), Modifier::DIM),
            bold: s(None, Modifier::BOLD),
            user: s(Some(Color::Cyan), Modifier::BOLD),
            notice: s(Some(Color::DarkGray), Modifier::DIM),
            heading: s(Some(Color::Magenta), Modifier::BOLD),
            heading1: s(Some(Color::Magenta), Modifier::BOLD | Modifier::UNDERLINED),
            code: s(Some(Color::Yellow), none),
            code_border: s(Some(Color::DarkGray), none),
            inline_code: s(Some(Color::Yellow), none),
            link: s(Some(Color::Blue), Modifier::UNDERLINED),
            url: s(Some(Color::DarkGray), none),
            quote: s(Some(Color::Gray), Modifier::ITALIC),
            quote_bar: s(Some(Color::DarkGray), none),
            border: s(Some(Color::Gray), none),
            title: s(Some(Color::Cyan), Modifier::BOLD),
            selected: Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD),
            status,
            status_warn,
            key: s(Some(Color::Cyan), Modifier::BOLD),
            ok: s(Some(Color::Green), none),
            warn: s(Some(Color::Yellow), none),
            error: s(Some(Color::Red), none),
            running: s(Some(Color::Cyan), none),
            background_job: s(Some(Color::Magenta), none),
            tainted: s(Some(Color::Yellow), none),
            diff_add: s(Some(Color::Green), none),
            diff_del: s(Some(Color::Red), none),
            diff_hunk: s(Some(Color::Cyan), none),
            progress: s(Some(Color::Cyan), none),
            field: s(None, Modifier::UNDERLINED),
            field_focus: Style::new().add_modifier(Modifier::REVERSED),
        }
    }
}
