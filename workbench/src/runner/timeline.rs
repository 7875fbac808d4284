//! Executes a timeline workload: every schedule, cancel and reset of every
//! group, generated up front from the seed, sorted by time, and carried out
//! in real time by one driver thread (the "application").
//!
//! The driver is an [`App`] that the subject drives ([`Timers::drive`]): it
//! runs every event due, times each operation alone with two clock reads
//! (`*_call` metrics), and notes the deadline it asked for; between events
//! a threaded subject's driver sleeps, an event-loop subject polls its
//! timers, each waking for events on the same 1 ms grid
//! ([`measure::PACE`]). Afterwards it waits until every timer that should
//! fire has fired (or the last deadline plus the workload's grace has
//! passed), then computes lateness, |jitter| and |drift| from the probe's
//! cells and the whole process's CPU time per timer.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::measure::{self, ns};
use super::{App, Fire, OwnLateness, Probe, RunContext, RunError, Timers, TimersFactory};
use crate::random::Rng;
use crate::record::{Measurement, Metric};
use crate::spec::{Anchor, Kind, Process, Workload};

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

/// Per timer: its group, and its cell in the probe.
#[derive(Clone, Copy, Debug)]
struct Meta {
    group: u16,
    cell: u32,
}

struct Plan {
    events: Vec<Event>,
    /// The longest stretch without events, if one lasts a second or more
    /// (ns from the start, begun 100 ms after the event before it, so the
    /// subject has settled): where idle cost is measured.
    quiet: Option<(u64, u64)>,
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
                    cell: periodic as u32,
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
                cell: once as u32,
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
    const SETTLE: u64 = 100_000_000;
    let quiet = events
        .windows(2)
        .map(|p| (p[0].at + SETTLE, p[1].at))
        .filter(|(from, to)| to.saturating_sub(*from) >= 900_000_000)
        .max_by_key(|(from, to)| to - from);
    Plan {
        events,
        quiet,
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

/// The application: executes the plan's events at their times, then waits
/// for the fires.
struct Driver<'a> {
    w: &'a Workload,
    plan: &'a Plan,
    probe: &'a Probe,
    fires: Vec<Option<Fire>>,
    start: Instant,
    next: usize,
    deadline: Vec<u64>,
    cancelled: Vec<bool>,
    sched: Cost,
    cancel: Cost,
    reset: Cost,
    cancel_ok: u64,
    cancel_late: u64,
    reset_late: u64,
    once_ok: u64,
    failure: Option<RunError>,
    /// Set when the last event has run: until when to wait for fires.
    give_up: Option<Instant>,
    /// Snapshots at the start and end of the plan's quiet stretch.
    quiet: [Option<Snapshot>; 2],
    progress: &'a indicatif::ProgressBar,
}

/// What the subject's threads had used at one moment.
#[derive(Clone, Copy, Debug)]
struct Snapshot {
    at: Instant,
    background: Duration,
    wakeups: u64,
}

impl Snapshot {
    fn take() -> Snapshot {
        Snapshot {
            at: measure::now(),
            background: measure::cpu_process().saturating_sub(measure::cpu_thread()),
            wakeups: measure::wakeups_of_other_threads(),
        }
    }

    /// Seconds from this snapshot to `later` (never zero: a divisor).
    fn seconds_to(&self, later: &Snapshot) -> f64 {
        later
            .at
            .saturating_duration_since(self.at)
            .as_secs_f64()
            .max(1e-9)
    }

    /// The subject's threads' wake-ups per second from this snapshot to
    /// `later`.
    fn wakeups_per_s(&self, later: &Snapshot) -> f64 {
        later.wakeups.saturating_sub(self.wakeups) as f64 / self.seconds_to(later)
    }
}

impl Driver<'_> {
    /// Takes the quiet stretch's snapshots when `elapsed` reaches its ends;
    /// returns the next end to wake for, if any.
    fn watch_quiet(&mut self, elapsed: u64) -> Option<Instant> {
        let (from, to) = self.plan.quiet?;
        for (i, at) in [from, to].into_iter().enumerate() {
            if self.quiet[i].is_none() {
                if elapsed < at {
                    return Some(self.start + Duration::from_nanos(at));
                }
                self.quiet[i] = Some(Snapshot::take());
            }
        }
        None
    }

    fn event(&mut self, ev: Event, timers: &mut dyn Timers) -> Result<(), RunError> {
        let id = ev.id as usize;
        let g = &self.w.groups[self.plan.meta[id].group as usize];
        let epoch = self.probe.epoch();
        match ev.op {
            Op::Schedule | Op::ScheduleAt | Op::Periodic => {
                let fire = self.fires[id]
                    .take()
                    .ok_or_else(|| RunError::Inconsistent(format!("timer {id} scheduled twice")))?;
                let t0 = measure::now();
                let delay = match ev.op {
                    Op::ScheduleAt => ev.arg.saturating_sub(ns(self.start, t0)),
                    _ => ev.arg,
                };
                let r = if ev.op == Op::Periodic {
                    let period = g.period.map_or(Duration::from_millis(1), |p| p.0);
                    timers.schedule_periodic(id, g.kind, Duration::from_nanos(delay), period, fire)
                } else {
                    timers.schedule(id, Duration::from_nanos(delay), fire)
                };
                let t1 = measure::now();
                r.map_err(|source| RunError::Refused {
                    op: "schedule",
                    at: id,
                    of: self.plan.meta.len(),
                    source,
                })?;
                self.sched.add(ns(t0, t1));
                self.deadline[id] = ns(epoch, t0) + delay;
                if ev.op != Op::Periodic {
                    self.once_ok += 1;
                }
            }
            Op::Cancel => {
                let t0 = measure::now();
                let ok = timers.cancel(id);
                let t1 = measure::now();
                // The end-of-run cancel of a periodic timer is not part of
                // the workload's cancel cost.
                if !g.kind.is_periodic() {
                    self.cancel.add(ns(t0, t1));
                    if ok {
                        self.cancel_ok += 1;
                    } else {
                        self.cancel_late += 1;
                    }
                }
                self.cancelled[id] = ok;
            }
            Op::Reset => {
                let t0 = measure::now();
                let ok = timers.reset(id, Duration::from_nanos(ev.arg));
                let t1 = measure::now();
                self.reset.add(ns(t0, t1));
                if ok {
                    self.deadline[id] = ns(epoch, t0) + ev.arg;
                } else {
                    self.reset_late += 1;
                }
            }
        }
        Ok(())
    }

    /// One-shot timers that should fire: scheduled and not cancelled.
    fn expected(&self) -> u64 {
        self.once_ok - self.cancel_ok
    }

    /// Whether every one-shot timer that should fire has. The hit counter
    /// alone can run ahead: a subject whose cancel or reset races a fire on
    /// another thread may run a timer twice (tokio's multi-thread runtime,
    /// where `abort` cannot stop a task already running), and the run must
    /// not stop while another timer is still pending, nor count it missed.
    fn all_fired(&self) -> bool {
        self.plan.meta.iter().enumerate().all(|(id, m)| {
            self.w.groups[m.group as usize].kind.is_periodic()
                || self.cancelled[id]
                || self.deadline[id] == u64::MAX
                || self.probe.fired_at(m.cell as usize).is_some()
        })
    }

    fn last_deadline(&self) -> u64 {
        self.plan
            .meta
            .iter()
            .enumerate()
            .filter(|(id, m)| {
                !self.w.groups[m.group as usize].kind.is_periodic() && !self.cancelled[*id]
            })
            .map(|(id, _)| self.deadline[id])
            .filter(|d| *d != u64::MAX)
            .max()
            .unwrap_or(0)
    }
}

impl App for Driver<'_> {
    fn step(&mut self, timers: &mut dyn Timers) -> Option<Instant> {
        if self.failure.is_some() {
            return None;
        }
        let events = &self.plan.events;
        let elapsed = ns(self.start, measure::now());
        let quiet_end = self.watch_quiet(elapsed);
        while self.next < events.len() && events[self.next].at <= elapsed {
            let ev = events[self.next];
            self.next += 1;
            if let Err(e) = self.event(ev, timers) {
                self.failure = Some(e);
                return None;
            }
            if self.next.is_multiple_of(1024) {
                self.progress.set_position(self.next as u64);
            }
        }
        if let Some(ev) = events.get(self.next) {
            let next = self.start + Duration::from_nanos(ev.at);
            return Some(quiet_end.map_or(next, |q| q.min(next)));
        }
        // Every event has run: wait for every timer that should fire, at
        // most until the last deadline plus the workload's grace.
        let give_up = match self.give_up {
            Some(t) => t,
            None => {
                let t = self.probe.epoch()
                    + Duration::from_nanos(self.last_deadline())
                    + self.w.grace.0;
                *self.give_up.insert(t)
            }
        };
        let now = measure::now();
        let waiting = self.probe.fired() < self.expected() || !self.all_fired();
        (waiting && now < give_up).then(|| (now + Duration::from_millis(1)).min(give_up))
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
    let mut timers = make(n);
    // Allocate everything of our own before the run.
    let probe = Probe::new(measure::now(), plan.once, plan.periodic, plan.cap);
    let fires: Vec<_> = plan
        .meta
        .iter()
        .map(|m| {
            Some(if w.groups[m.group as usize].kind.is_periodic() {
                probe.periodic(m.cell as usize)
            } else {
                probe.once(m.cell as usize)
            })
        })
        .collect();
    let mut driver = Driver {
        w,
        plan: &plan,
        probe: &probe,
        fires,
        start: measure::now(),
        next: 0,
        deadline: vec![u64::MAX; n],
        cancelled: vec![false; n],
        sched: Cost::default(),
        cancel: Cost::default(),
        reset: Cost::default(),
        cancel_ok: 0,
        cancel_late: 0,
        reset_late: 0,
        once_ok: 0,
        failure: None,
        give_up: None,
        quiet: [None, None],
        progress: &ctx.progress,
    };
    let (cpu0, thread0) = (measure::cpu_process(), measure::cpu_thread());
    let run_start = Snapshot::take();
    driver.start = measure::now();
    // The probe counts from its own epoch (when it was allocated); event
    // times count from `start`.
    let offset = ns(probe.epoch(), driver.start);
    timers.drive(&mut driver);
    let cpu = measure::cpu_process().saturating_sub(cpu0);
    let driver_cpu = measure::cpu_thread().saturating_sub(thread0);
    let run_end = Snapshot::take();

    ctx.progress.set_position(plan.events.len() as u64 + 1);
    // Read before the shutdown drops what is pending.
    let own = timers.own_lateness();
    timers.shutdown();
    if let Some(e) = driver.failure.take() {
        return Err(e);
    }

    let o = ctx.timing_overhead_ns;
    let mut out = Vec::new();
    for (m, c) in [
        (Metric::ScheduleCall, &driver.sched),
        (Metric::CancelCall, &driver.cancel),
        (Metric::ResetCall, &driver.reset),
    ] {
        if let Some(v) = c.per_op(o) {
            out.push(Measurement::new(m, v));
        }
    }
    if driver.cancel.n > 0 {
        out.push(Measurement::new(
            Metric::CancelLate,
            driver.cancel_late as f64,
        ));
    }
    if driver.reset.n > 0 {
        out.push(Measurement::new(
            Metric::ResetLate,
            driver.reset_late as f64,
        ));
    }
    out.push(Measurement::new(Metric::Cpu, cpu.as_secs_f64() * 1e3));
    out.push(Measurement::new(
        Metric::CpuBackground,
        cpu.saturating_sub(driver_cpu).as_secs_f64() * 1e3,
    ));
    out.push(Measurement::new(
        Metric::RunWakeupsPerS,
        run_start.wakeups_per_s(&run_end),
    ));
    if let [Some(a), Some(b)] = driver.quiet {
        // Idle cost: the subject's threads over the quiet stretch.
        let background = b.background.saturating_sub(a.background).as_secs_f64() * 1e3;
        out.push(Measurement::new(
            Metric::CpuBackgroundPerS,
            background / a.seconds_to(&b),
        ));
        out.push(Measurement::new(Metric::WakeupsPerS, a.wakeups_per_s(&b)));
    }
    if driver.sched.n > 0 {
        out.push(Measurement::new(
            Metric::CpuPerTimer,
            cpu.as_nanos() as f64 / driver.sched.n as f64,
        ));
    }
    out.push(Measurement::new(Metric::TimingOverhead, o));
    if plan.once > 0 {
        // The subject's own lateness counts every run: comparable only
        // when all are one-shots.
        let own = own.filter(|_| plan.periodic == 0);
        one_shot_figures(&driver, own, &mut out);
    }
    if plan.periodic > 0 {
        periodic_figures(&driver, offset, &mut out);
    }
    Ok(out)
}

pub(crate) fn histogram() -> Histogram<u64> {
    // Auto-resizing, 3 significant figures: valid arguments, so `new`
    // cannot fail.
    Histogram::new(3).expect("3 significant figures is a valid precision")
}

pub(crate) fn push_percentiles(
    h: &Histogram<u64>,
    which: &[(Metric, f64)],
    out: &mut Vec<Measurement>,
) {
    if h.is_empty() {
        return;
    }
    for &(m, q) in which {
        let v = if q >= 1.0 {
            h.max()
        } else {
            h.value_at_quantile(q)
        };
        out.push(Measurement::new(m, v as f64 / 1e3));
    }
}

fn one_shot_figures(d: &Driver<'_>, own: Option<OwnLateness>, out: &mut Vec<Measurement>) {
    let mut h = histogram();
    let (mut first, mut last, mut fired, mut early) = (u64::MAX, 0u64, 0u64, 0u64);
    // The exact sum, for the mean (the histogram's is its buckets').
    let mut sum = 0u128;
    for (id, m) in d.plan.meta.iter().enumerate() {
        if d.w.groups[m.group as usize].kind.is_periodic() {
            continue;
        }
        if let Some(t) = d.probe.fired_at(m.cell as usize) {
            fired += 1;
            first = first.min(t);
            last = last.max(t);
            if d.cancelled[id] {
                continue; // a cancel that returned true yet it ran: not lateness
            }
            if t < d.deadline[id] {
                early += 1;
            }
            let _ = h.record(t.saturating_sub(d.deadline[id]).max(1));
            sum += u128::from(t.saturating_sub(d.deadline[id]));
        }
    }
    push_percentiles(&h, &Metric::LATENESS, out);
    if let (Some(own), false) = (own, h.is_empty()) {
        let mean = sum as f64 / h.len() as f64;
        out.extend([
            Measurement::new(Metric::LatenessMean, mean / 1e3),
            Measurement::new(Metric::OwnLatenessMean, own.mean_ns / 1e3),
            Measurement::new(Metric::OwnLatenessP50, own.p50_ns / 1e3),
            Measurement::new(Metric::OwnLatenessP99, own.p99_ns / 1e3),
            Measurement::new(Metric::OwnLatenessGap, mean - own.mean_ns),
            Measurement::new(Metric::OwnLatenessRunsGap, own.runs as f64 - h.len() as f64),
        ]);
    }
    out.push(Measurement::new(Metric::Fired, fired as f64));
    out.push(Measurement::new(
        Metric::Missed,
        d.expected().saturating_sub(fired) as f64,
    ));
    out.push(Measurement::new(Metric::Early, early as f64));
    if fired >= 2 && last > first {
        out.push(Measurement::new(
            Metric::FiresPerS,
            fired as f64 / ((last - first) as f64 / 1e9),
        ));
    }
}

fn periodic_figures(d: &Driver<'_>, offset: u64, out: &mut Vec<Measurement>) {
    let mut h = histogram();
    let (mut runs, mut nominal, mut drift_sum, mut tasks) = (0u64, 0u64, 0f64, 0u64);
    for (id, m) in d.plan.meta.iter().enumerate() {
        let g = &d.w.groups[m.group as usize];
        if !g.kind.is_periodic() || d.deadline[id] == u64::MAX {
            continue;
        }
        let period = g.period.map_or(1, |p| p.nanos().max(1));
        let end = g.run_for.map_or(0, |d| d.nanos()) + offset;
        let (n, times) = d.probe.runs(m.cell as usize);
        runs += u64::from(n);
        let first = d.deadline[id];
        nominal += if end > first {
            (end - first) / period + 1
        } else {
            0
        };
        let Some(&t_last) = times.last() else {
            continue;
        };
        tasks += 1;
        // Jitter and drift are magnitudes: early and late count alike.
        match g.kind {
            Kind::FixedRate => {
                for (k, &t) in times.iter().enumerate() {
                    let ideal = first + k as u64 * period;
                    let _ = h.record(t.abs_diff(ideal).max(1));
                }
                let ideal_last = first + (times.len() as u64 - 1) * period;
                drift_sum += t_last.abs_diff(ideal_last) as f64;
            }
            _ => {
                let _ = h.record(times[0].abs_diff(first).max(1));
                for pair in times.windows(2) {
                    let _ = h.record((pair[1] - pair[0]).abs_diff(period).max(1));
                }
                let nominal_last = times[0] + (times.len() as u64 - 1) * period;
                drift_sum += t_last.abs_diff(nominal_last) as f64;
            }
        }
    }
    push_percentiles(&h, &Metric::JITTER, out);
    out.push(Measurement::new(Metric::Runs, runs as f64));
    if nominal > 0 {
        out.push(Measurement::new(
            Metric::RunsRatio,
            runs as f64 / nominal as f64,
        ));
    }
    if tasks > 0 {
        out.push(Measurement::new(
            Metric::Drift,
            drift_sum / tasks as f64 / 1e6,
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

    use crate::runner::Refused;

    /// A subject of one-shots only, which `F` schedules (id, delay, fire):
    /// it cannot cancel, reset or repeat, and its threads are its own.
    struct OneShots<F>(F);

    impl<F: FnMut(usize, Duration, Fire) -> Result<(), Refused>> Timers for OneShots<F> {
        fn schedule(&mut self, id: usize, delay: Duration, fire: Fire) -> Result<(), Refused> {
            (self.0)(id, delay, fire)
        }

        fn schedule_periodic(
            &mut self,
            _: usize,
            _: Kind,
            _: Duration,
            _: Duration,
            _: Fire,
        ) -> Result<(), Refused> {
            Err(Refused::because("one-shots only"))
        }

        fn cancel(&mut self, _: usize) -> bool {
            false
        }

        fn reset(&mut self, _: usize, _: Duration) -> bool {
            false
        }

        fn drive(&mut self, app: &mut dyn App) {
            crate::runner::drive_threaded(self, app);
        }

        fn shutdown(self: Box<Self>) {}
    }

    /// Runs timer 0 twice at once (as a reset racing its fire can) and
    /// timer 1 on a thread 50 ms after its deadline.
    fn twice(id: usize, delay: Duration, fire: Fire) -> Result<(), Refused> {
        if id == 0 {
            fire.hit();
            fire.hit();
        } else {
            let at = measure::now() + delay + Duration::from_millis(50);
            std::thread::spawn(move || {
                measure::wait_until(at);
                fire.hit();
            });
        }
        Ok(())
    }

    /// Runs a workload of one group of one-shots (`group`: the group's
    /// TOML lines; `workload`: the workload's own) on the subject `make`
    /// makes; returns its figures, by metric.
    fn run_group(
        workload: &str,
        group: &str,
        make: impl Fn() -> Box<dyn Timers> + Send + Sync + 'static,
    ) -> impl Fn(Metric) -> Option<f64> {
        let spec = format!(
            "name = \"t\"\ndescription = \"d\"\nseed = 1\n{workload}\n[[group]]\nname = \"g\"\n{group}\n"
        );
        let w = Workload::parse(&spec).unwrap();
        let make: TimersFactory = std::sync::Arc::new(move |_| make());
        let out = run(&make, &w, &RunContext::quiet(0.0)).unwrap();
        move |m| out.iter().find(|x| x.metric == m).map(|x| x.value)
    }

    #[test]
    fn a_timer_run_twice_does_not_end_the_wait_for_one_still_pending() {
        let get = run_group(
            r#"grace = "5s""#,
            r#"count = 2
            delay = { dist = "fixed", value = "1ms" }"#,
            || Box::new(OneShots(twice)),
        );
        assert_eq!(get(Metric::Missed), Some(0.0));
        assert_eq!(get(Metric::Fired), Some(2.0));
    }

    /// Fires every timer at its deadline from one thread of its own, which
    /// ends when the subject is dropped (its sender with it).
    fn own_thread() -> impl FnMut(usize, Duration, Fire) -> Result<(), Refused> {
        let (to_thread, timers) = std::sync::mpsc::channel::<(std::time::Instant, Fire)>();
        std::thread::spawn(move || {
            for (at, fire) in timers {
                measure::wait_until(at);
                fire.hit();
            }
        });
        move |_, delay, fire| {
            to_thread
                .send((measure::now() + delay, fire))
                .map_err(|_| Refused::because("the thread is gone"))
        }
    }

    /// The subject's thread sleeps until each of five deadlines 20 ms
    /// apart and is woken for it: the run counts at least those five
    /// wake-ups (other test threads of this process may add more).
    #[test]
    fn a_run_counts_the_wake_ups_of_the_subjects_threads() {
        let started = measure::now();
        let get = run_group(
            "",
            r#"count = 5
            delay = { dist = "fixed", value = "20ms" }
            arrival = { rate = 50.0, process = "uniform" }"#,
            || Box::new(OneShots(own_thread())),
        );
        let seconds = started.elapsed().as_secs_f64();
        assert_eq!(get(Metric::Fired), Some(5.0));
        let per_s = get(Metric::RunWakeupsPerS).expect("the run counts wake-ups");
        assert!(per_s * seconds >= 5.0, "{per_s}/s over {seconds} s");
    }
}
