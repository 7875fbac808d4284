//! The `workbench` command line.
//!
//! ```text
//! cargo run --release -p workbench                      # quick suite, every subject
//! cargo run --release -p workbench -- run --size full   # the specs' full sizes
//! cargo run --release -p workbench -- run -s heap -s tokio-sleep -w burst
//! cargo run --release -p workbench -- list
//! cargo run --release -p workbench -- report reports/latest/results.json
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use workbench::distributed;
use workbench::record::Results;
use workbench::report;
use workbench::spec::Workload;
use workbench::subjects;
use workbench::suite::Suite;

/// Runs seeded timer workloads against every scheduler and its peers and
/// writes an HTML report.
#[derive(Parser, Debug)]
#[command(name = "workbench", version)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Runs a suite (the default, with the quick profile).
    Run(RunArgs),
    /// Lists the schedulers, peers and workloads.
    List,
    /// (Internal) Measures memory per pending timer in this fresh process
    /// and prints it: sweeps run it as a child.
    #[command(hide = true)]
    MemoryProbe {
        /// Subject name.
        subject: String,
        /// Pending timers.
        size: u64,
        /// The workload's seed.
        seed: u64,
        /// The sweep step (random stream).
        step: usize,
        /// The delay distribution, as JSON.
        delay: String,
    },
    /// (Internal) A worker process or the load benchmark of the Redis
    /// scheduler (`schedulers-redis-worker`'s command line): the
    /// distributed workload starts its worker processes as this binary.
    #[command(name = "redis-worker", hide = true)]
    RedisWorker {
        /// `work …` or `bench …`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Re-renders a report from a results.json.
    Report {
        /// The results file.
        results: PathBuf,
        /// Where to write the report (default: the results file's folder).
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

#[derive(clap::Args, Debug, Default)]
struct RunArgs {
    /// Subjects to run (repeatable; default: all). See `workbench list`.
    #[arg(short, long = "scheduler", value_name = "NAME")]
    schedulers: Vec<String>,
    /// Workloads to run (repeatable; default: all shipped).
    #[arg(short, long = "workload", value_name = "NAME")]
    workloads: Vec<String>,
    /// Extra spec files to run (repeatable).
    #[arg(long = "spec", value_name = "FILE")]
    specs: Vec<PathBuf>,
    /// `quick` (each spec's [quick] profile), `full` (the specs as
    /// written), or a factor multiplying the full counts (`0.01`).
    #[arg(long, default_value = "quick")]
    size: String,
    /// Repeats of every (subject, workload); default 3.
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    /// Where to put the report folder (default: `reports/` of the workspace).
    #[arg(long)]
    out: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        None => run(RunArgs {
            size: "quick".into(),
            repeats: 3,
            ..RunArgs::default()
        }),
        Some(Command::Run(args)) => run(args),
        Some(Command::List) => list(),
        Some(Command::Report { results, out }) => rerender(&results, out),
        Some(Command::RedisWorker { args }) => {
            worker_command().and_then(|cmd| schedulers::distributed::harness::run(&args, &cmd))
        }
        Some(Command::MemoryProbe {
            subject,
            size,
            seed,
            step,
            delay,
        }) => memory_probe(&subject, size, seed, step, &delay),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("workbench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The command that starts this binary as a Redis worker.
fn worker_command() -> Result<Vec<std::ffi::OsString>, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    Ok(vec![
        exe.into_os_string(),
        distributed::WORKER_SUBCOMMAND.into(),
    ])
}

fn memory_probe(
    subject: &str,
    size: u64,
    seed: u64,
    step: usize,
    delay: &str,
) -> Result<(), String> {
    let s = subjects::find(subject).ok_or_else(|| format!("unknown subject {subject:?}"))?;
    let make = s
        .timers
        .ok_or_else(|| format!("{subject} is not an in-process subject"))?;
    let delay: workbench::spec::Dist =
        serde_json::from_str(delay).map_err(|e| format!("delay: {e}"))?;
    let bytes = workbench::runner::sweep::memory_probe(&make, size, seed, step, &delay)
        .map_err(|e| e.to_string())?;
    println!("{bytes}");
    Ok(())
}

fn list() -> Result<(), String> {
    println!("schedulers and peers:");
    for s in subjects::all() {
        println!(
            "  {:<14} {:<9} {}",
            s.name,
            format!("{:?}", s.kind).to_lowercase(),
            s.about
        );
    }
    println!(
        "  {:<14} {:<9} schedulers::distributed on one local Redis, 1, 2 and 4 worker processes (workload `{}` only)",
        format!("{}-Nw", distributed::SUBJECT_PREFIX),
        "algorithm",
        distributed::WORKLOAD
    );
    println!(
        "  {:<14} {:<9} BullMQ through the Node harness in workbench/bullmq, 1, 2 and 4 worker processes (workload `{}` only)",
        format!("{}-Nw", distributed::bullmq::SUBJECT_PREFIX),
        "peer",
        distributed::WORKLOAD
    );
    println!("\nworkloads (workbench/workloads/*.toml):");
    for w in workbench::workloads::shipped().map_err(|e| e.to_string())? {
        println!("  {:<22} {}", w.name, w.description);
        for line in w.quick().summary() {
            println!("  {:<22}   quick: {line}", "");
        }
    }
    let plan = distributed::Plan::for_size("quick");
    println!(
        "  {:<22} {}",
        distributed::WORKLOAD,
        plan.info().description
    );
    Ok(())
}

fn run(args: RunArgs) -> Result<(), String> {
    if args.repeats == 0 {
        return Err("--repeats must be at least 1".into());
    }
    let run_distributed = distributed::selected(&args.schedulers, &args.workloads);
    let worker = worker_command()?;
    let subject_names: Vec<&String> = args
        .schedulers
        .iter()
        .filter(|s| {
            !s.starts_with(distributed::SUBJECT_PREFIX)
                && !s.starts_with(distributed::bullmq::SUBJECT_PREFIX)
        })
        .collect();
    let workload_names: Vec<&String> = args
        .workloads
        .iter()
        .filter(|w| *w != distributed::WORKLOAD)
        .collect();
    let all = subjects::all();
    let chosen: Vec<_> = if args.schedulers.is_empty() {
        all
    } else {
        let mut v = Vec::new();
        for name in subject_names {
            let s = all.iter().find(|s| s.name == name).ok_or_else(|| {
                format!(
                    "unknown scheduler {name:?}; known: {}",
                    all.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
                )
            })?;
            v.push(s.clone());
        }
        v
    };
    let shipped = workbench::workloads::shipped().map_err(|e| e.to_string())?;
    let mut specs: Vec<Workload> = if args.workloads.is_empty() && !args.specs.is_empty() {
        Vec::new()
    } else if args.workloads.is_empty() {
        shipped
    } else {
        let mut v = Vec::new();
        for name in workload_names {
            let w = shipped.iter().find(|w| &w.name == name).ok_or_else(|| {
                format!(
                    "unknown workload {name:?}; known: {}",
                    shipped
                        .iter()
                        .map(|w| w.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?;
            v.push(w.clone());
        }
        v
    };
    for path in &args.specs {
        specs.push(Workload::load(path).map_err(|e| e.to_string())?);
    }
    let (profile, workloads, note) = match args.size.as_str() {
        "quick" => (
            "quick",
            specs.iter().map(Workload::quick).collect::<Vec<_>>(),
            "Quick profile: each workload's [quick] table shrinks its counts and durations (periods stay) so the suite \
             finishes in a few minutes on 2 cores; the effective parameters are listed with each workload. \
             Run `workbench run --size full` for the specs as written.",
        ),
        "full" => ("full", specs.clone(), "Full profile: the specs as written."),
        f => {
            let factor: f64 = f.parse().map_err(|_| format!("--size {f:?}: expected quick, full or a number"))?;
            if !(factor.is_finite() && factor > 0.0) {
                return Err(format!("--size {f}: the factor must be above zero"));
            }
            ("custom", specs.iter().map(|w| w.resized(factor)).collect(), "Custom size: the specs' counts multiplied by --size.")
        }
    };
    let (_, stamp) = workbench::env::utc_now();
    let run_id = format!("{stamp}-{profile}");
    let env = workbench::env::detect(profile);
    let dist_env = env.clone();
    let root = args.out.unwrap_or_else(report::default_root);
    let dir = root.join(&run_id);
    eprintln!(
        "workbench: {} subjects × {} workloads × {} repeats ({profile}) -> {}",
        chosen.len(),
        workloads.len(),
        args.repeats,
        dir.display()
    );
    if let Ok(exe) = std::env::current_exe() {
        let _ = workbench::runner::MEMORY_PROBE_EXE.set(exe);
    }
    let mut results = Suite {
        subjects: chosen,
        workloads,
        repeats: args.repeats,
        run_id,
        env,
        progress: true,
        notes: vec![note.to_owned()],
    }
    .run();
    if run_distributed {
        let plan = distributed::Plan::for_size(&args.size);
        distributed::run_into(&mut results, &plan, args.repeats, &dist_env, &worker);
    }
    report::write(&results, &dir)
        .map_err(|e| format!("writing the report to {}: {e}", dir.display()))?;
    report::point_latest(&root, &dir)
        .map_err(|e| format!("pointing {}/latest: {e}", root.display()))?;
    println!("{}", report::headline_markdown(&results));
    for n in &results.notes {
        println!("note: {n}");
    }
    println!(
        "\nran in {:.0} s; report: {}",
        results.wall_seconds,
        dir.join("index.html").display()
    );
    Ok(())
}

fn rerender(path: &Path, out: Option<PathBuf>) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let results: Results =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let dir = out.unwrap_or_else(|| {
        path.parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    });
    report::write(&results, &dir)
        .map_err(|e| format!("writing the report to {}: {e}", dir.display()))?;
    println!("report: {}", dir.join("index.html").display());
    Ok(())
}
