//! The command line as people type it, turned into the grammar clap reads: `mcp-host -m X`
//! is `mcp-host chat -m X` (the interactive host is the default command, and its options
//! work without naming it), and `mcp-host -p PROMPT …` is `mcp-host run -p PROMPT …` (the
//! Claude Code habit: a prompt given on the command line runs headless).
//!
//! Only the position of the command is decided here, from clap's own list of subcommands;
//! every option is still parsed (and refused with a suggestion) by clap.

use std::ffi::{OsStr, OsString};

/// Options that belong to every command and so may come before the command's name; the
/// ones that take a value say so.
const GLOBAL: &[(&str, bool)] = &[
    ("--mcp-config", true),
    ("--strict-mcp-config", false),
    ("--verbose", false),
];

/// `argv` (program name first) with `chat` or `run` inserted where a command's options
/// begin without a command.
pub fn normalise(argv: Vec<OsString>) -> Vec<OsString> {
    let Some(at) = first_own_arg(&argv) else {
        return argv;
    };
    let first = argv[at].to_string_lossy();
    if !first.starts_with('-') || is_help_or_version(&first) {
        // A command's name, or a word clap will refuse with "did you mean".
        return argv;
    }
    let command = if argv[at..].iter().any(|a| is_prompt(a)) {
        "run"
    } else {
        "chat"
    };
    let mut out = argv;
    out.insert(at, command.into());
    out
}

/// The index of the first argument that is not a global option (or a global option's
/// value), if there is one.
fn first_own_arg(argv: &[OsString]) -> Option<usize> {
    let mut i = 1;
    while i < argv.len() {
        let a = argv[i].to_string_lossy();
        if a == "--" {
            return None;
        }
        if is_verbose_flags(&a) {
            i += 1;
            continue;
        }
        match GLOBAL.iter().find(|(name, _)| *name == a) {
            Some((_, takes_value)) => i += if *takes_value { 2 } else { 1 },
            None if GLOBAL
                .iter()
                .any(|(name, v)| *v && a.starts_with(&format!("{name}="))) =>
            {
                i += 1;
            }
            None => return Some(i),
        }
    }
    None
}

/// `-v`, `-vv`, `-vvv`.
fn is_verbose_flags(a: &str) -> bool {
    a.len() > 1 && a.starts_with('-') && a[1..].chars().all(|c| c == 'v')
}

fn is_help_or_version(a: &str) -> bool {
    matches!(a, "-h" | "--help" | "-V" | "--version")
}

fn is_prompt(a: &OsStr) -> bool {
    let a = a.to_string_lossy();
    a == "-p"
        || a == "--prompt"
        || a.starts_with("--prompt=")
        || (a.starts_with("-p") && !a.starts_with("--"))
}

/// Every subcommand name clap knows.
#[cfg(test)]
fn subcommands() -> Vec<String> {
    <crate::cli::Cli as clap::CommandFactory>::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(args: &[&str]) -> Vec<String> {
        let argv = std::iter::once("mcp-host")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        normalise(argv)
            .into_iter()
            .skip(1)
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn chat_options_without_a_command_mean_chat() {
        assert_eq!(norm(&["-m", "x:y"]), ["chat", "-m", "x:y"]);
        assert_eq!(norm(&["--mode", "auto"]), ["chat", "--mode", "auto"]);
        assert_eq!(
            norm(&["--mcp-config", "a.json", "--resume", "1"]),
            ["--mcp-config", "a.json", "chat", "--resume", "1"]
        );
        assert_eq!(norm(&["-vv", "-m", "x"]), ["-vv", "chat", "-m", "x"]);
    }

    #[test]
    fn a_prompt_without_a_command_runs_headless() {
        assert_eq!(
            norm(&["-p", "hi", "-m", "x"]),
            ["run", "-p", "hi", "-m", "x"]
        );
        assert_eq!(
            norm(&["-m", "x", "--prompt=hi"]),
            ["run", "-m", "x", "--prompt=hi"]
        );
        assert_eq!(norm(&["-phi"]), ["run", "-phi"]);
    }

    #[test]
    fn commands_help_and_nothing_are_left_to_clap() {
        for name in subcommands() {
            assert_eq!(norm(&[&name, "-m", "x"]), [name.as_str(), "-m", "x"]);
        }
        assert!(norm(&[]).is_empty());
        assert_eq!(norm(&["--help"]), ["--help"]);
        assert_eq!(norm(&["-V"]), ["-V"]);
        assert_eq!(norm(&["--mcp-config=a.json"]), ["--mcp-config=a.json"]);
        assert_eq!(norm(&["servrs"]), ["servrs"]);
    }

    #[test]
    fn the_rewritten_forms_parse() {
        use clap::Parser;
        for args in [
            &["-m", "openai:gpt-4o", "--mode", "auto"][..],
            &["-p", "hi", "-m", "x:y", "--output-format", "json"],
            &["--strict-mcp-config", "--resume", "abc"],
        ] {
            let argv = normalise(
                std::iter::once("mcp-host")
                    .chain(args.iter().copied())
                    .map(OsString::from)
                    .collect(),
            );
            crate::cli::Cli::try_parse_from(argv).unwrap();
        }
    }
}
