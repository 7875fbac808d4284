//! `schedulers-redis-worker` (feature `test-util`): a worker process of the
//! Redis scheduler for tests and benchmarks, or a throwaway Redis Cluster.
//! See [`schedulers_redis::cli`] for the command line, or run it with
//! `--help`.

use std::process::ExitCode;

use clap::Parser;
use schedulers_redis::cli::{self, Cli, Command};

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Work(args) => cli::work(&args),
        Command::Cluster(args) => cli::cluster(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("schedulers-redis-worker: {e}");
            ExitCode::FAILURE
        }
    }
}
