//! `mcp-host-sim [--seeds N] [--from S] [--trace] [--replay K] [--require-coverage]`: runs
//! the simulation for seeds S..S+N (default 0..200), then runs the first K of them (default
//! 0) once more and requires the same trace, and with `--require-coverage` that the seeds
//! between them reached everything [`mcp_host_sim::MUST_REACH`] names; `MCP_HOST_SIM_SEED=S` replays that one seed and prints its
//! trace. A violation prints the seed, what broke and the end of the trace, and exits 1.
//! With `RUST_LOG` set, the host's own logs go to stderr too.

#![allow(clippy::print_stdout, clippy::print_stderr)] // A command-line tool's own output.

use std::process::ExitCode;

fn main() -> ExitCode {
    // The host's own logs, for reading a replayed seed (`RUST_LOG=debug`).
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    let mut seeds = 200u64;
    let mut from = 0u64;
    let mut trace = false;
    let mut replay = 0u64;
    let mut require_coverage = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let number = |v: Option<String>| v.and_then(|v| v.parse::<u64>().ok());
        match arg.as_str() {
            "--seeds" => match number(args.next()) {
                Some(n) => seeds = n,
                None => return usage("--seeds needs a number"),
            },
            "--from" => match number(args.next()) {
                Some(n) => from = n,
                None => return usage("--from needs a number"),
            },
            "--trace" => trace = true,
            "--require-coverage" => require_coverage = true,
            "--replay" => match number(args.next()) {
                Some(n) => replay = n,
                None => return usage("--replay needs a number"),
            },
            other => return usage(&format!("unknown argument `{other}`")),
        }
    }
    if let Ok(seed) = std::env::var("MCP_HOST_SIM_SEED") {
        let Ok(seed) = seed.trim().parse::<u64>() else {
            return usage("MCP_HOST_SIM_SEED must be a number");
        };
        (from, seeds, trace, require_coverage) = (seed, 1, true, false);
    }
    let base = match mcp_host_sim::base_options() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("mcp-host-sim: {e}");
            return ExitCode::FAILURE;
        }
    };
    let started = std::time::Instant::now();
    let mut covered = mcp_host_sim::Covered::default();
    for seed in from..from.saturating_add(seeds) {
        let outcome = mcp_host_sim::run(seed, &base);
        covered.reached.extend(outcome.covered.iter().cloned());
        if trace {
            for line in &outcome.trace {
                println!("{line}");
            }
        }
        if !outcome.violations.is_empty() {
            eprintln!("mcp-host-sim: seed {seed} broke an invariant:");
            for v in &outcome.violations {
                eprintln!("  - {v}");
            }
            if !trace {
                eprintln!("last steps:");
                let tail = outcome.trace.len().saturating_sub(25);
                for line in &outcome.trace[tail..] {
                    eprintln!("  {line}");
                }
            }
            eprintln!("replay: MCP_HOST_SIM_SEED={seed} scripts/sim.sh");
            return ExitCode::FAILURE;
        }
    }
    println!(
        "mcp-host-sim: {seeds} seeds from {from} held every invariant ({:.1} s)",
        started.elapsed().as_secs_f64()
    );
    let missing = covered.missing();
    if require_coverage && !missing.is_empty() {
        eprintln!("mcp-host-sim: the seeds never reached {missing:?}");
        return ExitCode::FAILURE;
    }
    for seed in from..from.saturating_add(replay.min(seeds)) {
        if let Err(diff) = mcp_host_sim::replays(seed, &base) {
            eprintln!("mcp-host-sim: seed {seed} did not replay the same run: {diff}");
            return ExitCode::FAILURE;
        }
    }
    if replay > 0 {
        println!(
            "mcp-host-sim: the first {} seeds replayed exactly",
            replay.min(seeds)
        );
    }
    ExitCode::SUCCESS
}

fn usage(problem: &str) -> ExitCode {
    eprintln!(
        "mcp-host-sim: {problem}\nusage: mcp-host-sim [--seeds N] [--from S] [--trace] [--replay K] [--require-coverage]"
    );
    ExitCode::from(2)
}
