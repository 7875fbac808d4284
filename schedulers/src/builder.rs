//! The settings every scheduler's builder shares.

use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;
use crate::error::{Error, Setting};

/// What [`Scheduler::shutdown`](crate::Scheduler::shutdown) does with the
/// tasks still waiting: one-shot tasks not yet due, and periodic tasks.
///
/// The default is the JDK executor's: pending one-shots still run, periodic
/// tasks stop (their handles report cancelled). A one-shot task already due
/// when `shutdown` is called always runs; its deadline is the one its last
/// successful reset set, even if the scheduler had not applied it yet.
/// `shutdown_now` ignores the policy: nothing runs after it.
///
/// # Examples
///
/// ```
/// use schedulers::{HeapTimer, OnShutdown, ShutdownPolicy};
///
/// // Keep heartbeats going until the last pending one-shot has run.
/// let policy = ShutdownPolicy::default().periodic(OnShutdown::Run);
/// let timer = HeapTimer::builder().shutdown_policy(policy).build()?;
/// # drop(timer);
/// # Ok::<(), schedulers::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShutdownPolicy {
    one_shot: OnShutdown,
    periodic: OnShutdown,
}

/// What happens to one kind of waiting task at `shutdown`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnShutdown {
    /// It still runs (a periodic task keeps repeating until `shutdown_now`
    /// or its own cancel).
    Run,
    /// It is cancelled.
    Cancel,
}

impl ShutdownPolicy {
    /// What happens to one-shot tasks not yet due (default: they run; the
    /// JDK's `setExecuteExistingDelayedTasksAfterShutdownPolicy`).
    pub fn one_shot(self, then: OnShutdown) -> ShutdownPolicy {
        ShutdownPolicy {
            one_shot: then,
            ..self
        }
    }

    /// What happens to periodic tasks (default: they are cancelled; the
    /// JDK's `setContinueExistingPeriodicTasksAfterShutdownPolicy`).
    pub fn periodic(self, then: OnShutdown) -> ShutdownPolicy {
        ShutdownPolicy {
            periodic: then,
            ..self
        }
    }

    pub(crate) fn keeps_one_shots(&self) -> bool {
        self.one_shot == OnShutdown::Run
    }

    pub(crate) fn keeps_periodic(&self) -> bool {
        self.periodic == OnShutdown::Run
    }
}

impl Default for ShutdownPolicy {
    fn default() -> ShutdownPolicy {
        ShutdownPolicy {
            one_shot: OnShutdown::Run,
            periodic: OnShutdown::Cancel,
        }
    }
}

/// The settings every scheduler's builder has.
#[derive(Clone, Debug)]
pub(crate) struct Common {
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) pending_limit: Option<usize>,
    pub(crate) policy: ShutdownPolicy,
    pub(crate) thread_name: String,
    pub(crate) spin_budget: Duration,
    pub(crate) timer_slack: Duration,
    pub(crate) run_figures: bool,
    /// The clock is the default `SystemClock`: runs may be timed, and
    /// deadlines counted, by the CPU's counter (see `crate::cycles`).
    pub(crate) system_clock: bool,
}

/// The default [`spin_budget`](crate::HeapTimerBuilder::spin_budget) of
/// every scheduler: at most 100 ms of spinning per second, a tenth of a core.
pub const DEFAULT_SPIN_BUDGET: Duration = Duration::from_millis(100);

/// The default [`timer_slack`](crate::HeapTimerBuilder::timer_slack) of
/// every scheduler's threads: 1 ns, as punctual as Linux allows.
pub const DEFAULT_TIMER_SLACK: Duration = Duration::from_nanos(1);

/// Checks a [`periodic_slack`](crate::HeapTimerBuilder::periodic_slack):
/// at most a second.
pub(crate) fn check_periodic_slack(slack: Duration) -> Result<(), Error> {
    if slack > Duration::from_secs(1) {
        return Err(Error::invalid(
            Setting::PeriodicSlack,
            format!("{slack:?} is more than a second; at most 1 s"),
        ));
    }
    Ok(())
}

impl Common {
    pub(crate) fn new(thread_name: &str) -> Common {
        Common {
            clock: Arc::new(crate::clock::SystemClock),
            pending_limit: None,
            policy: ShutdownPolicy::default(),
            thread_name: thread_name.to_owned(),
            spin_budget: DEFAULT_SPIN_BUDGET,
            timer_slack: DEFAULT_TIMER_SLACK,
            run_figures: true,
            system_clock: true,
        }
    }
}

impl Common {
    /// Checks the settings every builder shares.
    pub(crate) fn validate(&self) -> Result<(), Error> {
        if self.pending_limit == Some(0) {
            return Err(Error::invalid(
                Setting::PendingLimit,
                "0 would refuse every task; leave it unset for no limit",
            ));
        }
        if self.spin_budget > Duration::from_secs(1) {
            return Err(Error::invalid(
                Setting::SpinBudget,
                format!(
                    "{:?} per second is more than a thread can spend; at most 1 s",
                    self.spin_budget
                ),
            ));
        }
        if self.timer_slack.is_zero() || self.timer_slack > Duration::from_secs(1) {
            return Err(Error::invalid(
                Setting::TimerSlack,
                format!(
                    "{:?} is outside 1 ns to 1 s (Linux reads zero as its default, 50 µs: ask for that)",
                    self.timer_slack
                ),
            ));
        }
        if self.thread_name.contains('\0') {
            return Err(Error::invalid(
                Setting::ThreadName,
                format!("{:?} contains a NUL byte", self.thread_name),
            ));
        }
        Ok(())
    }
}

/// Starts a named thread, or says why the operating system would not.
pub(crate) fn spawn(name: String, body: impl FnOnce() + Send + 'static) -> Result<(), Error> {
    std::thread::Builder::new()
        .name(name.clone())
        .spawn(body)
        .map(drop)
        .map_err(|e| Error::spawn(&format!("thread {name:?}"), &e))
}

/// A wheel's tick in nanoseconds, if it is at least `min` and one turn of
/// `buckets` ticks fits the time range (`u64` nanoseconds, 584 years): the
/// rule Netty applies (`tickDuration * ticksPerWheel` must fit a `long`).
pub(crate) fn wheel_tick(tick: Duration, min: Duration, buckets: usize) -> Result<u64, Error> {
    if tick < min {
        return Err(Error::invalid(
            Setting::Tick,
            format!("{tick:?} is shorter than the shortest tick, {min:?}"),
        ));
    }
    u64::try_from(tick.as_nanos())
        .ok()
        .filter(|&ns| ns.checked_mul(buckets as u64).is_some())
        .ok_or_else(|| {
            Error::invalid(
                Setting::Tick,
                format!(
                    "{tick:?} times {buckets} buckets does not fit the time range of 584 years"
                ),
            )
        })
}

/// The builder methods every scheduler shares; expects a `common: Common` field.
macro_rules! common_builder_methods {
    () => {
        /// The clock the scheduler reads: [`SystemClock`](crate::SystemClock)
        /// by default, a [`ManualClock`](crate::ManualClock) for tests and
        /// simulations.
        pub fn clock(mut self, clock: impl crate::Clock) -> Self {
            self.common.clock = std::sync::Arc::new(clock);
            self.common.system_clock = false;
            self
        }

        /// The most tasks that may wait at once; beyond it `submit` fails
        /// with [`Error::is_pending_limit`](crate::Error::is_pending_limit).
        /// Unlimited by default; zero is refused by `build`
        /// ([`Error::is_invalid_pending_limit`](crate::Error::is_invalid_pending_limit)).
        pub fn pending_limit(mut self, limit: usize) -> Self {
            self.common.pending_limit = Some(limit);
            self
        }

        /// The name of the scheduler's thread (a prefix where it has several).
        /// A name with a NUL byte is refused by `build`
        /// ([`Error::is_invalid_thread_name`](crate::Error::is_invalid_thread_name)).
        pub fn thread_name(mut self, name: impl Into<String>) -> Self {
            self.common.thread_name = name.into();
            self
        }

        /// How much CPU time per second the scheduler's threads may spend
        /// spinning through gaps between deadlines too short to sleep
        /// through (under 25 µs: a timed wait wakes 50 to 90 µs late on
        /// Linux). Default [`DEFAULT_SPIN_BUDGET`](crate::DEFAULT_SPIN_BUDGET), 100 ms per second;
        /// `Duration::ZERO` never spins (every gap is a timed wait, as in
        /// the JDK); `Duration::from_secs(1)` always spins. Once the budget of
        /// the current tenth of a second is spent, short gaps are slept
        /// through and the tasks that came due meanwhile run in one batch:
        /// later by a wake-up's latency, at a fraction of the CPU. `build`
        /// refuses more than one second per second
        /// ([`Error::is_invalid_spin_budget`](crate::Error::is_invalid_spin_budget)).
        pub fn spin_budget(mut self, per_second: std::time::Duration) -> Self {
            self.common.spin_budget = per_second;
            self
        }

        /// How late Linux may wake the scheduler's threads from a timed wait,
        /// so that it can serve several timers with one interrupt. Default
        /// [`DEFAULT_TIMER_SLACK`](crate::DEFAULT_TIMER_SLACK), 1 ns: tasks
        /// start within a wake-up's latency of their deadline. A larger
        /// slack trades lateness for fewer wake-ups, for every task: on a
        /// 2-core VM, 1e5 one-shots over 2 s start with a lateness p50 of
        /// 14 µs on `HeapTimer` at the default and 36 µs at 50 µs, the
        /// slack the JDK's threads run with (its executor: 40 to 49 µs). The
        /// heap-based schedulers also have a slack for periodic runs alone
        /// (`periodic_slack` on their builders), which one-shots do not
        /// pay; see the crate docs for both. `build` refuses zero
        /// (Linux would read it as its default) and more than a second
        /// ([`Error::is_invalid_timer_slack`](crate::Error::is_invalid_timer_slack)).
        /// Elsewhere than Linux the setting is checked and has no effect.
        pub fn timer_slack(mut self, slack: std::time::Duration) -> Self {
            self.common.timer_slack = slack;
            self
        }

        /// What `shutdown` does with waiting tasks (default: pending
        /// one-shots run, periodic tasks stop, as the JDK's executor).
        pub fn shutdown_policy(mut self, policy: crate::ShutdownPolicy) -> Self {
            self.common.policy = policy;
            self
        }

        /// Whether the driver times every run, for the lateness and run-time
        /// figures ([`Metrics::lateness`](crate::Metrics::lateness),
        /// [`Metrics::run_time`](crate::Metrics::run_time), the same per
        /// name, and the `metrics` and `tracing` facades' per-run figures).
        /// Default: yes. Timing costs a fire one reading of the time (on the
        /// system clock, the CPU's time-stamp counter scaled to it: about
        /// 9 ns on x86_64; else a clock read, `Instant::now`'s cost where
        /// you run) and a histogram update; without it those figures stay
        /// empty, and the counters (`fired`, `cancelled`, …) are kept as
        /// ever.
        ///
        /// ```
        /// use schedulers::{HeapTimer, Scheduler};
        ///
        /// let timer = HeapTimer::builder().run_figures(false).build()?;
        /// assert_eq!(timer.metrics().lateness.count(), 0);
        /// # Ok::<(), schedulers::Error>(())
        /// ```
        pub fn run_figures(mut self, on: bool) -> Self {
            self.common.run_figures = on;
            self
        }
    };
}
pub(crate) use common_builder_methods;

/// The builder method of the heap-based schedulers' periodic slack, with
/// the builder's default in words; expects a `periodic_slack: Duration`
/// field.
macro_rules! periodic_slack_method {
    ($default:literal) => {
        /// How late a periodic run may start, so that runs due close
        /// together share one wake-up of the scheduler's threads. One-shot
        /// tasks are not affected: one due meanwhile still starts on time,
        /// and the periodic runs due by then start with it.
        #[doc = concat!("Default ", $default, ".")]
        /// `Duration::ZERO` wakes for every run.
        ///
        /// A wake-up costs a VM several µs of CPU. 1,000 fixed-rate tasks
        /// every 10 ms (a run every 10 µs on average) cost, per run, at a
        /// slack of 0, 50 and 100 µs: `HeapTimer` 6.8, 2.3 and 1.6 µs of
        /// CPU, a `ScheduledThreadPool` of 2 workers 9.2, 3.1 and 2.1 µs
        /// (2-core VM, 3 s each). What the slack costs in start-time jitter,
        /// beside the JDK's executor, is in the crate docs.
        ///
        /// `build` refuses more than a second
        /// ([`Error::is_invalid_periodic_slack`](crate::Error::is_invalid_periodic_slack)).
        /// Has no visible effect on a [`ManualClock`](crate::ManualClock),
        /// whose every advance runs whatever is due.
        pub fn periodic_slack(mut self, slack: std::time::Duration) -> Self {
            self.periodic_slack = slack;
            self
        }
    };
}
pub(crate) use periodic_slack_method;
