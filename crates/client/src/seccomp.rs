//! The seccomp filter every supervised stdio server runs under: the system calls no MCP
//! server needs, which would let a hostile one inspect or control other processes, change
//! the mounts or namespaces it was given, load kernel code, or reach the kernel's keyrings.
//! Each fails with `EPERM` (never a kill: a server that probes for a feature and is told no
//! goes on working, and the denial is the answer it can report). Everything else is allowed;
//! the filesystem and TCP rules of a confinement profile are Landlock's, not this filter's.
//! A strict sandbox adds the sockets Landlock cannot see: UDP and raw IP (a way around the
//! egress proxy, and DNS exfiltration), packet sockets, and unix sockets other than
//! `socketpair` (other programs' control sockets: an agent's, a container engine's).
//! `io_uring` is denied for every server, as its operations would bypass this filter.
//! Built before the fork and installed between fork and exec, after `no_new_privs`.

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use std::collections::BTreeMap;

/// The denied calls, with why no server needs them.
pub const DENIED: &[(i64, &str)] = &[
    // Inspecting or controlling another process.
    (libc::SYS_ptrace, "ptrace"),
    (libc::SYS_process_vm_readv, "process_vm_readv"),
    (libc::SYS_process_vm_writev, "process_vm_writev"),
    (libc::SYS_kcmp, "kcmp"),
    // Changing what the server can see of the filesystem.
    (libc::SYS_mount, "mount"),
    (libc::SYS_umount2, "umount2"),
    (libc::SYS_pivot_root, "pivot_root"),
    (libc::SYS_chroot, "chroot"),
    (libc::SYS_open_by_handle_at, "open_by_handle_at"),
    (libc::SYS_fsopen, "fsopen"),
    (libc::SYS_fsmount, "fsmount"),
    (libc::SYS_move_mount, "move_mount"),
    // Leaving the namespaces it was started in.
    (libc::SYS_setns, "setns"),
    (libc::SYS_unshare, "unshare"),
    // Loading or replacing kernel code, or stopping the machine.
    (libc::SYS_init_module, "init_module"),
    (libc::SYS_finit_module, "finit_module"),
    (libc::SYS_delete_module, "delete_module"),
    (libc::SYS_kexec_load, "kexec_load"),
    (libc::SYS_kexec_file_load, "kexec_file_load"),
    (libc::SYS_bpf, "bpf"),
    (libc::SYS_reboot, "reboot"),
    (libc::SYS_swapon, "swapon"),
    (libc::SYS_swapoff, "swapoff"),
    (libc::SYS_acct, "acct"),
    // Kernel observation and tracing.
    (libc::SYS_perf_event_open, "perf_event_open"),
    (libc::SYS_userfaultfd, "userfaultfd"),
    // The kernel's keyrings (where other programs keep secrets).
    (libc::SYS_keyctl, "keyctl"),
    (libc::SYS_add_key, "add_key"),
    (libc::SYS_request_key, "request_key"),
    // Its submissions are not system calls, so nothing above would filter them.
    (libc::SYS_io_uring_setup, "io_uring_setup"),
    (libc::SYS_io_uring_enter, "io_uring_enter"),
    (libc::SYS_io_uring_register, "io_uring_register"),
];

/// `socket(domain, type)` pairs a strictly sandboxed server may not create (`None`: any
/// type). TCP stays, for Landlock's connect rules; netlink stays (reading interface lists).
const DENIED_SOCKETS: &[(i32, Option<i32>)] = &[
    (libc::AF_INET, Some(libc::SOCK_DGRAM)),
    (libc::AF_INET, Some(libc::SOCK_RAW)),
    (libc::AF_INET6, Some(libc::SOCK_DGRAM)),
    (libc::AF_INET6, Some(libc::SOCK_RAW)),
    (libc::AF_PACKET, None),
    (libc::AF_UNIX, None),
];

/// The socket type without its `SOCK_NONBLOCK` and `SOCK_CLOEXEC` flags.
const SOCK_TYPE_MASK: u64 = 0xf;

/// The filter as a BPF program for this machine's architecture; `strict_sockets` adds the
/// socket rules of a strict sandbox.
pub fn program(strict_sockets: bool) -> Result<BpfProgram, seccompiler::Error> {
    let mut rules = DENIED
        .iter()
        .map(|(nr, _)| (*nr, Vec::new()))
        .collect::<BTreeMap<_, _>>();
    if strict_sockets {
        let socket_rules = DENIED_SOCKETS
            .iter()
            .map(|(domain, kind)| {
                let mut conditions = vec![SeccompCondition::new(
                    0,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::Eq,
                    *domain as u64,
                )?];
                if let Some(kind) = kind {
                    conditions.push(SeccompCondition::new(
                        1,
                        SeccompCmpArgLen::Dword,
                        SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK),
                        *kind as u64,
                    )?);
                }
                SeccompRule::new(conditions)
            })
            .collect::<Result<Vec<_>, _>>()?;
        rules.insert(libc::SYS_socket, socket_rules);
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )?;
    Ok(BpfProgram::try_from(filter)?)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_filter_builds_for_this_machine() {
        let base = super::program(false).unwrap();
        let strict = super::program(true).unwrap();
        assert!(!base.is_empty() && strict.len() > base.len());
    }
}
