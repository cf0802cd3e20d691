//! How much of one tool result the model gets inline.
//!
//! Tokens are estimated, not counted: one token per four bytes of UTF-8, rounded up. No
//! single tokenizer serves every provider, and for English prose, code and JSON real
//! tokenizers land between three and five bytes a token, so the estimate errs neither way by
//! much; it is the same rule the catalogue uses for tool definitions.
//!
//! Default budget: a result above 10,000 tokens is passed with a warning (to the user and,
//! in one line, to the model); a result above 25,000 tokens or 50,000 characters is stored
//! whole and the model gets a preview and a handle. A server's `maxResultTokens`, or a
//! tool's under `tools.<name>.maxResultTokens`, replaces both limits with its own cap (and
//! warns at the smaller of 10,000 and half the cap).

/// Above this, a result is flagged as large.
pub const WARN_TOKENS: u64 = 10_000;
/// Above this, a result is stored and previewed.
pub const CAP_TOKENS: u64 = 25_000;
/// Above this many characters, a result is stored and previewed even under the token cap.
pub const DEFAULT_RESULT_CHARS: usize = 50_000;

pub fn estimate_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// The limits for one result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    pub warn_tokens: u64,
    pub cap_tokens: u64,
    pub cap_chars: usize,
}

/// What to do with a result of a given size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fit {
    Inline,
    /// Inline, but large enough to say so.
    InlineLarge {
        tokens: u64,
    },
    /// Too large: store it and preview.
    Spill {
        tokens: u64,
    },
}

impl Budget {
    /// The default limits, with the engine's character cap.
    pub fn standard(cap_chars: usize) -> Self {
        Self {
            warn_tokens: WARN_TOKENS,
            cap_tokens: CAP_TOKENS,
            cap_chars,
        }
    }

    /// The limits for a configured cap (a server's or a tool's `maxResultTokens`).
    pub fn configured(cap_tokens: u64) -> Self {
        Self {
            warn_tokens: WARN_TOKENS.min(cap_tokens / 2),
            cap_tokens,
            cap_chars: usize::try_from(cap_tokens.saturating_mul(4)).unwrap_or(usize::MAX),
        }
    }

    pub fn fit(&self, text: &str) -> Fit {
        let tokens = estimate_tokens(text);
        if tokens > self.cap_tokens || text.chars().count() > self.cap_chars {
            Fit::Spill { tokens }
        } else if tokens > self.warn_tokens {
            Fit::InlineLarge { tokens }
        } else {
            Fit::Inline
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_budget_warns_then_spills_by_tokens_or_characters() {
        let b = Budget::standard(DEFAULT_RESULT_CHARS);
        assert_eq!(b.fit(&"a".repeat(40_000)), Fit::Inline);
        assert_eq!(
            b.fit(&"a".repeat(40_004)),
            Fit::InlineLarge { tokens: 10_001 }
        );
        assert_eq!(b.fit(&"a".repeat(50_001)), Fit::Spill { tokens: 12_501 });
        // Multi-byte text: few characters, many bytes, so the token cap decides.
        let wide = "€".repeat(34_000);
        assert_eq!(b.fit(&wide), Fit::Spill { tokens: 25_500 });
    }

    #[test]
    fn a_configured_cap_replaces_both_limits() {
        let small = Budget::configured(100);
        assert_eq!(small.fit(&"a".repeat(300)), Fit::InlineLarge { tokens: 75 });
        assert_eq!(small.fit(&"a".repeat(401)), Fit::Spill { tokens: 101 });
        let large = Budget::configured(100_000);
        assert_eq!(
            large.fit(&"a".repeat(200_000)),
            Fit::InlineLarge { tokens: 50_000 }
        );
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        fn rank(f: Fit) -> u8 {
            match f {
                Fit::Inline => 0,
                Fit::InlineLarge { .. } => 1,
                Fit::Spill { .. } => 2,
            }
        }

        fn budgets() -> impl Strategy<Value = Budget> {
            prop_oneof![
                (0usize..4_000).prop_map(Budget::standard),
                (0u64..2_000).prop_map(Budget::configured),
            ]
        }

        /// Text of any mix of widths (ASCII, two-, three- and four-byte characters), as
        /// runs, so long texts are cheap to make.
        fn text() -> impl Strategy<Value = String> {
            proptest::collection::vec((0usize..4, 1usize..200), 0..40).prop_map(|runs| {
                (runs.into_iter())
                    .map(|(c, n)| ['a', 'é', '€', '😀'][c].to_string().repeat(n))
                    .collect()
            })
        }

        proptest! {
            /// What is inlined fits every limit; a longer text never fits better than
            /// its prefix; the warning never sits above the cap.
            #[test]
            fn inlined_results_fit_and_growing_never_helps(
                budget in budgets(),
                head in text(),
                tail in text(),
            ) {
                prop_assert!(budget.warn_tokens <= budget.cap_tokens);
                let whole = format!("{head}{tail}");
                let (a, b) = (budget.fit(&head), budget.fit(&whole));
                prop_assert!(rank(a) <= rank(b), "{a:?} then {b:?}");
                if rank(b) < 2 {
                    prop_assert!(estimate_tokens(&whole) <= budget.cap_tokens);
                    prop_assert!(whole.chars().count() <= budget.cap_chars);
                }
                if let Fit::InlineLarge { tokens } | Fit::Spill { tokens } = b {
                    prop_assert_eq!(tokens, estimate_tokens(&whole));
                }
            }

            /// A configured cap is never exceeded inline, in tokens or in characters.
            #[test]
            fn a_configured_cap_holds(cap in 0u64..2_000, t in text()) {
                let b = Budget::configured(cap);
                if rank(b.fit(&t)) < 2 {
                    prop_assert!(estimate_tokens(&t) <= cap);
                }
            }
        }
    }
}
