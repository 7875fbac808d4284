//! The `workbench` command line.
//!
//! ```text
//! cargo run --release -p workbench                      # the default selection, quick, minutes
//! cargo run --release -p workbench -- run --all         # every subject on every workload
//! cargo run --release -p workbench -- run --size full   # the specs' full sizes
//! cargo run --release -p workbench -- run -s heap -s tokio-sleep -w burst
//! cargo run --release -p workbench -- calibrate         # the peers against peer-calibration.md
//! cargo run --release -p workbench -- compare A/results.json B/results.json
//! cargo run --release -p workbench -- list
//! cargo run --release -p workbench -- report reports/latest/results.json
//! cargo run --release -p workbench -- redis-bench --shape drain --workers 1,2
//! cargo run --release -p workbench -- reference reports/latest/results.json > workbench/reference.toml
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::str::FromStr;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};

use workbench::calibration;
use workbench::distributed::{self, bench};
use workbench::estimate;
use workbench::record::{Metric, Results};
use workbench::report;
use workbench::runner::Subject;
use workbench::selection::{self, Reference, Selection};
use workbench::spec::Workload;
use workbench::subjects;
use workbench::suite::{self as suite_mod, Suite};

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
    /// Runs a suite: by default the default selection (below), quick size,
    /// 3 repeats, a verdict in minutes; `--all` for every subject.
    #[command(
        after_help = "The default selection: `workbench run --help` says it; `workbench list` shows it per workload.",
        after_long_help = selection::RULE
    )]
    Run(RunArgs),
    /// Runs the peers of `shared/reference/peer-calibration.md` on the
    /// workloads that reproduce its figures, at full size, and prints ours
    /// against the harness's.
    Calibrate {
        /// Repeats of every (peer, workload).
        #[arg(long, default_value_t = 3)]
        repeats: usize,
        /// Only these peers (repeatable; default: every calibrated peer).
        #[arg(short, long = "scheduler", value_name = "NAME")]
        schedulers: Vec<String>,
        /// Where to put the report folder (default: `reports/`).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Compares the medians of two runs (the same selection run twice):
    /// memory, lateness p50, batch costs and the contention workload's
    /// pairs/s and CPU per pair, each with its relative difference.
    Compare {
        /// The first run's results.json.
        a: PathBuf,
        /// The second run's results.json.
        b: PathBuf,
    },
    /// Lists the schedulers, peers and workloads, and the default
    /// selection: who runs each workload by default, and why.
    List,
    /// Writes the reference run the default selection is computed from
    /// (`workbench/reference.toml`) from the results.json of a finished
    /// `workbench run --all`, to stdout; further results files add the
    /// subjects that run could not start.
    Reference {
        /// The results file of a `run --all`.
        results: PathBuf,
        /// Results of runs of subjects the first could not start (same
        /// repeats).
        more: Vec<PathBuf>,
    },
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
    /// (Internal) Measures memory per calendar schedule in this fresh
    /// process and prints it: the calendar workload runs it as a child.
    #[command(hide = true)]
    CalendarProbe {
        /// Subject name.
        subject: String,
        /// The workload's `[calendar]` section, as JSON.
        calendar: String,
    },
    /// Runs the Redis scheduler's load benchmark on fresh local servers
    /// and prints one JSON report per run (what the distributed workload
    /// measures, one shape at a time).
    RedisBench(bench::BenchArgs),
    /// (Internal) A worker process of the Redis scheduler
    /// (`schedulers-redis-worker`'s command line): the load benchmark starts
    /// its worker processes as this binary.
    #[command(name = "redis-worker", hide = true)]
    RedisWorker {
        /// `work …`.
        #[command(subcommand)]
        command: schedulers_redis::cli::Command,
    },
    /// Re-renders a report from a results.json (a partial one too).
    Report {
        /// The results file.
        results: PathBuf,
        /// Where to write the report (default: the results file's folder).
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

/// How large the workloads run.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Size {
    /// Each spec's `[quick]` profile.
    Quick,
    /// The specs as written.
    Full,
    /// The full counts multiplied by a factor above zero.
    Factor(f64),
}

impl FromStr for Size {
    type Err = String;

    fn from_str(s: &str) -> Result<Size, String> {
        match s {
            "quick" => Ok(Size::Quick),
            "full" => Ok(Size::Full),
            f => match f.parse::<f64>() {
                Ok(x) if x.is_finite() && x > 0.0 => Ok(Size::Factor(x)),
                _ => Err(format!(
                    "{f:?}: expected quick, full or a factor above zero (0.01)"
                )),
            },
        }
    }
}

impl Size {
    fn profile(self) -> &'static str {
        match self {
            Size::Quick => "quick",
            Size::Full => "full",
            Size::Factor(_) => "custom",
        }
    }

    fn apply(self, w: &Workload) -> Workload {
        match self {
            Size::Quick => w.quick(),
            Size::Full => w.clone(),
            Size::Factor(f) => w.resized(f),
        }
    }

    fn note(self) -> &'static str {
        match self {
            Size::Quick => "Quick profile: each workload's [quick] table shrinks its counts and durations (periods stay) so the suite \
                 finishes in minutes on 2 cores; the effective parameters are listed with each workload. \
                 Run `workbench run --size full` for the specs as written.",
            Size::Full => "Full profile: the specs as written.",
            Size::Factor(_) => "Custom size: the specs' counts multiplied by --size.",
        }
    }
}

#[derive(clap::Args, Debug)]
struct RunArgs {
    /// Subjects to run, each on every chosen workload it runs (repeatable;
    /// default: the default selection). See `workbench list`.
    #[arg(short, long = "scheduler", value_name = "NAME", conflicts_with = "all")]
    schedulers: Vec<String>,
    /// Every subject on every workload it runs (about 20 minutes at the
    /// quick size), instead of the default selection.
    #[arg(long)]
    all: bool,
    /// Workloads to run (repeatable; default: all shipped).
    #[arg(short, long = "workload", value_name = "NAME")]
    workloads: Vec<String>,
    /// Extra spec files to run (repeatable).
    #[arg(long = "spec", value_name = "FILE")]
    specs: Vec<PathBuf>,
    /// `quick` (each spec's [quick] profile), `full` (the specs as
    /// written), or a factor multiplying the full counts (`0.01`).
    #[arg(long, default_value = "quick")]
    size: Size,
    /// Repeats of every (subject, workload): 3, the fewest whose median
    /// drops a stray repeat and the count the noise mark is calibrated on.
    #[arg(long, default_value_t = selection::REPEATS as u64, value_parser = clap::value_parser!(u64).range(1..))]
    repeats: u64,
    /// Where to put the report folder (default: `reports/` of the workspace).
    #[arg(long)]
    out: Option<PathBuf>,
}

impl Default for RunArgs {
    fn default() -> RunArgs {
        RunArgs {
            schedulers: Vec::new(),
            all: false,
            workloads: Vec::new(),
            specs: Vec::new(),
            size: Size::Quick,
            repeats: selection::REPEATS as u64,
            out: None,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        None => run(RunArgs::default()).map(drop),
        Some(Command::Run(args)) => run(args).map(drop),
        Some(Command::Calibrate {
            repeats,
            schedulers,
            out,
        }) => calibrate(repeats, schedulers, out),
        Some(Command::Compare { a, b }) => compare(&a, &b),
        Some(Command::List) => list(),
        Some(Command::Reference { results, more }) => reference(&results, &more),
        Some(Command::Report { results, out }) => rerender(&results, out),
        Some(Command::RedisBench(args)) => redis_bench(&args),
        Some(Command::RedisWorker { command }) => redis_worker(&command),
        Some(Command::MemoryProbe {
            subject,
            size,
            seed,
            step,
            delay,
        }) => memory_probe(&subject, size, seed, step, &delay),
        Some(Command::CalendarProbe { subject, calendar }) => calendar_probe(&subject, &calendar),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("workbench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the load benchmark with this binary as its worker processes.
fn redis_bench(args: &bench::BenchArgs) -> Result<()> {
    let exe = std::env::current_exe().context("finding this program")?;
    bench::run(args, &distributed::worker_command(&exe), &mut |report| {
        println!("{report}");
    })?;
    Ok(())
}

/// Runs the Redis worker's command line ([`schedulers_redis::cli`]).
fn redis_worker(command: &schedulers_redis::cli::Command) -> Result<()> {
    use schedulers_redis::cli::{self, Command};
    match command {
        Command::Work(args) => cli::work(args)?,
        Command::Cluster(args) => cli::cluster(args)?,
    }
    Ok(())
}

fn memory_probe(subject: &str, size: u64, seed: u64, step: usize, delay: &str) -> Result<()> {
    let s = subjects::find(subject).with_context(|| format!("unknown subject {subject:?}"))?;
    let make = s
        .timers
        .with_context(|| format!("{subject} is not an in-process subject"))?;
    let delay: workbench::random::Dist = serde_json::from_str(delay).context("the delay")?;
    let bytes = workbench::runner::sweep::memory_probe(&make, size, seed, step, &delay)?;
    println!("{bytes}");
    Ok(())
}

fn calendar_probe(subject: &str, calendar: &str) -> Result<()> {
    let s = subjects::find(subject).with_context(|| format!("unknown subject {subject:?}"))?;
    let make = s
        .timers
        .with_context(|| format!("{subject} is not an in-process subject"))?;
    let calendar: workbench::spec::Calendar =
        serde_json::from_str(calendar).context("the calendar section")?;
    println!("{}", workbench::calendar::memory_probe(&make, &calendar)?);
    Ok(())
}

fn list() -> Result<()> {
    println!("schedulers and peers:");
    let all = subjects::all();
    for s in &all {
        println!(
            "  {:<22} {:<9} {}",
            s.name,
            format!("{:?}", s.kind).to_lowercase(),
            s.about
        );
    }
    let shipped = workbench::workloads::shipped()?;
    println!("\nworkloads (workbench/workloads/*.toml):");
    for w in &shipped {
        println!("  {:<22} {}", w.name, w.description);
        for line in w.quick().summary() {
            println!("  {:<22}   quick: {line}", "");
        }
    }
    let reference = Reference::shipped()?;
    let sel = Selection::default_for(&all, &shipped, &reference, selection::REPEATS)
        .describe(&all, &shipped, &reference);
    println!(
        "\nthe default selection (`workbench run`): {}\n",
        sel.info.rule
    );
    for line in &sel.info.lines {
        println!("  {line}");
    }
    println!("\nnot in it: {}", sel.info.left_out.join(", "));
    println!("the rest: {}", sel.info.rest);
    Ok(())
}

fn reference(path: &Path, more: &[PathBuf]) -> Result<()> {
    let results = report::read_results(path)?;
    let more = more
        .iter()
        .map(|p| report::read_results(p))
        .collect::<Result<Vec<_>, _>>()?;
    print!("{}", Reference::from_runs(&results, &more)?.to_toml());
    Ok(())
}

/// Picks `names` out of `all` by `name`, in the order given; empty `names`
/// means all of them.
fn pick<T: Clone>(
    all: &[T],
    names: &[String],
    name: impl Fn(&T) -> &str,
    what: &str,
) -> Result<Vec<T>> {
    if names.is_empty() {
        return Ok(all.to_vec());
    }
    names
        .iter()
        .map(|n| {
            all.iter().find(|x| name(x) == n).cloned().with_context(|| {
                format!(
                    "unknown {what} {n:?}; known: {}",
                    all.iter().map(&name).collect::<Vec<_>>().join(", ")
                )
            })
        })
        .collect()
}

/// Runs a suite, writing `results.json` after every finished run and the
/// report at the end; returns the results and the report's folder.
fn run(args: RunArgs) -> Result<(Results, PathBuf)> {
    let all = subjects::all();
    let shipped = workbench::workloads::shipped()?;
    let mut specs: Vec<Workload> = if args.workloads.is_empty() && !args.specs.is_empty() {
        Vec::new()
    } else {
        pick(&shipped, &args.workloads, |w| w.name.as_str(), "workload")?
    };
    for path in &args.specs {
        specs.push(Workload::load(path)?);
    }
    let reference = Reference::shipped()?;
    let chosen_selection = if !args.schedulers.is_empty() {
        Selection::chosen()
    } else if args.all {
        Selection::all()
    } else {
        Selection::default_for(&all, &specs, &reference, args.repeats as usize)
    }
    .describe(&all, &specs, &reference);
    let chosen: Vec<Subject> = if args.schedulers.is_empty() {
        chosen_selection.subjects(&all)
    } else {
        pick(&all, &args.schedulers, |s| s.name, "scheduler")?
    };
    let size = args.size;
    let (_, stamp) = workbench::env::utc_now();
    let run_id = format!("{stamp}-{}", size.profile());
    let env = workbench::env::detect(size.profile());
    let root = args.out.unwrap_or_else(report::default_root);
    let dir = root.join(&run_id);
    if let Ok(exe) = std::env::current_exe() {
        let _ = workbench::runner::MEMORY_PROBE_EXE.set(exe.clone());
        let _ = distributed::WORKER_EXE.set(exe);
    }
    let mut notes = vec![size.note().to_owned()];
    if !workbench::runner::measure::keep_freed_memory() {
        notes.push(
            "The allocator could not be told to keep freed memory: sweep costs include the page faults of memory it returned to the kernel.".to_owned(),
        );
    }
    // The chosen subjects that cannot share one subject between threads
    // say why, if the contention workload is in the run.
    let cannot = if specs.iter().any(|w| w.contention.is_some()) {
        let names: Vec<&str> = chosen.iter().map(|s| s.name).collect();
        workbench::peers::contention::notes(&names)
    } else {
        Vec::new()
    };
    let suite = Suite {
        subjects: chosen,
        workloads: specs.iter().map(|w| size.apply(w)).collect(),
        repeats: args.repeats as usize,
        run_id,
        env,
        progress: true,
        notes,
        selection: chosen_selection,
        floors: true,
    };
    suite.check()?;
    let info = suite.selection.info.clone();
    eprintln!(
        "workbench: the {} selection, {} (subject, workload) pairs × {} repeats ({}), about {} (a first guess from the sizes), load {:.2} -> {}",
        info.name,
        suite.pairs(),
        suite.repeats,
        size.profile(),
        estimate::human(suite.guess()),
        workbench::runner::measure::load_average()[0],
        dir.display()
    );
    if !info.rest.is_empty() {
        eprintln!("workbench: for the rest: {}", info.rest);
    }
    let workloads = suite.workloads.clone();
    let mut write_error = None;
    let mut written = 0;
    let mut results = suite.run(&mut |r| {
        let mut wrote = report::write_results(r, &dir);
        // A verdict over every workload as soon as each has its runs, and
        // again after every repeat: the page can be read while the rest runs.
        if wrote.is_ok() && r.repeats_done > written && r.repeats_done < r.repeats {
            written = r.repeats_done;
            wrote = report::write(r, &dir);
            if wrote.is_ok() {
                let _ = report::point_latest(&root, &dir);
                suite_mod::println(&format!(
                    "workbench: a verdict over {} of {} repeats: {}",
                    r.repeats_done,
                    r.repeats,
                    dir.join("index.html").display()
                ));
            }
        }
        if let Err(e) = wrote {
            write_error.get_or_insert(e);
        }
    });
    if let Some(e) = write_error {
        return Err(e).context("writing the report during the run");
    }
    let notes = report::notes::distributed(&results);
    results.notes.extend(notes);
    results.notes.extend(cannot);
    let notes = report::notes::cross_check(&results);
    results.notes.extend(notes);
    let notes = report::contention::notes(&results);
    results.notes.extend(notes);
    let notes = workbench::peers::notes(&results, &workloads);
    results.notes.extend(notes);
    report::write(&results, &dir)?;
    report::point_latest(&root, &dir)
        .with_context(|| format!("pointing {}/latest", root.display()))?;
    println!("{}", report::page::verdict_markdown(&results));
    for n in &results.notes {
        println!("note: {n}");
    }
    println!("\nselection: {}: {}", info.name, info.rule);
    if !info.left_out.is_empty() {
        println!("not run: {}", info.left_out.join(", "));
    }
    if !info.rest.is_empty() {
        println!("the rest: {}", info.rest);
    }
    println!(
        "\nran in {:.0} s (load {:.2} at the start, {:.2} at the end; cross-core round trip {}); report: {}",
        results.wall_seconds,
        results.load_start[0],
        workbench::runner::measure::load_average()[0],
        handoff_text(&results),
        dir.join("index.html").display()
    );
    Ok((results, dir))
}

fn calibrate(repeats: usize, schedulers: Vec<String>, out: Option<PathBuf>) -> Result<()> {
    let peers = calibration::peers();
    for s in &schedulers {
        if !peers.contains(&s.as_str()) {
            bail!(
                "{s:?} is not a calibrated peer; calibrated: {}",
                peers.join(", ")
            );
        }
    }
    let mut chosen: Vec<String> = if schedulers.is_empty() {
        peers.iter().map(|p| (*p).to_owned()).collect()
    } else {
        schedulers
    };
    let quartz = chosen.iter().any(|s| s == calibration::QUARTZ);
    chosen.retain(|s| s != calibration::QUARTZ);
    let names = |v: &[&str]| v.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
    let calibrate_run = |schedulers: Vec<String>, workloads: Vec<String>, size| {
        run(RunArgs {
            schedulers,
            workloads,
            size,
            repeats: repeats.max(1) as u64,
            out: out.clone(),
            ..RunArgs::default()
        })
        .map(|(r, _)| r)
    };
    let mut results = None;
    if !chosen.is_empty() {
        results = Some(calibrate_run(
            chosen,
            names(calibration::WORKLOADS),
            Size::Full,
        )?);
    }
    // Quartz: W2 and W3 at full size, W1 at its own size (see QUARTZ_W1),
    // and its reference measured now, outside the workbench.
    let mut live = Vec::new();
    if quartz {
        let q = vec![calibration::QUARTZ.to_owned()];
        let mut r = calibrate_run(
            q.clone(),
            names(&["fire-lateness", "periodic-fixed-rate"]),
            Size::Full,
        )?;
        let w1 = calibrate_run(q, names(&["ack-batch"]), Size::Quick)?;
        r.records.extend(w1.records);
        r.workloads.extend(w1.workloads);
        r.runs.extend(w1.runs);
        eprintln!("workbench: running QuartzCalibrate (w1, w2, w3) {repeats} times");
        live.push(calibration::quartz(repeats)?);
        results = Some(match results {
            Some(mut all) => {
                all.records.extend(r.records);
                all.subjects.extend(r.subjects);
                all
            }
            None => r,
        });
    }
    let Some(results) = results else {
        bail!("no peer to calibrate");
    };
    println!("\nagainst shared/reference/peer-calibration.md (2026-11-23, quiet machine) and QuartzCalibrate (now):\n");
    println!("{}", calibration::markdown(&results, &live));
    Ok(())
}

/// The figures `compare` looks at.
const COMPARED: &[Metric] = &[
    Metric::Memory,
    Metric::LatenessP50,
    Metric::ScheduleBatch,
    Metric::CancelBatch,
    Metric::ResetBatch,
    Metric::PairsPerS,
    Metric::CpuPerPair,
];

fn compare(a: &Path, b: &Path) -> Result<()> {
    let (ra, rb) = (report::read_results(a)?, report::read_results(b)?);
    print!("{}", comparison(&ra, &rb)?);
    println!(
        "\nload at the start: A {:.2}, B {:.2}",
        ra.load_start[0], rb.load_start[0]
    );
    println!(
        "cross-core round trip: A {}, B {}",
        handoff_text(&ra),
        handoff_text(&rb)
    );
    println!(
        "hardware floors (clock read, ordered counter read, locked read-modify-write, \
         dependent load over {} MiB, a cancel in a stream at 1e6; a timed wait's \
         wake-up): A {}, B {}",
        workbench::runner::measure::MEMORY_FLOOR_MIB,
        floors_brief(&ra),
        floors_brief(&rb)
    );
    Ok(())
}

/// The run's hardware floors (ns; the wake-up in µs), in the order `compare` names them, or
/// "not measured".
fn floors_brief(results: &Results) -> String {
    results.floors.map_or("not measured".to_owned(), |f| {
        format!(
            "{:.1} / {:.1} / {:.1} / {:.0} / {:.1} ns; {:.1} µs",
            f.clock_read,
            f.ordered_counter,
            f.locked_rmw,
            f.memory,
            f.cancel_stream,
            f.timed_wake / 1e3
        )
    })
}

/// A cache line's round trip between two cores after the repeats: "85-350
/// ns", or "not measured".
fn handoff_text(results: &Results) -> String {
    results
        .handoff_range()
        .map_or("not measured".to_owned(), |(lo, hi)| {
            format!("{lo:.0}-{hi:.0} ns")
        })
}

/// How many medians of one figure agree, in all and among those neither
/// run marks unstable.
#[derive(Clone, Copy, Default)]
struct Tally {
    n: usize,
    within: usize,
    stable: usize,
    stable_within: usize,
}

impl Tally {
    fn add(&mut self, within: bool, stable: bool) {
        self.n += 1;
        self.within += usize::from(within);
        self.stable += usize::from(stable);
        self.stable_within += usize::from(stable && within);
    }
}

/// `compare`'s output: every median of [`COMPARED`] in both runs with
/// their ratio, the largest difference, and how many agree within 15% per
/// figure, in all and among those neither run marks unstable.
fn comparison(ra: &Results, rb: &Results) -> Result<String> {
    use std::fmt::Write as _;
    let mut out =
        String::from("| subject | workload | figure | A | B | B/A |\n|---|---|---|---|---|---|\n");
    let mut tallies = [Tally::default(); COMPARED.len()];
    let mut all = Tally::default();
    let mut worst: Option<(f64, String)> = None;
    for r in ra
        .records
        .iter()
        .filter(|r| r.value.is_finite() && r.value > 0.0)
    {
        let Some(k) = COMPARED.iter().position(|m| *m == r.metric) else {
            continue;
        };
        let Some(b) = rb
            .get(&r.scheduler, &r.workload, r.metric, r.size)
            .filter(|b| b.value.is_finite())
        else {
            continue;
        };
        let q = b.value / r.value;
        let diff = (q - 1.0).abs();
        let (within, stable) = (diff <= 0.15, !r.unstable && !b.unstable);
        tallies[k].add(within, stable);
        all.add(within, stable);
        let (subject, workload) = (&r.scheduler, &r.workload);
        let figure = format!(
            "{}{}",
            r.metric,
            r.size.map_or(String::new(), |s| format!(" @{s}"))
        );
        let _ = writeln!(
            out,
            "| {subject} | {workload} | {figure} | {:.1} | {:.1} | {q:.3}{} |",
            r.value,
            b.value,
            if within { "" } else { " (beyond 15%)" }
        );
        if worst.as_ref().is_none_or(|w| diff > w.0) {
            worst = Some((diff, format!("{subject} {workload} {figure}")));
        }
    }
    let Some((diff, label)) = worst else {
        bail!("the two runs have no figure in common");
    };
    let _ = writeln!(
        out,
        "\n{} of {} medians agree within 15%; the largest difference: {:.1}% ({label})\n",
        all.within,
        all.n,
        diff * 100.0
    );
    out.push_str(
        "| figure | medians within 15% | among those neither run marks unstable |\n|---|---|---|\n",
    );
    for (m, t) in COMPARED.iter().zip(&tallies).filter(|(_, t)| t.n > 0) {
        let _ = writeln!(
            out,
            "| {m} | {} of {} | {} of {} |",
            t.within, t.n, t.stable_within, t.stable
        );
    }
    let _ = writeln!(
        out,
        "| all | {} of {} | {} of {} |",
        all.within, all.n, all.stable_within, all.stable
    );
    Ok(out)
}

fn rerender(path: &Path, out: Option<PathBuf>) -> Result<()> {
    let results = report::read_results(path)?;
    let dir = out.unwrap_or_else(|| {
        path.parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    });
    report::write(&results, &dir)?;
    println!("{}", report::page::verdict_markdown(&results));
    if results.partial {
        println!("note: the run had not finished; the report says so");
    }
    println!("report: {}", dir.join("index.html").display());
    Ok(())
}

#[cfg(test)]
mod test {
    use workbench::record::{Environment, Metric, Record, Results};

    fn run(figures: &[(&str, Metric, f64, bool)]) -> Results {
        let mut r = Results::new("t".into(), Environment::default(), 3);
        for &(subject, metric, value, unstable) in figures {
            r.records.push(Record {
                scheduler: subject.into(),
                workload: "scale".into(),
                metric,
                unit: metric.unit(),
                size: Some(1000),
                value,
                samples: Vec::new(),
                spread: 0.0,
                unstable,
                seed: 0,
                env: Environment::default(),
            });
        }
        r
    }

    /// Each figure counts once in all and, when neither run marks it
    /// unstable, among the stable; figures B lacks and metrics `compare`
    /// does not look at are left out.
    #[test]
    fn compare_tallies_agreement_per_figure_and_among_stable_ones() {
        use Metric::{CancelBatch, CpuPerTimer, ScheduleBatch};
        let a = run(&[
            ("x", ScheduleBatch, 100.0, false),
            ("y", ScheduleBatch, 100.0, false),
            ("z", ScheduleBatch, 100.0, false),
            ("x", CancelBatch, 50.0, true),
            ("y", CancelBatch, 50.0, false),
            ("x", CpuPerTimer, 10.0, false),
        ]);
        let b = run(&[
            ("x", ScheduleBatch, 110.0, false), // agrees, stable
            ("y", ScheduleBatch, 130.0, false), // beyond 15%, stable
            ("x", CancelBatch, 90.0, false),    // beyond, unstable in A
            ("y", CancelBatch, 55.0, true),     // agrees, unstable in B
            ("x", CpuPerTimer, 99.0, false),    // not compared
        ]);
        let out = super::comparison(&a, &b).unwrap();
        assert!(
            out.contains("| schedule_batch | 1 of 2 | 1 of 2 |"),
            "{out}"
        );
        assert!(out.contains("| cancel_batch | 1 of 2 | 0 of 0 |"), "{out}");
        assert!(out.contains("| all | 2 of 4 | 1 of 2 |"), "{out}");
        assert!(
            out.contains("the largest difference: 80.0% (x scale cancel_batch @1000)"),
            "{out}"
        );
        assert!(!out.contains("cpu_per_timer"), "{out}");
        assert!(super::comparison(&a, &run(&[])).is_err());
    }
}
