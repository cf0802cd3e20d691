//! A network of its own for a confined server, where the kernel allows unprivileged user
//! and network namespaces: the supervisor moves into a new user and network namespace
//! before it starts the server, brings its loopback up, and listens there on the port the
//! server's `HTTP_PROXY` names. It hands that listener to the host over a socket (fd
//! [`NETNS_FD`]); the host's egress proxy accepts on it. The server then has no route to
//! anything but its proxy: no other loopback service, no address of the machine's, and no
//! UDP to anywhere, whatever Landlock covers. Where the namespaces cannot be made, the
//! supervisor says why and the server runs in the host's network under Landlock's TCP rules.

use std::io::IoSlice;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// The fd on which the supervisor finds its end of the socket to the host.
pub const NETNS_FD: RawFd = 4;

/// What the supervisor sends: `b'1'` with the listener's fd, or `b'0'` and why not.
const MADE: u8 = b'1';
const NOT_MADE: u8 = b'0';

/// In the supervisor (single-threaded, before the server starts): makes the namespaces and
/// the listener on `127.0.0.1:port` inside them, and tells the host either way.
pub fn enter_and_report(port: u16) -> Result<(), String> {
    // SAFETY: fd 4 was installed by the host for this process and is used once, here.
    #[allow(unsafe_code, reason = "the fd the host installed before exec")]
    let channel = unsafe { OwnedFd::from_raw_fd(NETNS_FD) };
    let sent = match enter(port) {
        Ok(listener) => send_with_fds(channel.as_fd(), &[MADE], &[listener.as_raw_fd()]),
        Err(why) => send_with_fds(
            channel.as_fd(),
            &[&[NOT_MADE][..], why.as_bytes()].concat(),
            &[],
        ),
    };
    sent.map_err(|e| format!("cannot tell the host about the network namespace: {e}"))
}

fn enter(port: u16) -> Result<std::net::TcpListener, String> {
    use nix::sched::{CloneFlags, unshare};
    let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET)
        .map_err(|e| format!("unshare: {e}"))?;
    // The same ids inside as outside: files, signals and `id` see no difference.
    let write = |file: &str, text: String| {
        std::fs::write(format!("/proc/self/{file}"), text).map_err(|e| format!("{file}: {e}"))
    };
    write("setgroups", "deny".into())?;
    write("uid_map", format!("{uid} {uid} 1"))?;
    write("gid_map", format!("{gid} {gid} 1"))?;
    loopback_up()?;
    std::net::TcpListener::bind(("127.0.0.1", port)).map_err(|e| format!("listen: {e}"))
}

/// `ip link set lo up`, as the namespace's owner.
#[allow(unsafe_code, reason = "SIOCSIFFLAGS has no safe wrapper")]
fn loopback_up() -> Result<(), String> {
    let sock = std::net::UdpSocket::bind(("127.0.0.1", 0))
        .or_else(|_| std::net::UdpSocket::bind(("0.0.0.0", 0)))
        .map_err(|e| format!("socket: {e}"))?;
    // SAFETY: an all-zero ifreq is valid; the name is copied in bounds and NUL-terminated;
    // the ioctls read and write only that struct.
    unsafe {
        let mut req: libc::ifreq = std::mem::zeroed();
        for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
            *dst = *src as libc::c_char;
        }
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) < 0 {
            return Err(format!("lo: {}", std::io::Error::last_os_error()));
        }
        req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &req) < 0 {
            return Err(format!("lo up: {}", std::io::Error::last_os_error()));
        }
    }
    Ok(())
}

/// Sends `data` with `fds` (`SCM_RIGHTS`) as one message; no SIGPIPE if the peer is gone.
/// Also how the host hands a forked supervisor its fds (`zygote.rs`).
pub(crate) fn send_with_fds(
    channel: BorrowedFd<'_>,
    data: &[u8],
    fds: &[RawFd],
) -> nix::Result<()> {
    use nix::sys::socket::{ControlMessage, MsgFlags, sendmsg};
    let rights = [ControlMessage::ScmRights(fds)];
    let cmsgs = if fds.is_empty() { &[][..] } else { &rights[..] };
    sendmsg::<()>(
        channel.as_raw_fd(),
        &[IoSlice::new(data)],
        cmsgs,
        MsgFlags::MSG_NOSIGNAL,
        None,
    )
    .map(drop)
}

/// What the host learns from the supervisor.
pub enum Outcome {
    /// The server's namespace, and the listener in it.
    Made(std::net::TcpListener),
    NotMade(String),
}

/// In the host: waits for the supervisor's word on `channel` (its end of the pair).
pub async fn receive(channel: std::os::unix::net::UnixStream) -> Outcome {
    use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
    let Ok(()) = channel.set_nonblocking(true) else {
        return Outcome::NotMade("cannot read the supervisor's socket".into());
    };
    let Ok(channel) = tokio::net::UnixStream::from_std(channel) else {
        return Outcome::NotMade("cannot read the supervisor's socket".into());
    };
    loop {
        if channel.readable().await.is_err() {
            return Outcome::NotMade("the supervisor's socket failed".into());
        }
        let mut data = [0u8; 512];
        let mut space = nix::cmsg_space!([RawFd; 1]);
        let got = channel.try_io(tokio::io::Interest::READABLE, || {
            let mut iov = [std::io::IoSliceMut::new(&mut data)];
            let msg = recvmsg::<()>(
                channel.as_raw_fd(),
                &mut iov,
                Some(&mut space),
                MsgFlags::MSG_CMSG_CLOEXEC,
            )
            .map_err(std::io::Error::from)?;
            let fd = msg
                .cmsgs()
                .ok()
                .into_iter()
                .flatten()
                .find_map(|c| match c {
                    ControlMessageOwned::ScmRights(fds) => fds.first().copied(),
                    _ => None,
                });
            Ok((msg.bytes, fd))
        });
        let (n, fd) = match got {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => return Outcome::NotMade(format!("the supervisor's socket: {e}")),
            Ok(got) => got,
        };
        return match (data[..n].first(), fd) {
            (Some(&MADE), Some(fd)) => {
                // SAFETY: the kernel just installed this fd for us (SCM_RIGHTS); we own it.
                #[allow(unsafe_code, reason = "an fd received with SCM_RIGHTS")]
                let listener = unsafe { std::net::TcpListener::from_raw_fd(fd) };
                Outcome::Made(listener)
            }
            (Some(&NOT_MADE), _) => {
                Outcome::NotMade(String::from_utf8_lossy(&data[1..n]).into_owned())
            }
            // The supervisor ended without a word (it could not start).
            _ => Outcome::NotMade("the supervisor said nothing".into()),
        };
    }
}
