//! The simulation as a test: a fixed budget of seeds holds every invariant. Exact replay
//! (tokio's draws seeded, which needs `--cfg tokio_unstable`) and the injected bug (the
//! restart budget never spent, feature `injected-bug`) are checked by `scripts/sim.sh`,
//! which CI runs: neither can be switched on for one test without building the workspace
//! twice.

use mcp_host_sim::run_seeds;

#[test]
fn a_budget_of_seeds_holds_every_invariant() {
    match run_seeds(10_000, 60) {
        Ok(n) => assert_eq!(n, 60),
        Err(outcome) => panic!(
            "seed {} broke an invariant: {:#?}\nreplay: MCP_HOST_SIM_SEED={} scripts/sim.sh",
            outcome.seed, outcome.violations, outcome.seed
        ),
    }
}
