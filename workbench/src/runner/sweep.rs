//! Executes a sweep: at each pending count `n`, schedules `n` timers far in
//! the future, resets each once and cancels each once (both in a random
//! order, so that every operation lands on memory no cache holds, as in a
//! real server), and measures the cost of each operation and the resident
//! memory per pending timer.
//!
//! Each phase is timed as one batch (two clock reads per `n` operations),
//! so no timing overhead needs subtracting. A fresh subject serves each
//! size. Memory is measured in a fresh child process where one is
//! available ([`super::MEMORY_PROBE_EXE`], [`memory_probe`]).

use std::time::Duration;

use super::measure::{self, ns};
use super::{Probe, RunContext, RunError, TimersFactory};
use crate::record::{metric, unit, Measurement};
use crate::spec::{Rng, Sweep};

/// Runs one repeat of a sweep.
///
/// # Errors
///
/// A [`RunError`] if the subject refuses a schedule.
pub fn run(
    name: &str,
    make: &TimersFactory,
    seed: u64,
    sweep: &Sweep,
    ctx: &RunContext,
) -> Result<Vec<Measurement>, RunError> {
    let mut out = Vec::new();
    ctx.progress.set_length(sweep.sizes.iter().sum::<u64>() * 3);
    ctx.progress.set_position(0);
    let mut done = 0u64;
    for (k, &n) in sweep.sizes.iter().enumerate() {
        let n64 = n;
        let n = usize::try_from(n).map_err(|_| RunError(format!("size {n} too large")))?;
        let mut rng = Rng::new(seed, k as u64);
        let delays: Vec<Duration> = (0..n)
            .map(|_| Duration::from_nanos(sweep.delay.sample(&mut rng)))
            .collect();
        let moves: Vec<Duration> = (0..n)
            .map(|_| Duration::from_nanos(sweep.delay.sample(&mut rng)))
            .collect();
        let reset_order = rng.permutation(n);
        let cancel_order = rng.permutation(n);
        let mut timers = make(n);
        let probe = Probe::new(measure::now(), n, 0, 0);
        let fires: Vec<_> = (0..n).map(|i| probe.once(i)).collect();

        let rss0 = measure::rss_bytes();
        let t0 = measure::now();
        for (i, (d, fire)) in delays.iter().zip(fires).enumerate() {
            if let Err(e) = timers.schedule(i, *d, fire) {
                timers.shutdown();
                return Err(RunError(format!("schedule refused at {i} of {n}: {e}")));
            }
        }
        let t1 = measure::now();
        let rss1 = measure::rss_bytes();
        ctx.progress.set_position(done + n64);

        let mut moved = 0usize;
        let t2 = measure::now();
        for &i in &reset_order {
            moved += usize::from(timers.reset(i, moves[i]));
        }
        let t3 = measure::now();
        ctx.progress.set_position(done + 2 * n64);

        let mut stopped = 0usize;
        let t4 = measure::now();
        for &i in &cancel_order {
            stopped += usize::from(timers.cancel(i));
        }
        let t5 = measure::now();
        timers.shutdown();
        done += 3 * n64;
        ctx.progress.set_position(done);

        if moved != n || stopped != n || probe.fired() != 0 {
            return Err(RunError(format!(
                "at {n} pending: {moved} resets and {stopped} cancels succeeded, {} fired; expected {n}, {n}, 0",
                probe.fired()
            )));
        }
        let per = |a, b| ns(a, b) as f64 / n as f64;
        out.push(Measurement::at(
            metric::SCHEDULE,
            n64,
            per(t0, t1),
            unit::NS_OP,
        ));
        out.push(Measurement::at(
            metric::RESET,
            n64,
            per(t2, t3),
            unit::NS_OP,
        ));
        out.push(Measurement::at(
            metric::CANCEL,
            n64,
            per(t4, t5),
            unit::NS_OP,
        ));
        let memory = match super::MEMORY_PROBE_EXE.get() {
            Some(exe) => child_memory(exe, name, n64, seed, k, sweep)?,
            None => rss1.saturating_sub(rss0) as f64 / n as f64,
        };
        out.push(Measurement::at(metric::MEMORY, n64, memory, unit::BYTES));
    }
    Ok(out)
}

fn child_memory(
    exe: &std::path::Path,
    name: &str,
    n: u64,
    seed: u64,
    k: usize,
    sweep: &Sweep,
) -> Result<f64, RunError> {
    let delay = serde_json::to_string(&sweep.delay).map_err(|e| RunError(e.to_string()))?;
    let out = std::process::Command::new(exe)
        .args([
            "memory-probe",
            name,
            &n.to_string(),
            &seed.to_string(),
            &k.to_string(),
            &delay,
        ])
        .output()
        .map_err(|e| RunError(format!("memory probe {}: {e}", exe.display())))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim().parse().map_err(|_| {
        RunError(format!(
            "memory probe for {name} at {n}: {} {}",
            text.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    })
}

/// The child's side of the memory measurement: in this fresh process,
/// schedules `n` timers on a fresh `make()` and returns the growth of the
/// resident set per timer. Everything of the runner's own (delays, probe,
/// handle storage) is allocated and touched before the first reading.
///
/// # Errors
///
/// A [`RunError`] if the subject refuses a schedule.
pub fn memory_probe(
    make: &TimersFactory,
    n: u64,
    seed: u64,
    k: usize,
    delay: &crate::spec::Dist,
) -> Result<f64, RunError> {
    let n = usize::try_from(n).map_err(|_| RunError(format!("size {n} too large")))?;
    let mut rng = Rng::new(seed, k as u64);
    let delays: Vec<Duration> = (0..n)
        .map(|_| Duration::from_nanos(delay.sample(&mut rng)))
        .collect();
    let mut timers = make(n);
    let probe = Probe::new(measure::now(), n, 0, 0);
    let fires: Vec<_> = (0..n).map(|i| probe.once(i)).collect();
    let rss0 = measure::rss_bytes();
    for (i, (d, fire)) in delays.iter().zip(fires).enumerate() {
        if let Err(e) = timers.schedule(i, *d, fire) {
            timers.shutdown();
            return Err(RunError(format!("schedule refused at {i} of {n}: {e}")));
        }
    }
    let rss1 = measure::rss_bytes();
    timers.shutdown();
    Ok(rss1.saturating_sub(rss0) as f64 / n.max(1) as f64)
}
