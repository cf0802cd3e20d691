//! Retry timing, kept pure so it can be tested exactly: jittered exponential backoff and a
//! restart budget (at most N restarts inside a sliding window).

use std::collections::VecDeque;
use std::time::Duration;
use tokio::time::Instant;

/// Exponential backoff with symmetric jitter: attempt n waits about `base * 2^(n-1)`, capped
/// at `max`, then scaled by a random factor in `[1 - jitter, 1 + jitter]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Backoff {
    pub base: Duration,
    pub max: Duration,
    pub jitter: f64,
}

impl Backoff {
    /// `unit` is a random number in `[0, 1)`; passing it in keeps this function pure.
    pub fn delay(&self, attempt: u32, unit: f64) -> Duration {
        let exp = attempt.saturating_sub(1).min(30);
        let raw = self.base.saturating_mul(1u32 << exp).min(self.max);
        let factor = 1.0 - self.jitter + 2.0 * self.jitter * unit.clamp(0.0, 1.0);
        raw.mul_f64(factor.max(0.0))
    }
}

/// Allows at most `max` restarts in any `window`.
#[derive(Clone, Debug)]
pub struct RestartBudget {
    max: usize,
    window: Duration,
    spent: VecDeque<Instant>,
}

impl RestartBudget {
    pub fn new(max: usize, window: Duration) -> Self {
        Self {
            max,
            window,
            spent: VecDeque::new(),
        }
    }

    /// Spends one restart if the budget allows it at `now`.
    pub fn try_spend(&mut self, now: Instant) -> bool {
        while self
            .spent
            .front()
            .is_some_and(|t| now.duration_since(*t) >= self.window)
        {
            self.spent.pop_front();
        }
        if self.spent.len() >= self.max {
            return false;
        }
        self.spent.push_back(now);
        true
    }

    pub fn spent(&self) -> usize {
        self.spent.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_caps_and_jitters_within_bounds() {
        let b = Backoff {
            base: Duration::from_secs(1),
            max: Duration::from_secs(10),
            jitter: 0.2,
        };
        assert_eq!(b.delay(1, 0.5), Duration::from_secs(1));
        assert_eq!(b.delay(2, 0.5), Duration::from_secs(2));
        assert_eq!(b.delay(4, 0.5), Duration::from_secs(8));
        assert_eq!(b.delay(5, 0.5), Duration::from_secs(10));
        assert_eq!(b.delay(99, 0.5), Duration::from_secs(10));
        assert_eq!(b.delay(1, 0.0), Duration::from_millis(800));
        assert_eq!(b.delay(1, 1.0), Duration::from_millis(1200));
    }

    #[tokio::test(start_paused = true)]
    async fn budget_refills_as_the_window_slides() {
        let mut budget = RestartBudget::new(2, Duration::from_secs(60));
        assert!(budget.try_spend(Instant::now()));
        tokio::time::advance(Duration::from_secs(30)).await;
        assert!(budget.try_spend(Instant::now()));
        assert!(
            !budget.try_spend(Instant::now()),
            "third restart inside the window"
        );
        tokio::time::advance(Duration::from_secs(30)).await;
        assert!(
            budget.try_spend(Instant::now()),
            "the first one has left the window"
        );
        assert!(!budget.try_spend(Instant::now()));
    }
}

/// When and whether to try a server again.
#[derive(Clone, Debug)]
pub struct RetryPolicy {
    pub backoff: Backoff,
    /// Retries of the first connection on transient errors.
    pub initial_retries: u32,
    /// stdio: restarts allowed inside `restart_window` after a server had been ready.
    pub restart_budget: usize,
    pub restart_window: Duration,
    /// HTTP: reconnects of a dropped remote server before giving up.
    pub http_reconnects: u32,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            backoff: Backoff {
                base: Duration::from_secs(1),
                max: Duration::from_secs(30),
                jitter: 0.2,
            },
            initial_retries: 3,
            restart_budget: 5,
            restart_window: Duration::from_secs(600),
            http_reconnects: 5,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Next {
    RetryAfter { attempt: u32, delay: Duration },
    GiveUp,
}

/// The retry state of one server.
#[derive(Clone, Debug)]
pub struct Retrier {
    policy: RetryPolicy,
    remote: bool,
    budget: RestartBudget,
    attempt: u32,
    ever_ready: bool,
}

impl Retrier {
    pub fn new(policy: RetryPolicy, remote: bool) -> Self {
        let budget = RestartBudget::new(policy.restart_budget, policy.restart_window);
        Self {
            policy,
            remote,
            budget,
            attempt: 0,
            ever_ready: false,
        }
    }

    pub fn on_ready(&mut self) {
        self.ever_ready = true;
        self.attempt = 0;
    }

    /// Decides after a failed connection or a lost one. `unit` is a random number in [0, 1).
    pub fn on_failure(&mut self, transient: bool, now: Instant, unit: f64) -> Next {
        if !transient {
            return Next::GiveUp;
        }
        self.attempt += 1;
        let attempt = if !self.ever_ready {
            if self.attempt > self.policy.initial_retries {
                return Next::GiveUp;
            }
            self.attempt
        } else if self.remote {
            if self.attempt > self.policy.http_reconnects {
                return Next::GiveUp;
            }
            self.attempt
        } else {
            if !self.budget.try_spend(now) {
                return Next::GiveUp;
            }
            // Restarts that keep coming back wait longer each time.
            self.budget.spent() as u32
        };
        Next::RetryAfter {
            attempt,
            delay: self.policy.backoff.delay(attempt, unit),
        }
    }
}

#[cfg(test)]
mod retrier_tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            backoff: Backoff {
                base: Duration::from_secs(1),
                max: Duration::from_secs(60),
                jitter: 0.0,
            },
            ..RetryPolicy::default()
        }
    }

    fn delays(r: &mut Retrier, n: usize) -> Vec<Next> {
        (0..n)
            .map(|_| r.on_failure(true, Instant::now(), 0.5))
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn first_connection_retries_three_times_then_gives_up() {
        let mut r = Retrier::new(policy(), true);
        let got = delays(&mut r, 4);
        let secs = |s: u32| Next::RetryAfter {
            attempt: s,
            delay: Duration::from_secs(1u64 << (s - 1)),
        };
        assert_eq!(got, vec![secs(1), secs(2), secs(3), Next::GiveUp]);
    }

    #[tokio::test(start_paused = true)]
    async fn permanent_errors_never_retry() {
        let mut r = Retrier::new(policy(), true);
        assert_eq!(r.on_failure(false, Instant::now(), 0.5), Next::GiveUp);
    }

    #[tokio::test(start_paused = true)]
    async fn remote_reconnects_five_times_from_one_second_doubling() {
        let mut r = Retrier::new(policy(), true);
        r.on_ready();
        let got: Vec<_> = delays(&mut r, 6);
        let expect: Vec<_> = [1, 2, 4, 8, 16]
            .iter()
            .enumerate()
            .map(|(i, s)| Next::RetryAfter {
                attempt: i as u32 + 1,
                delay: Duration::from_secs(*s),
            })
            .chain([Next::GiveUp])
            .collect();
        assert_eq!(got, expect);
    }

    #[tokio::test(start_paused = true)]
    async fn stdio_restarts_within_budget_even_when_each_restart_succeeds() {
        let mut r = Retrier::new(policy(), false);
        r.on_ready();
        for i in 1..=5u32 {
            let next = r.on_failure(true, Instant::now(), 0.5);
            assert_eq!(
                next,
                Next::RetryAfter {
                    attempt: i,
                    delay: Duration::from_secs(1u64 << (i - 1))
                }
            );
            r.on_ready(); // came back, then crashed again
            tokio::time::advance(Duration::from_secs(10)).await;
        }
        assert_eq!(
            r.on_failure(true, Instant::now(), 0.5),
            Next::GiveUp,
            "budget spent"
        );
        tokio::time::advance(Duration::from_secs(600)).await;
        assert!(matches!(
            r.on_failure(true, Instant::now(), 0.5),
            Next::RetryAfter { .. }
        ));
    }
}
