//! The byte streams a line wire runs over: a server process's stdout and stdin, or the
//! in-memory duplex of a server in this process. One concrete type for both, so the wire,
//! the session and the runner are the same code whichever it is (a boxed trait object
//! here trips the compiler's `Send` inference for the runner's future).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, DuplexStream, ReadBuf};
use tokio::net::unix::pipe;

/// What the server writes.
#[derive(Debug)]
pub enum FromServer {
    Process(pipe::Receiver),
    Pipe(DuplexStream),
}

/// What the server reads.
#[derive(Debug)]
pub enum ToServer {
    Process(pipe::Sender),
    Pipe(DuplexStream),
}

impl AsyncRead for FromServer {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Process(s) => Pin::new(s).poll_read(cx, buf),
            Self::Pipe(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for ToServer {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Process(s) => Pin::new(s).poll_write(cx, buf),
            Self::Pipe(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Process(s) => Pin::new(s).poll_flush(cx),
            Self::Pipe(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Process(s) => Pin::new(s).poll_shutdown(cx),
            Self::Pipe(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}
