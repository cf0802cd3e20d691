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
    /// `unit` is a random number in `[0, 1)`; passing it in keeps this function pure. Total:
    /// a jittered delay past what a `Duration` holds is the longest one (`mul_f64` would
    /// panic there), and a draw that is not a number counts as the middle.
    pub fn delay(&self, attempt: u32, unit: f64) -> Duration {
        let exp = attempt.saturating_sub(1).min(30);
        let raw = self.base.saturating_mul(1u32 << exp).min(self.max);
        let unit = if unit.is_nan() {
            0.5
        } else {
            unit.clamp(0.0, 1.0)
        };
        let jitter = if self.jitter.is_nan() {
            0.0
        } else {
            self.jitter.clamp(0.0, 1.0)
        };
        let factor = 1.0 - jitter + 2.0 * jitter * unit;
        Duration::try_from_secs_f64(raw.as_secs_f64() * factor).unwrap_or(Duration::MAX)
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

    mod properties {
        use super::*;
        use proptest::collection::vec;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(1000))]

            /// Any settings, any attempt, any random draw (NaN and infinities included):
            /// a delay is computed without a panic, stays within the jittered cap, and does
            /// not shrink as attempts go on.
            #[test]
            fn a_delay_is_total_bounded_by_the_jittered_cap_and_never_shrinks(
                base in any::<u64>(),
                max in any::<u64>(),
                jitter in 0.0f64..=1.0,
                attempt in any::<u32>(),
                unit in any::<f64>(),
            ) {
                let b = Backoff {
                    base: Duration::from_millis(base),
                    max: Duration::from_secs(max),
                    jitter,
                };
                let d = b.delay(attempt, unit);
                let cap = b.max.as_secs_f64() * (1.0 + jitter);
                prop_assert!(d.as_secs_f64() <= cap * (1.0 + 1e-9) + 1e-9, "{d:?} over {cap}");
                prop_assert!(b.delay(attempt.saturating_add(1), unit) >= d);
            }

            /// However restarts are spaced, no window of the budget's length ever holds
            /// more than the budget allows, and a restart is refused only when it would.
            #[test]
            fn no_window_holds_more_restarts_than_the_budget(
                max in 0usize..6,
                window_ms in 1u64..5_000,
                gaps in vec(0u64..3_000, 1..60),
            ) {
                let window = Duration::from_millis(window_ms);
                let mut budget = RestartBudget::new(max, window);
                let start = Instant::now();
                let mut at = start;
                let mut granted: Vec<Instant> = Vec::new();
                for gap in gaps {
                    at += Duration::from_millis(gap);
                    let recent = granted.iter().filter(|t| at.duration_since(**t) < window).count();
                    prop_assert_eq!(budget.try_spend(at), recent < max);
                    if recent < max {
                        granted.push(at);
                    }
                }
            }
        }
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
            if !self.budget.try_spend(now) && !cfg!(feature = "injected-bug") {
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
