//! Executes a sweep: at each pending count `n`, schedules `n` timers far in
//! the future, resets each once and cancels a fraction of them (both in a
//! random order, so that at large sizes every operation lands on memory no
//! cache holds, as in a real server), and measures what a stream of calls
//! costs (each phase timed as one batch loop on the calling thread's CPU
//! clock: `*_batch`), the whole
//! process's CPU per timer (the caller's loops plus whatever the subject's
//! threads did, deferred unlinks included, until a settling pause after the
//! cancels) and the resident memory per pending timer.
//!
//! A fresh subject serves each cycle; each size runs an untimed warm-up
//! cycle first, so the costs are a long-running process's steady state
//! (see [`measure::keep_freed_memory`]). Memory is measured in a fresh child
//! process where one is available ([`super::MEMORY_PROBE_EXE`],
//! [`memory_probe`]).

use std::time::Duration;

use super::measure;
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

/// The fires handed to the subject, one cell each, allocated and touched
/// before the first memory reading and kept allocated until after the
/// second: a consumed `Vec` would be freed between the readings and hide
/// 16 bytes per timer.
fn fires(probe: &std::sync::Arc<Probe>, n: usize) -> Vec<Option<Fire>> {
    (0..n).map(|i| Some(probe.once(i))).collect()
}

/// Schedules every timer of `plan` (taking the fires), as one loop; timer
/// `i` of the plan is id `first + i` and takes `fires[first + i]`.
fn schedule_all(
    timers: &mut dyn Timers,
    plan: &Plan,
    fires: &mut [Option<Fire>],
    first: usize,
) -> Result<(), RunError> {
    for (i, (d, fire)) in plan.delays.iter().zip(&mut fires[first..]).enumerate() {
        let id = first + i;
        let fire = fire
            .take()
            .ok_or_else(|| RunError::Inconsistent(format!("timer {id} scheduled twice")))?;
        timers
            .schedule(id, *d, fire)
            .map_err(|source| RunError::Refused {
                op: "schedule",
                at: id,
                of: plan.n,
                source,
            })?;
    }
    Ok(())
}

/// Timers timed per size at least: a size below it is cycled (a fresh
/// subject each time) until this many operations were timed, and each cost
/// is the median over the cycles, so that a loop of a thousand calls (a
/// tenth of a millisecond) is not one sample at the mercy of one interrupt,
/// and a size of 1e5 gets 25 cycles: one cycle of random-order cancels at
/// 1e5 moves by up to ×2 on a shared VM, and the median of five still
/// moved by ×1.5 between runs (see the workbench README).
pub const TIMED_PER_SIZE: usize = 2_500_000;

/// At most this many cycles per size.
pub const MAX_CYCLES: usize = 50;

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
        let cycles = (TIMED_PER_SIZE / n.max(1)).clamp(1, MAX_CYCLES);
        let mut costs: [Vec<f64>; 3] = Default::default();
        let mut cpu = Duration::ZERO;
        // The warm-up: the first cycle at a size faults in the pages that
        // the later ones reuse (with [`measure::keep_freed_memory`]), so
        // every timed cycle is the steady state of a long-running process.
        cycle_once(make, &plan, sweep, false)?;
        for cycle in 0..cycles {
            let (p, c) = cycle_once(make, &plan, sweep, cycle == 0)?;
            for (v, x) in costs
                .iter_mut()
                .zip([p.schedule_ns, p.reset_ns, p.cancel_ns])
            {
                v.push(x);
            }
            cpu = cpu.max(c);
        }
        ctx.progress.inc(1);
        let median = |v: &[f64]| crate::record::summarize(v).0;
        let cancelled = plan.cancel_order.len();
        out.push(Measurement::at(
            Metric::ScheduleBatch,
            size,
            median(&costs[0]) / n as f64,
        ));
        if sweep.reset {
            out.push(Measurement::at(
                Metric::ResetBatch,
                size,
                median(&costs[1]) / n as f64,
            ));
        }
        if cancelled > 0 {
            out.push(Measurement::at(
                Metric::CancelBatch,
                size,
                median(&costs[2]) / cancelled as f64,
            ));
        }
        out.push(Measurement::at(
            Metric::CpuPerTimer,
            size,
            cpu.as_nanos() as f64 / n as f64,
        ));
        let memory = match super::MEMORY_PROBE_EXE.get() {
            Some(exe) => child_memory(exe, name, size, seed, k, &sweep.delay)?,
            None => in_process_memory(make, &plan)?,
        };
        out.push(Measurement::at(Metric::Memory, size, memory));
    }
    Ok(out)
}

/// One cycle on a fresh subject: the timed phases, then (on the first
/// cycle) the settling pause and the whole process's CPU time over both.
fn cycle_once(
    make: &TimersFactory,
    plan: &Plan,
    sweep: &Sweep,
    with_cpu: bool,
) -> Result<(Phases, Duration), RunError> {
    let n = plan.n;
    let mut timers = make(n);
    let probe = Probe::new(measure::now(), n, 0, 0);
    let mut fires = fires(&probe, n);
    let p = match within(timers.as_mut(), |t| phases(t, plan, sweep, &mut fires)) {
        Ok(p) => p,
        Err(e) => {
            timers.shutdown();
            return Err(e);
        }
    };
    let mut cpu = Duration::ZERO;
    if with_cpu {
        // Deferred work (an unlink on the next tick, a purge) runs now.
        settle(timers.as_mut(), SETTLE);
        cpu = measure::cpu_process().saturating_sub(p.cpu0);
    }
    timers.shutdown();
    let cancelled = plan.cancel_order.len();
    let resets = if sweep.reset { n } else { 0 };
    if p.moved != resets || p.stopped != cancelled || probe.fired() != 0 {
        return Err(RunError::Inconsistent(format!(
            "at {n} pending: {} resets and {} cancels succeeded, {} fired; expected {resets}, {cancelled}, 0",
            p.moved,
            p.stopped,
            probe.fired(),
        )));
    }
    Ok((p, cpu))
}

/// What the timed phases measured. Each loop is timed by the calling
/// thread's CPU clock: on a quiet machine the same as the wall clock, on a
/// shared one it leaves out the slices the thread lost to other processes
/// (a loop of calls that never blocks waits for nothing else).
struct Phases {
    cpu0: Duration,
    schedule_ns: f64,
    reset_ns: f64,
    cancel_ns: f64,
    moved: usize,
    stopped: usize,
}

fn phases(
    timers: &mut dyn Timers,
    plan: &Plan,
    sweep: &Sweep,
    fires: &mut [Option<Fire>],
) -> Result<Phases, RunError> {
    let cpu0 = measure::cpu_process();
    let t0 = measure::cpu_thread();
    schedule_all(timers, plan, fires, 0)?;
    let t1 = measure::cpu_thread();

    let mut moved = 0usize;
    let t2 = measure::cpu_thread();
    if sweep.reset {
        for &i in &plan.reset_order {
            moved += usize::from(timers.reset(i, plan.moves[i]));
        }
    }
    let t3 = measure::cpu_thread();

    let mut stopped = 0usize;
    let t4 = measure::cpu_thread();
    for &i in &plan.cancel_order {
        stopped += usize::from(timers.cancel(i));
    }
    let t5 = measure::cpu_thread();
    let ns = |a: Duration, b: Duration| b.saturating_sub(a).as_nanos() as f64;
    Ok(Phases {
        cpu0,
        schedule_ns: ns(t0, t1),
        reset_ns: ns(t2, t3),
        cancel_ns: ns(t4, t5),
        moved,
        stopped,
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
/// resident set per timer.
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
    in_process_memory(make, &Plan::draw(seed, k, n, &sweep))
}

/// Resident-set growth per timer when `plan`'s timers are scheduled on a
/// fresh subject in this process. Everything of the runner's own (delays,
/// probe, fire cells, handle storage) is allocated and touched before the
/// first reading and still allocated at the second. The subject is given
/// a moment first, so that its threads have started and touched their
/// stacks: start-up is not a cost per timer; what it allocates for its
/// timers (a first slab chunk included) is.
fn in_process_memory(make: &TimersFactory, plan: &Plan) -> Result<f64, RunError> {
    let n = plan.n;
    let mut timers = make(n);
    let probe = Probe::new(measure::now(), n, 0, 0);
    let mut fires = fires(&probe, n);
    settle(timers.as_mut(), Duration::from_millis(20));
    let r = within(timers.as_mut(), |t| {
        let rss0 = measure::rss_bytes();
        schedule_all(t, plan, &mut fires, 0)?;
        let rss1 = measure::rss_bytes();
        Ok(rss1.saturating_sub(rss0) as f64 / n.max(1) as f64)
    });
    drop(fires);
    timers.shutdown();
    r
}
