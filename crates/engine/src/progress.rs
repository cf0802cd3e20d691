//! A running call's progress as the front ends hear it: at most one event per call per
//! [`PROGRESS_EVERY`], and always the latest the server sent. A server may report progress
//! as fast as it can write; without a pace each notification was an event, a redraw and, in
//! `run --output-format stream-json`, a line of output (100,000 of them for one call). The
//! first is told at once; one that comes sooner than the pace allows waits for it and is then
//! told if nothing newer came meanwhile, so the last state before a quiet spell is shown.

use mcp_host_client::{Progress, ProgressFeed, ProgressSink, progress_channel};
use std::time::Duration;
use tokio::time::Instant;

/// The shortest time between two progress events of one call: five a second is as fast as
/// a person reads a changing number, and what the hosted mode's log keeps of a call.
pub(crate) const PROGRESS_EVERY: Duration = Duration::from_millis(200);

/// The front end's end of one call's progress.
pub(crate) struct PacedProgress {
    feed: ProgressFeed,
    quiet_until: Option<Instant>,
}

impl PacedProgress {
    /// The sink the call reports to, and the paced feed that reads it.
    pub(crate) fn channel() -> (ProgressSink, Self) {
        let (sink, feed) = progress_channel();
        let paced = Self {
            feed,
            quiet_until: None,
        };
        (sink, paced)
    }

    /// The next progress to tell; `None` when the call's sinks are gone and all was told.
    /// Cancel-safe (it is a `select!` branch): dropped while it waits out the pace, the next
    /// call waits for the same instant; a progress is taken from the feed only when told.
    pub(crate) async fn next(&mut self) -> Option<Progress> {
        if let Some(at) = self.quiet_until {
            tokio::time::sleep_until(at).await;
        }
        let progress = self.feed.next().await?;
        self.quiet_until = Some(Instant::now() + PROGRESS_EVERY);
        Some(progress)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(progress: f64) -> Progress {
        Progress {
            progress,
            total: None,
            message: None,
        }
    }

    /// A flood is told as its first notification at once, then the latest one per pace; a
    /// notification sent during a pace is told when the pace ends, not lost.
    #[tokio::test(start_paused = true)]
    async fn a_flood_is_told_once_per_pace_with_its_latest_value() {
        let (sink, mut paced) = PacedProgress::channel();
        let start = Instant::now();
        sink.send(at(0.0));
        assert_eq!(paced.next().await, Some(at(0.0)));
        assert_eq!(start.elapsed(), Duration::ZERO);
        for n in 1..=10_000 {
            sink.send(at(f64::from(n)));
        }
        assert_eq!(paced.next().await, Some(at(10_000.0)));
        assert_eq!(start.elapsed(), PROGRESS_EVERY);
        // One more in the next pace, then quiet: it is still told, at the pace's end.
        tokio::time::advance(PROGRESS_EVERY / 2).await;
        sink.send(at(10_001.0));
        assert_eq!(paced.next().await, Some(at(10_001.0)));
        assert_eq!(start.elapsed(), PROGRESS_EVERY * 2);
        drop(sink);
        assert_eq!(paced.next().await, None);
    }

    /// Dropped while it waits out a pace (another `select!` branch won), the feed keeps its
    /// place: the next wait ends at the same instant, with the value that came meanwhile.
    #[tokio::test(start_paused = true)]
    async fn a_wait_given_up_keeps_the_pace_and_the_value() {
        let (sink, mut paced) = PacedProgress::channel();
        let start = Instant::now();
        sink.send(at(1.0));
        assert_eq!(paced.next().await, Some(at(1.0)));
        sink.send(at(2.0));
        let given_up = tokio::time::timeout(PROGRESS_EVERY / 4, paced.next()).await;
        assert!(given_up.is_err(), "told inside the pace: {given_up:?}");
        assert_eq!(paced.next().await, Some(at(2.0)));
        assert_eq!(start.elapsed(), PROGRESS_EVERY);
    }
}
