//! Confining a stdio server: what the kernel offers (`Kernel`), the profile a server's
//! sandbox intent becomes (`profile.rs`), how the supervisor enforces it (`enforce.rs`),
//! and the live account of a server's confinement a person reads: the level, what it may
//! read, write and reach, the mechanisms in force, and the denials it ran into (counted by
//! path or host, from the egress proxy and from the permission errors it reports on stderr).

pub mod enforce;
pub mod launch;
pub mod netns;
pub mod profile;

use mcp_host_core::confinement::ConfinementView;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// What this kernel can enforce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kernel {
    /// The Landlock ABI version; 0 when Landlock is not available.
    pub landlock_abi: i32,
}

/// Landlock ABI from which TCP connect and bind are governed.
pub const LANDLOCK_NET_ABI: i32 = 4;
/// Landlock ABI from which signals and abstract unix sockets are scoped.
pub const LANDLOCK_SCOPE_ABI: i32 = 6;

impl Kernel {
    /// Asks the kernel (one system call that creates nothing).
    #[allow(unsafe_code, reason = "the Landlock version query has no safe wrapper")]
    pub fn probe() -> Self {
        const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
        // SAFETY: with a null attribute pointer and size 0, this call only returns the ABI
        // version (or fails); it reads and writes no memory.
        let v = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                LANDLOCK_CREATE_RULESET_VERSION,
            )
        };
        Self {
            landlock_abi: i32::try_from(v).unwrap_or(0).max(0),
        }
    }

    /// What a strict profile loses on this kernel, or `None` when it is fully enforced.
    pub fn shortfall(&self) -> Option<&'static str> {
        match self.landlock_abi {
            0 => Some("no Landlock on this kernel: its files and TCP are not confined"),
            n if n < LANDLOCK_NET_ABI => Some("Landlock before ABI 4: its TCP is not confined"),
            n if n < LANDLOCK_SCOPE_ABI => Some("Landlock before ABI 6: signals are not scoped"),
            _ => None,
        }
    }
}

/// How many distinct denials a server's account keeps (the rest are counted together).
const MAX_DENIALS: usize = 32;

/// One server's confinement as it stands, shared between the process that enforces it and
/// whoever shows it; every change is announced (`changed`), so the manager can publish it.
#[derive(Clone, Debug, Default)]
pub struct Confined {
    account: Arc<Mutex<Account>>,
    changed: Arc<tokio::sync::Notify>,
}

#[derive(Debug, Default)]
struct Account {
    view: ConfinementView,
    denials: BTreeMap<String, u64>,
    others: u64,
    reporter: Option<Reporter>,
}

/// Where a server's denials are reported once each (the audit log): (server, what).
pub type DenialReport = Arc<dyn Fn(&str, &str) + Send + Sync>;

struct Reporter {
    server: String,
    report: DenialReport,
}

impl std::fmt::Debug for Reporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reporter")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl Confined {
    /// Replaces what the server is allowed (at each start); its denials are kept.
    pub fn set(&self, view: ConfinementView) {
        if let Ok(mut a) = self.account.lock() {
            a.view = view;
        }
        self.changed.notify_one();
    }

    /// Waits for the next change (one already made since the last wait counts).
    pub async fn changed(&self) {
        self.changed.notified().await;
    }

    /// Changes what is shown of the server's confinement (a mechanism confirmed late).
    pub fn amend(&self, change: impl FnOnce(&mut ConfinementView)) {
        if let Ok(mut a) = self.account.lock() {
            change(&mut a.view);
        }
        self.changed.notify_one();
    }

    /// Where this server's denials are reported from now on (the first of each kind).
    pub fn report_to(&self, server: &str, report: DenialReport) {
        if let Ok(mut a) = self.account.lock() {
            a.reporter = Some(Reporter {
                server: server.to_string(),
                report,
            });
        }
    }

    /// Counts one refusal of `what` (`connect evil.test:443`) that was reported elsewhere
    /// (the proxy's own record).
    pub fn deny(&self, what: String) {
        self.count(what);
    }

    /// Counts one refusal of `what` (`denied /etc/shadow`) and reports the first of its kind,
    /// so a server that hits one in a loop writes one line, not thousands.
    pub fn deny_and_report(&self, what: String) {
        if let Some((server, report)) = self.count(what.clone()) {
            report(&server, &what);
        }
    }

    /// The reporter, when this is the first refusal of its kind.
    fn count(&self, what: String) -> Option<(String, DenialReport)> {
        let counted = self.count_locked(what);
        self.changed.notify_one();
        counted
    }

    fn count_locked(&self, what: String) -> Option<(String, DenialReport)> {
        let mut a = self.account.lock().ok()?;
        if a.denials.len() >= MAX_DENIALS && !a.denials.contains_key(&what) {
            a.others += 1;
            return None;
        }
        let n = a.denials.entry(what).or_default();
        *n += 1;
        let first = *n == 1;
        let reporter = a.reporter.as_ref().filter(|_| first)?;
        Some((reporter.server.clone(), reporter.report.clone()))
    }

    /// The account as shown: `None` when the server was never started confined.
    pub fn view(&self) -> Option<ConfinementView> {
        let a = self.account.lock().ok()?;
        if a.view.level.is_empty() {
            return None;
        }
        let mut view = a.view.clone();
        view.denials = (a.denials.iter())
            .map(|(what, n)| {
                if *n > 1 {
                    format!("{what} ×{n}")
                } else {
                    what.clone()
                }
            })
            .collect();
        if a.others > 0 {
            view.denials.push(format!("{} more", a.others));
        }
        Some(view)
    }
}

/// The path of a permission error in one line a server wrote to stderr, in the forms Node
/// (`EACCES: permission denied, open '/x'`), Python (`[Errno 13] Permission denied: '/x'`)
/// and C programs (`/x: Permission denied`) write it.
pub fn denial_in_stderr(line: &str) -> Option<String> {
    let lower = line.to_ascii_lowercase();
    let at = [
        "permission denied",
        "eacces",
        "operation not permitted",
        "eperm",
    ]
    .iter()
    .filter_map(|needle| lower.find(needle))
    .min()?;
    let quoted = |text: &str| -> Option<String> {
        let start = text.find(['\'', '"'])?;
        let quote = text[start..].chars().next()?;
        let rest = &text[start + 1..];
        let end = rest.find(quote)?;
        let path = &rest[..end];
        path.starts_with('/').then(|| path.to_string())
    };
    // A quoted absolute path after the message (Node, Python), else before it (C).
    if let Some(p) = quoted(&line[at..]) {
        return Some(p);
    }
    let before = line[..at].trim_end().trim_end_matches(':');
    before
        .rsplit([' ', '\'', '"'])
        .find(|w| w.starts_with('/'))
        .map(str::to_string)
        .or_else(|| quoted(before))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permission_errors_name_their_path() {
        for (line, path) in [
            (
                "Error: EACCES: permission denied, open '/root/.ssh/id_rsa'",
                "/root/.ssh/id_rsa",
            ),
            (
                "PermissionError: [Errno 13] Permission denied: '/etc/shadow'",
                "/etc/shadow",
            ),
            ("cat: /etc/shadow: Permission denied", "/etc/shadow"),
            (
                "fatal: could not open '/home/u/x' for writing: Permission denied",
                "/home/u/x",
            ),
        ] {
            assert_eq!(denial_in_stderr(line).as_deref(), Some(path), "{line}");
        }
        assert_eq!(denial_in_stderr("server started on stdio"), None);
        assert_eq!(denial_in_stderr("permission denied"), None);
    }

    #[test]
    fn denials_are_counted_and_bounded() {
        let c = Confined::default();
        assert!(c.view().is_none());
        c.set(ConfinementView {
            level: "strict".into(),
            ..ConfinementView::default()
        });
        c.deny("read /etc/shadow".into());
        c.deny("read /etc/shadow".into());
        for i in 0..40 {
            c.deny(format!("connect h{i}.test:443"));
        }
        let v = c.view().unwrap();
        assert!(v.denials.contains(&"read /etc/shadow ×2".to_string()));
        assert_eq!(v.denials.len(), MAX_DENIALS + 1);
        assert_eq!(v.denials.last().unwrap(), "9 more");
    }
}
