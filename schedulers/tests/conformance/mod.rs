//! The conformance suite: the whole [`Scheduler`] contract, written once and
//! instantiated for every scheduler with one line of [`conformance!`].
//!
//! Every case runs in virtual time on a [`ManualClock`]: no sleeps, and the
//! same result on a loaded machine. `advance` returns once every due task has
//! run, so assertions follow it directly.
//!
//! A scheduler may fire up to its `granularity` late (one tick on a wheel,
//! zero on a heap) and never early; every timing assertion allows exactly
//! that window. [`conformance!`] runs every case, for a scheduler that
//! starts one task at a time (inline, or one worker);
//! [`conformance_multi_worker!`] those that hold on several workers.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use schedulers::{
    Clock, ManualClock, Scheduler, SchedulerExt, ShutdownPolicy, SystemClock, TaskHandle,
};

pub mod calendar;
pub mod cases;
pub mod drops;
pub mod figures;
pub mod stress;

/// What a factory may be asked to set on the scheduler it builds.
#[derive(Clone, Debug)]
pub struct Opts {
    /// The harness's [`ManualClock`], or the [`SystemClock`] for the few
    /// cases that check what only real time shows (a driver parked on a
    /// timed wait).
    pub clock: Arc<dyn Clock>,
    pub pending_limit: Option<usize>,
    /// Whether the driver times its runs (`run_figures`; default yes).
    pub run_figures: bool,
    /// What `shutdown` keeps (default: the builders' default).
    pub shutdown_policy: ShutdownPolicy,
}

/// One scheduler under test.
pub struct Harness {
    pub clock: ManualClock,
    make: fn(Opts) -> Box<dyn Scheduler>,
    /// The most a task may start after its deadline, in virtual time.
    pub granularity: Duration,
}

impl Harness {
    pub fn new(make: fn(Opts) -> Box<dyn Scheduler>, granularity: Duration) -> Harness {
        Harness {
            clock: ManualClock::new(),
            make,
            granularity,
        }
    }

    /// A new harness for the same scheduler, with its own clock.
    pub fn fresh(&self) -> Harness {
        Harness::new(self.make, self.granularity)
    }

    /// A new harness for the same scheduler, with its own clock whose wall
    /// clock starts at `wall`.
    pub fn at_wall(&self, wall: std::time::SystemTime) -> Harness {
        Harness {
            clock: ManualClock::with_wall(wall),
            ..self.fresh()
        }
    }

    /// A scheduler with default settings on this harness's clock.
    pub fn scheduler(&self) -> Box<dyn Scheduler> {
        self.scheduler_with(None)
    }

    /// The default settings, on this harness's clock.
    fn opts(&self) -> Opts {
        Opts {
            clock: Arc::new(self.clock.clone()),
            pending_limit: None,
            run_figures: true,
            shutdown_policy: ShutdownPolicy::default(),
        }
    }

    pub fn scheduler_with(&self, pending_limit: Option<usize>) -> Box<dyn Scheduler> {
        (self.make)(Opts {
            pending_limit,
            ..self.opts()
        })
    }

    /// A scheduler whose `shutdown` follows `policy`.
    pub fn scheduler_with_policy(&self, policy: ShutdownPolicy) -> Box<dyn Scheduler> {
        (self.make)(Opts {
            shutdown_policy: policy,
            ..self.opts()
        })
    }

    /// A scheduler that does not time its runs (`run_figures(false)`).
    pub fn untimed_scheduler(&self) -> Box<dyn Scheduler> {
        (self.make)(Opts {
            run_figures: false,
            ..self.opts()
        })
    }

    /// The same scheduler on the system clock, for cases whose outcome does
    /// not depend on how fast real time passes.
    pub fn scheduler_on_system_clock(&self) -> Box<dyn Scheduler> {
        (self.make)(Opts {
            clock: Arc::new(SystemClock),
            ..self.opts()
        })
    }

    pub fn advance(&self, d: Duration) {
        self.clock.advance(d);
    }

    pub fn advance_ms(&self, ms: u64) {
        self.clock.advance(Duration::from_millis(ms));
    }

    /// Advances to `at` after the clock's start plus the granularity: every
    /// task due by `at` has started when this returns.
    pub fn advance_past(&self, at: Duration) {
        let target = at + self.granularity;
        let now = self.clock.elapsed();
        if target > now {
            self.clock.advance(target - now);
        } else {
            self.clock.settle();
        }
    }

    pub fn now(&self) -> Duration {
        self.clock.elapsed()
    }

    /// Asserts that something started at `at`, due at `due`: not early, at
    /// most one granularity late.
    #[track_caller]
    pub fn assert_on_time(&self, at: Duration, due: Duration) {
        assert!(at >= due, "started early: at {at:?}, due {due:?}");
        assert!(
            at <= due + self.granularity,
            "started late: at {at:?}, due {due:?}, granularity {:?}",
            self.granularity
        );
    }
}

/// Records what ran when, in virtual time.
#[derive(Clone, Default)]
pub struct Log<T> {
    entries: Arc<Mutex<Vec<(T, Duration)>>>,
}

impl<T: Clone + Send + 'static> Log<T> {
    pub fn new() -> Log<T> {
        Log {
            entries: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// A closure-ready recorder: records `label` at the clock's time.
    pub fn record(&self, clock: &ManualClock, label: T) {
        self.entries.lock().unwrap().push((label, clock.elapsed()));
    }

    pub fn entries(&self) -> Vec<(T, Duration)> {
        self.entries.lock().unwrap().clone()
    }

    pub fn labels(&self) -> Vec<T> {
        self.entries().into_iter().map(|(l, _)| l).collect()
    }

    pub fn times(&self) -> Vec<Duration> {
        self.entries().into_iter().map(|(_, t)| t).collect()
    }

    pub fn len(&self) -> usize {
        self.entries.lock().unwrap().len()
    }
}

/// A counter a task can bump.
#[derive(Clone, Default)]
pub struct Counter(Arc<AtomicUsize>);

impl Counter {
    pub fn bump(&self) {
        self.0.fetch_add(1, SeqCst);
    }
    pub fn get(&self) -> usize {
        self.0.load(SeqCst)
    }
}

/// Detects two runs of the same task at once.
#[derive(Clone, Default)]
pub struct OverlapDetector {
    running: Arc<AtomicUsize>,
    overlapped: Arc<AtomicBool>,
}

impl OverlapDetector {
    pub fn enter(&self) {
        if self.running.fetch_add(1, SeqCst) != 0 {
            self.overlapped.store(true, SeqCst);
        }
    }
    pub fn exit(&self) {
        self.running.fetch_sub(1, SeqCst);
    }
    pub fn overlapped(&self) -> bool {
        self.overlapped.load(SeqCst)
    }
}

/// A slot for a task's own handle, filled after scheduling.
pub type SelfHandle = Arc<OnceLock<TaskHandle>>;

pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

pub fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// Twenty tasks due at one instant behind one that blocks, on a scheduler
/// with a second thread to run them (a pool's other worker, an executor's
/// other thread): they run while the first waits, as they would have been
/// taken from the JDK's queue. A thread that kept the tasks due together
/// to itself leaves them waiting for the blocked one, and this times out.
/// `s` runs on `clock`, which advances on a thread of its own, since
/// `advance` waits for the blocked task too.
pub fn tasks_behind_a_blocked_one_run_on_another_thread(s: &dyn Scheduler, clock: ManualClock) {
    let (release, blocked) = std::sync::mpsc::channel::<()>();
    let at = secs(1);
    let blocker = s.schedule(at, move || blocked.recv().is_ok()).unwrap();
    let others: Vec<_> = (0..20u64)
        .map(|i| s.schedule(at, move || i).unwrap())
        .collect();
    let advance = std::thread::spawn(move || clock.advance(at));
    for (i, task) in (0..20u64).zip(others) {
        let ran = task.get_timeout(secs(30));
        assert_eq!(ran.unwrap(), i, "task {i}");
    }
    release.send(()).unwrap();
    assert!(blocker.get_timeout(secs(30)).unwrap());
    advance.join().unwrap();
}

/// Keeps an unused-import lint quiet for helpers only some cases use.
#[allow(dead_code)]
fn _uses(s: &dyn Scheduler) {
    let _ = s.schedule(Duration::ZERO, || ());
}

/// Instantiates the whole suite for one scheduler:
/// `conformance!(name, granularity, |opts| -> Box<dyn Scheduler> { .. });`
///
/// A pool-backed scheduler should use a single worker here: some cases
/// observe the order in which tasks start, and the busy-worker cases need
/// the only worker to be the busy one. [`conformance_multi_worker!`] runs
/// the rest on several workers.
#[macro_export]
macro_rules! conformance {
    ($name:ident, $granularity:expr, $make:expr) => {
        $crate::conformance_module!(
            $name,
            $granularity,
            $make,
            cases::ties_run_in_submission_order,
            cases::virtual_time_is_deterministic,
            cases::cancel_reaches_a_task_waiting_behind_a_busy_worker,
            cases::reset_reaches_a_task_waiting_behind_a_busy_worker,
            cases::reset_reaches_a_task_due_with_the_busy_one_after_its_handle_is_gone,
            cases::shutdown_now_returns_a_task_waiting_behind_a_busy_worker,
            cases::shutdown_applies_its_policy_to_tasks_waiting_behind_a_busy_worker,
            cases::shutdown_judges_a_one_shot_by_the_reset_on_its_way,
            cases::tasks_waiting_behind_a_busy_worker_start_in_order,
        );
    };
}

/// The suite for a scheduler whose tasks run on several workers at once:
/// every case but those that observe the start order of tasks due together
/// (`ties_run_in_submission_order`, `virtual_time_is_deterministic`, here
/// replaced by `history_is_deterministic_as_a_set`) or need the only worker
/// to be busy.
#[macro_export]
macro_rules! conformance_multi_worker {
    ($name:ident, $granularity:expr, $make:expr) => {
        $crate::conformance_module!(
            $name,
            $granularity,
            $make,
            cases::history_is_deterministic_as_a_set,
        );
    };
}

/// A module of tests for one configuration: the shared cases plus `cases`.
#[macro_export]
macro_rules! conformance_module {
    ($name:ident, $granularity:expr, $make:expr, $($module:ident :: $case:ident),* $(,)?) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            use $crate::conformance::{calendar, cases, drops, figures, stress, Harness, Opts};

            fn harness() -> Harness {
                let make: fn(Opts) -> Box<dyn schedulers::Scheduler> = $make;
                Harness::new(make, $granularity)
            }

            $crate::conformance_shared_cases!();
            $crate::conformance_cases!($($module::$case),*);
        }
    };
}

/// The cases every configuration runs, whatever its number of workers.
#[macro_export]
macro_rules! conformance_shared_cases {
    () => {
        $crate::conformance_cases!(
            cases::never_early,
            cases::fires_within_granularity_across_delays,
            cases::one_shot_runs_exactly_once,
            cases::one_shot_returns_its_value,
            cases::zero_delay_runs_at_once,
            cases::cancel_before_fire_prevents_the_run,
            cases::cancel_after_fire_returns_false,
            cases::cancel_one_shot_from_inside_returns_false,
            cases::cancel_periodic_from_inside_stops_it,
            cases::reset_moves_the_deadline_later,
            cases::reset_moves_the_deadline_earlier,
            cases::reset_of_finished_or_cancelled_task_changes_nothing,
            cases::reset_periodic_continues_on_the_new_grid,
            cases::remaining_counts_down,
            cases::fixed_rate_runs_on_its_grid,
            cases::fixed_rate_catches_up_after_a_slow_run,
            cases::fixed_rate_runs_never_overlap,
            cases::fixed_delay_counts_from_completion,
            cases::the_end_of_time_is_never_reached,
            cases::panic_in_one_shot_is_reported_and_survived,
            cases::panic_in_periodic_stops_it_and_is_reported,
            cases::a_panicking_destructor_never_kills_the_scheduler,
            cases::cancel_lets_go_of_the_closure,
            cases::advance_waits_for_the_closure_of_a_task_that_ended,
            cases::shutdown_rejects_new_work,
            cases::shutdown_runs_pending_one_shots_and_stops_periodic,
            cases::shutdown_now_returns_what_never_ran,
            cases::shutdown_now_stops_a_running_periodic_task,
            cases::cancel_after_shutdown_lets_it_terminate_at_once,
            cases::reset_after_shutdown_still_runs_the_task,
            cases::a_task_may_hold_the_last_reference_to_its_scheduler,
            cases::drop_is_a_graceful_shutdown,
            cases::zero_period_is_an_error,
            cases::delay_overflow_is_an_error,
            cases::pending_limit_rejects_and_frees_capacity,
            cases::metrics_count_pending_fired_cancelled,
            figures::figures_match_a_known_schedule,
            figures::lateness_is_start_minus_deadline_for_every_run,
            figures::untimed_runs_keep_every_count_and_no_histogram,
            figures::wakeups_count_the_driver_waking,
            cases::works_as_a_trait_object,
            drops::every_closure_and_value_is_dropped_exactly_once,
            drops::closures_left_to_the_driver_are_dropped_once_within_housekeeping,
            drops::cancel_and_drop_drops_each_closure_once,
            calendar::calendar_runs_at_its_fire_times,
            calendar::calendar_runs_match_the_preview_across_dst,
            calendar::live_runs_are_the_preview_for_any_calendar,
            calendar::a_wall_clock_step_moves_calendar_runs,
            calendar::a_suspend_is_followed_by_the_missed_runs_policy,
            calendar::reset_and_cancel_of_a_calendar_task,
            calendar::fixed_rate_missed_runs_follow_the_policy,
            calendar::lateness_within_the_tolerance_is_not_a_missed_run,
            calendar::a_periodic_task_may_continue_after_a_panic,
            calendar::calendar_and_policy_misuse_is_a_typed_error,
            calendar::a_calendar_task_that_runs_out_ends_and_drops_its_closure,
            stress::concurrent_schedule_cancel_and_fire_match_the_model,
            stress::a_storm_of_cancels_matches_the_model,
            stress::shutdown_racing_schedule_loses_nothing,
            stress::reset_racing_fire_runs_once,
            stress::reset_racing_fire_runs_once_with_its_handle_dropped,
            stress::a_mix_of_schedules_resets_cancels_and_drops_loses_nothing,
            stress::periodic_tasks_and_waits_mixed_with_resets_and_cancels_keep_their_rules,
            stress::shutdown_now_racing_everything_loses_nothing,
            stress::the_pending_limit_comes_back_whole_after_concurrent_use,
        );
    };
}

/// Expands to one `#[test]` per case, each on a fresh harness.
#[macro_export]
macro_rules! conformance_cases {
    ($($module:ident :: $case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                $module::$case(&harness());
            }
        )*
    };
}
