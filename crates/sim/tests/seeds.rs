//! The simulation as a test: a fixed budget of seeds holds every invariant. Exact replay
//! (tokio's draws seeded, which needs `--cfg tokio_unstable`) and the injected bug (the
//! restart budget never spent, feature `injected-bug`) are checked by `scripts/sim.sh`,
//! which CI runs: neither can be switched on for one test without building the workspace
//! twice.

use mcp_host_sim::run_seeds;

#[test]
fn a_budget_of_seeds_holds_every_invariant() {
    match run_seeds(10_000, 60) {
        Ok(covered) => {
            assert_eq!(covered.seeds, 60);
            assert!(
                covered.missing().is_empty(),
                "the seeds never reached {:?}; they reached {:?}",
                covered.missing(),
                covered.reached
            );
        }
        Err(outcome) => panic!(
            "seed {} broke an invariant: {:#?}\nreplay: MCP_HOST_SIM_SEED={} scripts/sim.sh",
            outcome.seed, outcome.violations, outcome.seed
        ),
    }
}

/// Seeds that once broke an invariant, run in every test run. What a seed draws changes
/// when the simulation does, so each defect's own guard is a test next to its fix; these
/// keep the runs that found them.
#[test]
fn the_seeds_that_found_defects_hold() {
    // 8: a handshake given up on left the HTTP transport's task and stream open.
    // 36, 49: a remote server's retry budget reset at every handshake; stale progress
    // kept a hung call alive. 873: an answer on another request's stream answered a call.
    // 131: a remote server's liveness check held shutdown (with that fix reverted).
    for seed in [8, 36, 49, 131, 873] {
        if let Err(outcome) = run_seeds(seed, 1) {
            panic!("seed {seed} broke an invariant: {:#?}", outcome.violations);
        }
    }
}
