//! How often a server's lists are read again after it says they changed
//! (`notifications/tools/list_changed` and the others). Each re-listing rebuilds the
//! catalogue of every server, so a server announcing changes without end made the host
//! rebuild as fast as it could list. The first re-listing after a quiet spell starts at
//! once; one asked for soon after the last waits until a gap has passed, and the gap doubles
//! while the server keeps asking, up to [`MAX_GAP`]. Pure: the runner sleeps until the
//! instant it is given.

use std::time::Duration;
use tokio::time::Instant;

/// The gap after a re-listing that followed a quiet spell.
pub(crate) const FIRST_GAP: Duration = Duration::from_millis(250);
/// The longest gap: a server that never stops announcing changes is listed this often.
pub(crate) const MAX_GAP: Duration = Duration::from_secs(30);

/// The pace of one kind of re-listing of one session.
#[derive(Debug)]
pub(crate) struct Pace {
    last: Option<Instant>,
    gap: Duration,
}

impl Default for Pace {
    fn default() -> Self {
        Self {
            last: None,
            gap: FIRST_GAP,
        }
    }
}

impl Pace {
    /// When a re-listing asked for at `now` may start; counted as started then.
    pub(crate) fn start_at(&mut self, now: Instant) -> Instant {
        let Some(last) = self.last else {
            self.last = Some(now);
            return now;
        };
        let start = now.max(last + self.gap);
        // Asked again within twice the gap: the server is busy, so the next gap doubles.
        // After a quiet spell the pace starts over.
        self.gap = if now < last + self.gap * 2 {
            (self.gap * 2).min(MAX_GAP)
        } else {
            FIRST_GAP
        };
        self.last = Some(start);
        start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quiet_server_is_listed_at_once() {
        let t0 = Instant::now();
        let mut pace = Pace::default();
        assert_eq!(pace.start_at(t0), t0);
        let later = t0 + Duration::from_secs(60);
        assert_eq!(pace.start_at(later), later);
    }

    /// A server that asks again the moment each listing ends is listed ever less often,
    /// until once every thirty seconds: an hour of it is a few hundred listings at most.
    #[test]
    fn a_server_that_never_stops_asking_is_listed_at_the_slowest_pace() {
        let t0 = Instant::now();
        let mut pace = Pace::default();
        let mut now = t0;
        let mut listings = 0;
        while now < t0 + Duration::from_secs(3600) {
            now = pace.start_at(now);
            listings += 1;
        }
        assert!(listings < 3600 / 30 + 20, "{listings}");
        let a = pace.start_at(now);
        let b = pace.start_at(a);
        assert_eq!(b - a, MAX_GAP);
    }

    /// After a quiet spell the gap starts over.
    #[test]
    fn the_pace_starts_over_after_a_quiet_spell() {
        let t0 = Instant::now();
        let mut pace = Pace::default();
        let mut now = t0;
        for _ in 0..10 {
            now = pace.start_at(now);
        }
        let quiet = now + MAX_GAP * 3;
        assert_eq!(pace.start_at(quiet), quiet);
        assert_eq!(pace.start_at(quiet), quiet + FIRST_GAP);
    }
}
