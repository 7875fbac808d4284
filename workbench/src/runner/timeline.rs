//! Executes a timeline workload: every schedule, cancel and reset of every
//! group, generated up front from the seed, sorted by time, and carried out
//! in real time by one driver thread (the "application").
//!
//! The driver waits for each event's time (sleeping, never spinning for
//! long), times the operation with two clock reads, and notes the deadline
//! it asked for. Afterwards it waits until every timer that should fire has
//! fired (or the last deadline plus the workload's grace has passed), then
//! computes lateness, jitter and drift from the probe's slots.

use std::time::Duration;

use hdrhistogram::Histogram;

use super::measure::{self, ns};
use super::{Probe, RunContext, RunError, TimersFactory};
use crate::record::{metric, unit, Measurement};
use crate::spec::{Anchor, Kind, Process, Rng, Workload};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Schedule,
    /// Schedule with an absolute deadline (ns from the start).
    ScheduleAt,
    Periodic,
    Cancel,
    Reset,
}

#[derive(Clone, Copy, Debug)]
struct Event {
    at: u64,
    /// Delay in ns (deadline from start for `ScheduleAt`).
    arg: u64,
    id: u32,
    op: Op,
}

/// Per timer: its group, and its slot in the probe.
#[derive(Clone, Copy, Debug)]
struct Meta {
    group: u16,
    slot: u32,
}

struct Plan {
    events: Vec<Event>,
    meta: Vec<Meta>,
    once: usize,
    periodic: usize,
    cap: usize,
}

fn plan(w: &Workload) -> Plan {
    let mut events = Vec::new();
    let mut meta = Vec::new();
    let (mut once, mut periodic, mut cap) = (0usize, 0usize, 1usize);
    for (gi, g) in w.groups.iter().enumerate() {
        let mut rng = Rng::new(w.seed, gi as u64 + 1);
        let mut t = 0.0f64;
        if g.kind.is_periodic() {
            let (period, run_for) = (
                g.period.map_or(1, |p| p.nanos().max(1)),
                g.run_for.map_or(0, |d| d.nanos()),
            );
            cap = cap.max((run_for / period) as usize + 64);
        }
        for _ in 0..g.count {
            let id = meta.len() as u32;
            if let Some(a) = &g.arrival {
                t += match a.process {
                    Process::Poisson => -(1.0 - rng.unit()).ln() / a.rate * 1e9,
                    Process::Uniform => 1e9 / a.rate,
                };
            }
            let at = t as u64;
            let delay = g.delay.sample(&mut rng);
            if g.kind.is_periodic() {
                meta.push(Meta {
                    group: gi as u16,
                    slot: periodic as u32,
                });
                periodic += 1;
                events.push(Event {
                    at,
                    arg: delay,
                    id,
                    op: Op::Periodic,
                });
                let end = g.run_for.map_or(0, |d| d.nanos()).max(at);
                events.push(Event {
                    at: end,
                    arg: 0,
                    id,
                    op: Op::Cancel,
                });
                continue;
            }
            meta.push(Meta {
                group: gi as u16,
                slot: once as u32,
            });
            once += 1;
            let op = if g.anchor == Anchor::Start {
                Op::ScheduleAt
            } else {
                Op::Schedule
            };
            events.push(Event {
                at,
                arg: delay,
                id,
                op,
            });
            if let Some(c) = &g.cancel {
                if rng.unit() < c.fraction {
                    events.push(Event {
                        at: at + c.after.sample(&mut rng),
                        arg: 0,
                        id,
                        op: Op::Cancel,
                    });
                }
            }
            if let Some(r) = &g.reset {
                let mut hb = at;
                loop {
                    hb = hb.saturating_add(r.every.sample(&mut rng).max(1));
                    if hb > r.until.nanos() {
                        break;
                    }
                    let d = r.delay.as_ref().unwrap_or(&g.delay).sample(&mut rng);
                    events.push(Event {
                        at: hb,
                        arg: d,
                        id,
                        op: Op::Reset,
                    });
                }
            }
        }
    }
    events.sort_by_key(|e| e.at); // stable: ties keep the order of generation
    Plan {
        events,
        meta,
        once,
        periodic,
        cap,
    }
}

#[derive(Default)]
struct Cost {
    total_ns: u64,
    n: u64,
}

impl Cost {
    fn add(&mut self, ns: u64) {
        self.total_ns += ns;
        self.n += 1;
    }

    fn per_op(&self, overhead: f64) -> Option<f64> {
        (self.n > 0).then(|| (self.total_ns as f64 / self.n as f64 - overhead).max(0.0))
    }
}

/// Runs one repeat of a timeline workload.
///
/// # Errors
///
/// A [`RunError`] if the subject refuses a schedule.
pub fn run(
    make: &TimersFactory,
    w: &Workload,
    ctx: &RunContext,
) -> Result<Vec<Measurement>, RunError> {
    let plan = plan(w);
    let n = plan.meta.len();
    ctx.progress.set_length(plan.events.len() as u64 + 1);
    ctx.progress.set_position(0);
    let mut deadline = vec![u64::MAX; n];
    let mut cancelled = vec![false; n];
    let mut timers = make(n);
    // Allocate everything of our own before the run.
    let start = measure::now();
    let probe = Probe::new(start, plan.once, plan.periodic, plan.cap);
    let fires: Vec<_> = plan
        .meta
        .iter()
        .map(|m| {
            if w.groups[m.group as usize].kind.is_periodic() {
                probe.periodic(m.slot as usize)
            } else {
                probe.once(m.slot as usize)
            }
        })
        .collect();
    let (cpu0, thread0) = (measure::cpu_process(), measure::cpu_thread());
    let start = measure::now();
    // The probe counts from its own epoch (when it was allocated); event
    // times count from `start`.
    let probe_epoch = probe.epoch();
    let offset = ns(probe_epoch, start);

    let (mut sched, mut cancel, mut reset) = (Cost::default(), Cost::default(), Cost::default());
    let (mut cancel_ok, mut cancel_late, mut reset_late, mut once_ok) = (0u64, 0u64, 0u64, 0u64);
    let mut fires = fires.into_iter().map(Some).collect::<Vec<_>>();
    let mut failure = None;
    for (i, ev) in plan.events.iter().enumerate() {
        measure::wait_until(start + Duration::from_nanos(ev.at));
        let id = ev.id as usize;
        let g = &w.groups[plan.meta[id].group as usize];
        match ev.op {
            Op::Schedule | Op::ScheduleAt | Op::Periodic => {
                let Some(fire) = fires[id].take() else {
                    failure = Some(RunError(format!("timer {id} scheduled twice")));
                    break;
                };
                let t0 = measure::now();
                let delay = match ev.op {
                    Op::ScheduleAt => ev.arg.saturating_sub(ns(start, t0)),
                    _ => ev.arg,
                };
                let r = if ev.op == Op::Periodic {
                    let period = g.period.map_or(Duration::from_millis(1), |p| p.0);
                    timers.schedule_periodic(id, g.kind, Duration::from_nanos(delay), period, fire)
                } else {
                    timers.schedule(id, Duration::from_nanos(delay), fire)
                };
                let t1 = measure::now();
                if let Err(e) = r {
                    failure = Some(RunError(format!("schedule refused: {e}")));
                    break;
                }
                sched.add(ns(t0, t1));
                deadline[id] = ns(probe_epoch, t0) + delay;
                if ev.op != Op::Periodic {
                    once_ok += 1;
                }
            }
            Op::Cancel => {
                let t0 = measure::now();
                let ok = timers.cancel(id);
                let t1 = measure::now();
                // The end-of-run cancel of a periodic timer is not part of
                // the workload's cancel cost.
                if !g.kind.is_periodic() {
                    cancel.add(ns(t0, t1));
                    if ok {
                        cancel_ok += 1;
                    } else {
                        cancel_late += 1;
                    }
                }
                cancelled[id] = ok;
            }
            Op::Reset => {
                let t0 = measure::now();
                let ok = timers.reset(id, Duration::from_nanos(ev.arg));
                let t1 = measure::now();
                reset.add(ns(t0, t1));
                if ok {
                    deadline[id] = ns(probe_epoch, t0) + ev.arg;
                } else {
                    reset_late += 1;
                }
            }
        }
        if i % 1024 == 0 {
            ctx.progress.set_position(i as u64);
        }
    }
    if let Some(e) = failure {
        timers.shutdown();
        return Err(e);
    }
    let driver_cpu = measure::cpu_thread() - thread0;

    // Wait for every timer that should fire.
    let expected = once_ok - cancel_ok;
    let last = plan
        .meta
        .iter()
        .enumerate()
        .filter(|(id, m)| !w.groups[m.group as usize].kind.is_periodic() && !cancelled[*id])
        .map(|(id, _)| deadline[id])
        .max()
        .unwrap_or(0);
    let give_up = probe_epoch + Duration::from_nanos(last) + w.grace.0;
    while probe.fired() < expected && measure::now() < give_up {
        measure::sleep(Duration::from_millis(1));
    }
    ctx.progress.set_position(plan.events.len() as u64 + 1);
    let cpu = measure::cpu_process() - cpu0;
    timers.shutdown();

    let o = ctx.timing_overhead_ns;
    let mut out = Vec::new();
    for (name, c) in [
        (metric::SCHEDULE, &sched),
        (metric::CANCEL, &cancel),
        (metric::RESET, &reset),
    ] {
        if let Some(v) = c.per_op(o) {
            out.push(Measurement::new(name, v, unit::NS_OP));
        }
    }
    if cancel.n > 0 {
        out.push(Measurement::new(
            metric::CANCEL_LATE,
            cancel_late as f64,
            unit::COUNT,
        ));
    }
    if reset.n > 0 {
        out.push(Measurement::new(
            "reset_late",
            reset_late as f64,
            unit::COUNT,
        ));
    }
    out.push(Measurement::new(
        metric::CPU,
        cpu.as_secs_f64() * 1e3,
        unit::MS,
    ));
    out.push(Measurement::new(
        metric::CPU_BACKGROUND,
        cpu.saturating_sub(driver_cpu).as_secs_f64() * 1e3,
        unit::MS,
    ));
    if plan.once > 0 {
        one_shot_figures(&plan, w, &probe, &deadline, &cancelled, expected, &mut out);
    }
    if plan.periodic > 0 {
        periodic_figures(&plan, w, &probe, &deadline, offset, &mut out);
    }
    Ok(out)
}

fn histogram() -> Histogram<u64> {
    // 1 ns to 1 hour at 3 significant digits.
    // Auto-resizing, 3 significant figures: valid arguments, so `new`
    // cannot fail.
    Histogram::new(3).expect("3 significant figures is a valid precision")
}

fn push_percentiles(h: &Histogram<u64>, names: &[&str], out: &mut Vec<Measurement>) {
    if h.is_empty() {
        return;
    }
    for name in names {
        let v = match name.rsplit('_').next() {
            Some("p50") => h.value_at_quantile(0.5),
            Some("p90") => h.value_at_quantile(0.9),
            Some("p99") => h.value_at_quantile(0.99),
            Some("p99.9") => h.value_at_quantile(0.999),
            _ => h.max(),
        };
        out.push(Measurement::new(name, v as f64 / 1e3, unit::US));
    }
}

fn one_shot_figures(
    plan: &Plan,
    w: &Workload,
    probe: &Probe,
    deadline: &[u64],
    cancelled: &[bool],
    expected: u64,
    out: &mut Vec<Measurement>,
) {
    let mut h = histogram();
    let (mut first, mut last, mut fired, mut early) = (u64::MAX, 0u64, 0u64, 0u64);
    for (id, m) in plan.meta.iter().enumerate() {
        if w.groups[m.group as usize].kind.is_periodic() {
            continue;
        }
        if let Some(t) = probe.fired_at(m.slot as usize) {
            fired += 1;
            first = first.min(t);
            last = last.max(t);
            if cancelled[id] {
                continue; // a cancel that returned true yet it ran: counted below
            }
            if t < deadline[id] {
                early += 1;
            }
            let _ = h.record(t.saturating_sub(deadline[id]).max(1));
        }
    }
    push_percentiles(&h, &metric::LATENESS, out);
    out.push(Measurement::new(metric::FIRED, fired as f64, unit::COUNT));
    out.push(Measurement::new(
        metric::MISSED,
        expected.saturating_sub(fired) as f64,
        unit::COUNT,
    ));
    out.push(Measurement::new("early", early as f64, unit::COUNT));
    if fired >= 2 && last > first {
        out.push(Measurement::new(
            metric::FIRES_PER_S,
            fired as f64 / ((last - first) as f64 / 1e9),
            unit::PER_S,
        ));
    }
}

fn periodic_figures(
    plan: &Plan,
    w: &Workload,
    probe: &Probe,
    deadline: &[u64],
    offset: u64,
    out: &mut Vec<Measurement>,
) {
    let mut h = histogram();
    let (mut runs, mut nominal, mut drift_sum, mut tasks) = (0u64, 0u64, 0f64, 0u64);
    for (id, m) in plan.meta.iter().enumerate() {
        let g = &w.groups[m.group as usize];
        if !g.kind.is_periodic() || deadline[id] == u64::MAX {
            continue;
        }
        let period = g.period.map_or(1, |p| p.nanos().max(1));
        let end = g.run_for.map_or(0, |d| d.nanos()) + offset;
        let (n, times) = probe.runs(m.slot as usize);
        runs += u64::from(n);
        let first = deadline[id];
        nominal += if end > first {
            (end - first) / period + 1
        } else {
            0
        };
        let Some(&t_last) = times.last() else {
            continue;
        };
        tasks += 1;
        match g.kind {
            Kind::FixedRate => {
                for (k, &t) in times.iter().enumerate() {
                    let ideal = first + k as u64 * period;
                    let _ = h.record(t.saturating_sub(ideal).max(1));
                }
                let ideal_last = first + (times.len() as u64 - 1) * period;
                drift_sum += t_last as f64 - ideal_last as f64;
            }
            _ => {
                let _ = h.record(times[0].saturating_sub(first).max(1));
                for pair in times.windows(2) {
                    let _ = h.record((pair[1] - pair[0]).saturating_sub(period).max(1));
                }
                let nominal_last = times[0] + (times.len() as u64 - 1) * period;
                drift_sum += t_last as f64 - nominal_last as f64;
            }
        }
    }
    push_percentiles(&h, &metric::JITTER, out);
    out.push(Measurement::new(metric::RUNS, runs as f64, unit::COUNT));
    if nominal > 0 {
        out.push(Measurement::new(
            metric::RUNS_RATIO,
            runs as f64 / nominal as f64,
            unit::RATIO,
        ));
    }
    if tasks > 0 {
        out.push(Measurement::new(
            metric::DRIFT,
            drift_sum / tasks as f64 / 1e6,
            unit::MS,
        ));
    }
}

#[cfg(test)]
mod test {
    use super::*;

    const SPEC: &str = r#"
        name = "t"
        description = "d"
        seed = 5
        [[group]]
        name = "conn"
        count = 2000
        delay = { dist = "fixed", value = "1s" }
        arrival = { rate = 1000.0 }
        cancel = { fraction = 0.25, after = { dist = "uniform", min = "1ms", max = "2ms" } }
        reset = { every = { dist = "exponential", mean = "100ms" }, until = "1s" }
        [[group]]
        name = "tick"
        count = 10
        kind = "fixed-delay"
        delay = { dist = "fixed", value = "0s" }
        period = "10ms"
        run_for = "500ms"
    "#;

    fn ops(p: &Plan, op: Op) -> usize {
        p.events.iter().filter(|e| e.op == op).count()
    }

    #[test]
    fn a_seed_plans_the_same_operations_every_time() {
        let w = Workload::parse(SPEC).unwrap();
        let (a, b) = (plan(&w), plan(&w));
        let key = |p: &Plan| {
            p.events
                .iter()
                .map(|e| (e.at, e.arg, e.id, e.op))
                .collect::<Vec<_>>()
        };
        assert_eq!(key(&a), key(&b));
        let other = Workload {
            seed: 6,
            ..w.clone()
        };
        assert_ne!(key(&a), key(&plan(&other)));

        assert!(
            a.events.windows(2).all(|e| e[0].at <= e[1].at),
            "sorted by time"
        );
        assert_eq!((a.once, a.periodic), (2000, 10));
        assert_eq!(ops(&a, Op::Schedule), 2000);
        assert_eq!(ops(&a, Op::Periodic), 10);
        // 25% of 2000 one-shots cancelled, plus the 10 periodic ones at the end.
        let cancels = ops(&a, Op::Cancel) - 10;
        assert!((400..600).contains(&cancels), "{cancels}");
        // Heartbeats every ~100 ms until 1 s: the ~1000 connections that
        // arrive in the first second get (1 s − arrival) / 100 ms each, ~5
        // on average.
        let resets = ops(&a, Op::Reset);
        assert!((4_000..6_000).contains(&resets), "{resets}");
        // Poisson arrivals at 1000/s: the last of 2000 arrives near 2 s.
        let last = a
            .events
            .iter()
            .filter(|e| e.op == Op::Schedule)
            .map(|e| e.at)
            .max()
            .unwrap();
        assert!((1.7e9..2.3e9).contains(&(last as f64)), "{last}");
    }
}
