//! The seccomp filter every supervised stdio server runs under: the system calls no MCP
//! server needs, which would let a hostile one inspect or control other processes, change
//! the mounts or namespaces it was given, load kernel code, or reach the kernel's keyrings.
//! Each fails with `EPERM` (never a kill: a server that probes for a feature and is told no
//! goes on working, and the denial is the answer it can report). Everything else is allowed;
//! the filesystem and network rules of a confinement profile are Landlock's, not this filter's.
//! Built before the fork and installed between fork and exec, after `no_new_privs`.

use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, TargetArch};
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
];

/// The filter as a BPF program for this machine's architecture.
pub fn program() -> Result<BpfProgram, seccompiler::Error> {
    let rules = DENIED
        .iter()
        .map(|(nr, _)| (*nr, Vec::new()))
        .collect::<BTreeMap<_, _>>();
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
        let program = super::program().unwrap();
        assert!(!program.is_empty());
    }
}
