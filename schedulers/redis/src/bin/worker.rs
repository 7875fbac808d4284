//! `schedulers-redis-worker`: a worker process of the distributed scheduler,
//! and a load benchmark that drives several of them. See
//! [`schedulers::distributed::harness`] for the command line.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let respawn = match std::env::current_exe() {
        Ok(exe) => vec![exe.into_os_string()],
        Err(e) => {
            eprintln!("schedulers-redis-worker: cannot find this program: {e}");
            return ExitCode::FAILURE;
        }
    };
    match schedulers::distributed::harness::run(&args, &respawn) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("schedulers-redis-worker: {e}");
            ExitCode::FAILURE
        }
    }
}
