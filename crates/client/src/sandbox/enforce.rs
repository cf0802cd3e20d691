//! Enforcing a profile, in the supervisor: the Landlock ruleset is built before the fork
//! (every granted path opened, missing ones skipped) and the limits chosen; between fork and
//! exec the child sets its resource limits and restricts itself. The supervisor is single
//! threaded, so nothing here races a lock held by another thread.

use super::profile::Profile;
use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath,
    PathFd, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
};

/// The Landlock ABI whose rights the profile is written in: filesystem (with truncate and
/// device ioctls), TCP connect and bind, and scoping of signals and abstract unix sockets.
/// An older kernel enforces what it knows (or refuses, for `require`).
const TARGET: ABI = ABI::V6;

/// Limits a confined server runs under: (resource, soft and hard value).
const LIMITS: &[(libc::__rlimit_resource_t, u64)] = &[
    // Address space: generous, as V8 and WebAssembly reserve far more than they touch.
    (libc::RLIMIT_AS, 32 << 30),
    // Writable memory actually mapped.
    (libc::RLIMIT_DATA, 8 << 30),
    (libc::RLIMIT_NOFILE, 4096),
    (libc::RLIMIT_NPROC, 4096),
    (libc::RLIMIT_FSIZE, 8 << 30),
    // No core files: a dump would hold whatever secrets the server was handed.
    (libc::RLIMIT_CORE, 0),
];

/// A ruleset ready to apply in the child.
pub struct Prepared {
    ruleset: Option<RulesetCreated>,
    require: bool,
}

impl Prepared {
    /// Opens every granted path and builds the ruleset.
    pub fn new(profile: &Profile) -> Result<Self, String> {
        let fail = |e: landlock::RulesetError| format!("landlock: {e}");
        let fs_all = AccessFs::from_all(TARGET);
        let read = AccessFs::from_read(TARGET) & !AccessFs::Execute;
        let exec = AccessFs::from_read(TARGET);
        let write = read
            | (AccessFs::from_write(TARGET)
                & !(AccessFs::MakeChar | AccessFs::MakeBlock | AccessFs::IoctlDev));
        let device = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate;
        let level = if profile.require {
            CompatLevel::HardRequirement
        } else {
            CompatLevel::BestEffort
        };
        let mut ruleset = Ruleset::default()
            .set_compatibility(level)
            .handle_access(fs_all)
            .map_err(fail)?
            .handle_access(AccessNet::from_all(TARGET))
            .map_err(fail)?
            .scope(Scope::from_all(TARGET))
            .map_err(fail)?
            .create()
            .map_err(fail)?;
        let groups: [(&[std::path::PathBuf], BitFlags<AccessFs>); 4] = [
            (&profile.exec, exec),
            (&profile.read, read),
            (&profile.write, write),
            (&profile.devices, device),
        ];
        for (paths, access) in groups {
            for path in paths {
                // A path that does not exist here grants nothing: skipped, not an error.
                let Ok(fd) = PathFd::new(path) else { continue };
                let access = if path.is_dir() {
                    access
                } else {
                    access & AccessFs::from_file(TARGET)
                };
                ruleset = ruleset
                    .add_rule(PathBeneath::new(fd, access))
                    .map_err(fail)?;
            }
        }
        for port in &profile.connect {
            ruleset = ruleset
                .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
                .map_err(fail)?;
        }
        Ok(Self {
            ruleset: Some(ruleset),
            require: profile.require,
        })
    }

    /// In the child, between fork and exec: the limits, then Landlock. Runs once.
    #[allow(
        unsafe_code,
        reason = "getrlimit and setrlimit have no safe wrapper here"
    )]
    pub fn apply(&mut self) -> std::io::Result<()> {
        for (resource, value) in LIMITS {
            let mut current = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: getrlimit and setrlimit only read and write the struct passed.
            unsafe {
                if libc::getrlimit(*resource, &mut current) != 0 {
                    continue;
                }
                // Never above the hard limit the host was given.
                let value = (*value).min(current.rlim_max);
                let limit = libc::rlimit {
                    rlim_cur: value,
                    rlim_max: value,
                };
                if libc::setrlimit(*resource, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
        }
        let Some(ruleset) = self.ruleset.take() else {
            return Ok(());
        };
        let status = ruleset.restrict_self().map_err(std::io::Error::other)?;
        if self.require && status.ruleset != RulesetStatus::FullyEnforced {
            return Err(std::io::Error::other(
                "the sandbox requires Landlock, which this kernel cannot fully enforce",
            ));
        }
        Ok(())
    }
}
