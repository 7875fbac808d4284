//! Executes a sweep: at each pending count `n`, schedules `n` timers far in
//! the future, resets each once and cancels a fraction of them (both in a
//! random order, so that at large sizes every operation lands on memory no
//! cache holds, as in a real server), and measures what a stream of calls
//! costs (each phase timed as one batch loop: `*_batch`), the whole
//! process's CPU per timer (the caller's loops plus whatever the subject's
//! threads did, deferred unlinks included, until a settling pause after the
//! cancels) and the resident memory per pending timer.
//!
//! A fresh subject serves each size. Memory is measured in a fresh child
//! process where one is available ([`super::MEMORY_PROBE_EXE`],
//! [`memory_probe`]).

use std::time::Duration;

use super::measure::{self, ns};
use super::{within, Fire, Probe, RunContext, RunError, Timers, TimersFactory};
use crate::random::{Dist, Rng};
use crate::record::{Measurement, Metric};
use crate::spec::Sweep;

/// How long the sweep waits after the cancels before it reads the CPU
/// time, so that work a subject defers to its next tick (Netty's 100 ms
/// wheel included) is counted.
const SETTLE: Duration = Duration::from_millis(250);

/// The timers of one sweep size, drawn from the seed.
struct Plan {
    n: usize,
    delays: Vec<Duration>,
    moves: Vec<Duration>,
    reset_order: Vec<usize>,
    cancel_order: Vec<usize>,
}

impl Plan {
    fn draw(seed: u64, k: usize, n: usize, sweep: &Sweep) -> Plan {
        let mut rng = Rng::new(seed, k as u64);
        let draw = |rng: &mut Rng| Duration::from_nanos(sweep.delay.sample(rng));
        let delays = (0..n).map(|_| draw(&mut rng)).collect();
        let moves = (0..n).map(|_| draw(&mut rng)).collect();
        let reset_order = rng.permutation(n);
        let mut cancel_order = rng.permutation(n);
        cancel_order.truncate((n as f64 * sweep.cancel).round() as usize);
        Plan {
            n,
            delays,
            moves,
            reset_order,
            cancel_order,
        }
    }
}

/// The fires handed to the subject, one slot each, allocated and touched
/// before the first memory reading and kept allocated until after the
/// second: a consumed `Vec` would be freed between the readings and hide
/// 16 bytes per timer.
fn fires(probe: &std::sync::Arc<Probe>, n: usize) -> Vec<Option<Fire>> {
    (0..n).map(|i| Some(probe.once(i))).collect()
}

/// Schedules every timer of `plan` (taking the fires), as one loop.
fn schedule_all(
    timers: &mut dyn Timers,
    plan: &Plan,
    fires: &mut [Option<Fire>],
) -> Result<(), RunError> {
    for (i, (d, fire)) in plan.delays.iter().zip(fires.iter_mut()).enumerate() {
        let fire = fire
            .take()
            .ok_or_else(|| RunError::Inconsistent(format!("timer {i} scheduled twice")))?;
        timers
            .schedule(i, *d, fire)
            .map_err(|source| RunError::Refused {
                op: "schedule",
                at: i,
                of: plan.n,
                source,
            })?;
    }
    Ok(())
}

/// Runs one repeat of a sweep.
///
/// # Errors
///
/// A [`RunError`] if the subject refuses a schedule or a reset or cancel of
/// a pending timer fails.
pub fn run(
    name: &str,
    make: &TimersFactory,
    seed: u64,
    sweep: &Sweep,
    ctx: &RunContext,
) -> Result<Vec<Measurement>, RunError> {
    let mut out = Vec::new();
    ctx.progress.set_length(sweep.sizes.len() as u64);
    ctx.progress.set_position(0);
    for (k, &size) in sweep.sizes.iter().enumerate() {
        let n = usize::try_from(size).map_err(|_| RunError::TooLarge(format!("size {size}")))?;
        let plan = Plan::draw(seed, k, n, sweep);
        let mut timers = make(n);
        let probe = Probe::new(measure::now(), n, 0, 0);
        let mut fires = fires(&probe, n);
        let p = match within(timers.as_mut(), |t| phases(t, &plan, sweep, &mut fires)) {
            Ok(p) => p,
            Err(e) => {
                timers.shutdown();
                return Err(e);
            }
        };
        // Deferred work (an unlink on the next tick, a purge) runs now.
        settle(timers.as_mut(), SETTLE);
        let cpu = measure::cpu_process().saturating_sub(p.cpu0);
        timers.shutdown();
        ctx.progress.inc(1);

        let cancelled = plan.cancel_order.len();
        if p.moved != if sweep.reset { n } else { 0 }
            || p.stopped != cancelled
            || probe.fired() != 0
        {
            return Err(RunError::Inconsistent(format!(
                "at {n} pending: {} resets and {} cancels succeeded, {} fired; expected {}, {cancelled}, 0",
                p.moved,
                p.stopped,
                probe.fired(),
                if sweep.reset { n } else { 0 },
            )));
        }
        out.push(Measurement::at(
            Metric::ScheduleBatch,
            size,
            p.schedule_ns / n as f64,
        ));
        if sweep.reset {
            out.push(Measurement::at(
                Metric::ResetBatch,
                size,
                p.reset_ns / n as f64,
            ));
        }
        if cancelled > 0 {
            out.push(Measurement::at(
                Metric::CancelBatch,
                size,
                p.cancel_ns / cancelled as f64,
            ));
        }
        out.push(Measurement::at(
            Metric::CpuPerTimer,
            size,
            cpu.as_nanos() as f64 / n as f64,
        ));
        let memory = match super::MEMORY_PROBE_EXE.get() {
            Some(exe) => child_memory(exe, name, size, seed, k, &sweep.delay)?,
            None => p.memory,
        };
        out.push(Measurement::at(Metric::Memory, size, memory));
    }
    Ok(out)
}

/// What the timed phases measured.
struct Phases {
    cpu0: Duration,
    schedule_ns: f64,
    reset_ns: f64,
    cancel_ns: f64,
    moved: usize,
    stopped: usize,
    /// In-process resident growth per timer (used without a probe binary).
    memory: f64,
}

fn phases(
    timers: &mut dyn Timers,
    plan: &Plan,
    sweep: &Sweep,
    fires: &mut [Option<Fire>],
) -> Result<Phases, RunError> {
    let n = plan.n;
    let cpu0 = measure::cpu_process();
    let rss0 = measure::rss_bytes();
    let t0 = measure::now();
    schedule_all(timers, plan, fires)?;
    let t1 = measure::now();
    let rss1 = measure::rss_bytes();

    let mut moved = 0usize;
    let t2 = measure::now();
    if sweep.reset {
        for &i in &plan.reset_order {
            moved += usize::from(timers.reset(i, plan.moves[i]));
        }
    }
    let t3 = measure::now();

    let mut stopped = 0usize;
    let t4 = measure::now();
    for &i in &plan.cancel_order {
        stopped += usize::from(timers.cancel(i));
    }
    let t5 = measure::now();
    Ok(Phases {
        cpu0,
        schedule_ns: ns(t0, t1) as f64,
        reset_ns: ns(t2, t3) as f64,
        cancel_ns: ns(t4, t5) as f64,
        moved,
        stopped,
        memory: rss1.saturating_sub(rss0) as f64 / n.max(1) as f64,
    })
}

/// Drives the subject (an event loop polls meanwhile) for `d`.
fn settle(timers: &mut dyn Timers, d: Duration) {
    let until = measure::now() + d;
    let mut first = true;
    timers.drive(&mut super::Steps(|_: &mut dyn Timers| {
        std::mem::take(&mut first).then_some(until)
    }));
}

fn child_memory(
    exe: &std::path::Path,
    name: &str,
    n: u64,
    seed: u64,
    k: usize,
    delay: &Dist,
) -> Result<f64, RunError> {
    let delay = serde_json::to_string(delay)
        .map_err(|e| RunError::Child(format!("cannot encode the delay: {e}")))?;
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
        .map_err(|e| RunError::Child(format!("memory probe {}: {e}", exe.display())))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim().parse().map_err(|_| {
        RunError::Child(format!(
            "memory probe for {name} at {n}: {} {}",
            text.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    })
}

/// The child's side of the memory measurement: in this fresh process,
/// schedules `n` timers on a fresh `make()` and returns the growth of the
/// resident set per timer. Everything of the runner's own (delays, probe,
/// fire slots, handle storage) is allocated and touched before the first
/// reading and still allocated at the second.
///
/// # Errors
///
/// A [`RunError`] if the subject refuses a schedule.
pub fn memory_probe(
    make: &TimersFactory,
    n: u64,
    seed: u64,
    k: usize,
    delay: &Dist,
) -> Result<f64, RunError> {
    let n = usize::try_from(n).map_err(|_| RunError::TooLarge(format!("size {n}")))?;
    let sweep = Sweep {
        sizes: vec![n as u64],
        delay: *delay,
        reset: false,
        cancel: 0.0,
    };
    let plan = Plan::draw(seed, k, n, &sweep);
    let mut timers = make(n);
    let probe = Probe::new(measure::now(), n, 0, 0);
    let mut fires = fires(&probe, n);
    let r = within(timers.as_mut(), |t| {
        let rss0 = measure::rss_bytes();
        schedule_all(t, &plan, &mut fires)?;
        let rss1 = measure::rss_bytes();
        Ok(rss1.saturating_sub(rss0) as f64 / n.max(1) as f64)
    });
    drop(fires);
    timers.shutdown();
    r
}
