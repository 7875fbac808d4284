//! Kafka's timer tests (`server-common/src/test/java/org/apache/kafka/server/util/timer/`,
//! formerly Scala `kafka.utils.timer`), ported to `HierarchicalWheelTimer`
//! and run in virtual time, plus tests of what the design promises: a timer
//! days away cascades through the overflow wheels and fires once, on time,
//! and the driver sleeps through idle time instead of ticking.
//!
//! Kafka drives its timer by calling `advanceClock(timeoutMs)` by hand; here
//! the driver thread does that, and a `ManualClock` moves time.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schedulers::{
    Clock, Executor, HierarchicalWheelTimer, ManualClock, Scheduler, SchedulerExt, TaskHandle,
};

/// Kafka's `TimerTest` setup: `new SystemTimer("test", 1, 3, …)`, a 1 ms
/// tick and 3 buckets per wheel. One worker, so start order is dispatch order.
fn kafka_timer(clock: &ManualClock) -> HierarchicalWheelTimer {
    HierarchicalWheelTimer::builder()
        .clock(clock.clone())
        .tick(Duration::from_millis(1))
        .wheel_size(3)
        .executor(Executor::pool(1).unwrap())
        .build()
        .unwrap()
}

/// Moves `clock` to `at`, unless it is already there or past.
fn advance_to(clock: &ManualClock, at: std::time::Instant) {
    let now = clock.now();
    clock.advance(at.saturating_duration_since(now));
}

/// Ports `TimerTest.testAlreadyExpiredTask`: tasks added with delays −5 to
/// −1 ms all run after `advanceClock(0)`. `Duration` cannot be negative, so
/// the tasks here are due at once (delay zero), which the wheel treats the
/// same way: already expired, run at the next advance. Kafka's Java version
/// compares sets; the Scala original, and this port, the order as well.
#[test]
fn timer_test_already_expired_task() {
    let clock = ManualClock::new();
    let timer = kafka_timer(&clock);
    let output = Arc::new(Mutex::new(Vec::new()));
    let futures: Vec<_> = (-5i32..0)
        .map(|i| {
            let output = output.clone();
            timer
                .schedule(Duration::ZERO, move || output.lock().unwrap().push(i))
                .unwrap()
        })
        .collect();
    clock.advance(Duration::ZERO);
    for f in futures {
        assert!(
            f.handle().is_done(),
            "already expired tasks should run immediately"
        );
    }
    assert_eq!(
        *output.lock().unwrap(),
        [-5, -4, -3, -2, -1],
        "output of already expired tasks"
    );
}

/// The task list of `TimerTest.testTaskExpiration`: delays 0–4 ms once,
/// 10–99 ms twice each, 100–499 ms once.
fn expiration_delays() -> Vec<u64> {
    let mut ids = Vec::new();
    ids.extend(0..5);
    for i in 10..100 {
        ids.extend([i, i]);
    }
    ids.extend(100..500);
    ids
}

/// Schedules Kafka's `TestTask`s (each records its id when run, at most once)
/// and returns what they record: `(id, virtual ms when run)`.
fn schedule_expiration_tasks(
    timer: &HierarchicalWheelTimer,
    clock: &ManualClock,
) -> Arc<Mutex<Vec<(u64, Duration)>>> {
    let output = Arc::new(Mutex::new(Vec::new()));
    let start = clock.elapsed();
    for id in expiration_delays() {
        let (output, clock) = (output.clone(), clock.clone());
        timer
            .schedule(Duration::from_millis(id), move || {
                output.lock().unwrap().push((id, clock.elapsed() - start))
            })
            .unwrap();
    }
    output
}

/// Ports `TimerTest.testTaskExpiration` with its exact delay sets on a
/// 1 ms × 3 wheel (levels of 3, 9, 27, 81, 243 and 729 ms cover 499 ms), in
/// 1 ms steps of virtual time. Kafka checks each task ran exactly once; this
/// port also checks each ran at its own millisecond, never early.
#[test]
fn timer_test_task_expiration() {
    let clock = ManualClock::new();
    let timer = kafka_timer(&clock);
    let output = schedule_expiration_tasks(&timer, &clock);
    assert!(
        timer.levels() >= 6,
        "a 499 ms delay needs six 3-bucket wheels"
    );
    clock.advance(Duration::ZERO);
    for _ in 0..500 {
        clock.advance(Duration::from_millis(1));
    }
    let output = output.lock().unwrap().clone();
    let mut ids: Vec<u64> = output.iter().map(|&(id, _)| id).collect();
    ids.sort_unstable();
    assert_eq!(ids, expiration_delays(), "each task ran exactly once");
    for (id, at) in output {
        // Whole-millisecond deadlines on a 1 ms tick, reached exactly.
        assert_eq!(at, Duration::from_millis(id), "task {id} ran at {at:?}");
    }
    assert_eq!(timer.metrics().pending, 0);
}

/// `testTaskExpiration` as Kafka drives it: one `advanceClock(2000)` covers
/// every deadline. All tasks run once, in deadline order (ties in
/// submission order), each cascading through the wheels within one advance.
#[test]
fn timer_test_task_expiration_in_one_advance() {
    let clock = ManualClock::new();
    let timer = kafka_timer(&clock);
    let output = schedule_expiration_tasks(&timer, &clock);
    clock.advance(Duration::from_millis(2000));
    let ids: Vec<u64> = output.lock().unwrap().iter().map(|&(id, _)| id).collect();
    assert_eq!(ids, expiration_delays());
}

/// Ports `TimerTaskListTest.testAll` to the public API: moving tasks from
/// one bucket to another (`reset`) keeps the count of pending tasks, and
/// cancelling them empties the wheel. (The list-level original is ported in
/// the core's unit tests, `hierarchical::test::kafka_timer_task_list_test_all`.)
#[test]
fn timer_task_list_test_all() {
    let clock = ManualClock::new();
    let timer = kafka_timer(&clock);
    let ran = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<TaskHandle> = (1..=10)
        .map(|i| {
            let ran = ran.clone();
            let handle = timer
                .schedule(Duration::from_millis(10), move || ran.fetch_add(1, SeqCst))
                .unwrap();
            assert_eq!(timer.metrics().pending, i);
            handle.into_handle()
        })
        .collect();
    // Moving the existing tasks to other buckets does not change the count.
    for t in &tasks[..4] {
        assert!(t.reset(Duration::from_millis(20)).unwrap());
        assert_eq!(timer.metrics().pending, 10);
    }
    for t in &tasks[4..] {
        assert!(t.reset(Duration::from_millis(30)).unwrap());
        assert_eq!(timer.metrics().pending, 10);
    }
    // Cancelling them empties the wheel: nothing waits, nothing runs.
    for t in &tasks {
        assert!(t.cancel());
    }
    assert_eq!(timer.metrics().pending, 0);
    assert_eq!(
        timer.next_expiration(),
        None,
        "every bucket left the delay queue"
    );
    clock.advance(Duration::from_millis(100));
    assert_eq!(ran.load(SeqCst), 0);
}

/// Ports `TimerTaskListTest.testGetDelay`: a task due in 10 s, seen 5 s
/// later, has 5 s to go.
#[test]
fn timer_task_list_test_get_delay() {
    let clock = ManualClock::new();
    let timer = kafka_timer(&clock);
    let handle = timer.schedule(Duration::from_secs(10), || ()).unwrap();
    clock.advance(Duration::from_secs(5));
    assert_eq!(handle.handle().remaining(), Duration::from_secs(5));
}

/// A timer days away descends through the overflow wheels: the driver wakes
/// once per bucket on its way down (not once per tick), and the task runs
/// exactly once, within one tick after its deadline.
#[test]
fn a_timer_days_away_passes_through_the_overflow_wheels_and_fires_once_on_time() {
    let clock = ManualClock::new();
    let timer = HierarchicalWheelTimer::builder()
        .clock(clock.clone())
        .build()
        .unwrap(); // 1 ms x 20
    let delay = Duration::from_secs(3 * 24 * 3600) + Duration::from_micros(123_456);
    let runs = Arc::new(Mutex::new(Vec::new()));
    let (r, c) = (runs.clone(), clock.clone());
    let start = clock.elapsed();
    let handle = timer
        .schedule(delay, move || r.lock().unwrap().push(c.elapsed() - start))
        .unwrap();
    assert_eq!(
        timer.levels(),
        7,
        "1 ms x 20^7 (14.8 days) is the first span to reach 3 days"
    );
    let mut wakes = 0;
    while let Some(at) = timer.next_expiration() {
        assert!(runs.lock().unwrap().is_empty(), "ran before its deadline");
        advance_to(&clock, at);
        wakes += 1;
        assert!(wakes <= 7 * 20, "the driver ticks instead of sleeping");
    }
    let runs = runs.lock().unwrap().clone();
    assert_eq!(runs.len(), 1, "fired exactly once");
    assert!(
        runs[0] >= delay && runs[0] < delay + Duration::from_millis(1),
        "fired at {:?}, due {delay:?}",
        runs[0]
    );
    assert!(handle.handle().is_done());
    assert!(
        wakes <= 7,
        "one wake-up per wheel level on the way down, got {wakes}"
    );
    clock.advance(Duration::from_secs(30 * 24 * 3600));
    assert_eq!(timer.metrics().fired, 1);
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// The idle target: with 10⁵ timers due in one to two hours, the
/// driver wakes at most 10 times a second (Netty's wheel at a 1 ms tick
/// wakes 1,000 times). The clock jumps straight to each time the driver
/// sleeps until, as a real clock would wake it, and the wake-ups are counted.
/// Then every timer fires exactly once, within a tick of its deadline.
#[test]
fn driver_wake_ups_with_100k_timers_an_hour_away() {
    const N: usize = 100_000;
    let clock = ManualClock::new();
    let timer = HierarchicalWheelTimer::builder()
        .clock(clock.clone())
        .executor(Executor::inline())
        .build()
        .unwrap();
    let hour = Duration::from_secs(3600);
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let fired = Arc::new(AtomicUsize::new(0));
    let worst_late = Arc::new(AtomicU64::new(0));
    let start = clock.elapsed();
    for _ in 0..N {
        let delay = hour + Duration::from_micros(rng.next() % 3_600_000_000);
        let (fired, worst, c) = (fired.clone(), worst_late.clone(), clock.clone());
        timer
            .schedule(delay, move || {
                let late = (c.elapsed() - start).saturating_sub(delay);
                worst.fetch_max(late.as_nanos() as u64, SeqCst);
                fired.fetch_add(1, SeqCst);
            })
            .unwrap();
    }
    clock.settle();
    let woken_by_submits = timer.driver_wakeups();
    // A submit wakes the driver only when it makes the earliest bucket
    // earlier: a new record low of a random sequence, about ln(10^5) ≈ 12
    // times for each of the two or three hour-wide buckets.
    assert!(
        woken_by_submits <= 60,
        "10^5 submits woke the driver {woken_by_submits} times"
    );

    // The idle hour: jump from one wake-up to the next.
    let mut wakes = 0u64;
    while let Some(at) = timer.next_expiration() {
        if at.saturating_duration_since(clock.now()) + (clock.elapsed() - start) >= hour {
            break;
        }
        advance_to(&clock, at);
        wakes += 1;
    }
    assert_eq!(fired.load(SeqCst), 0);
    assert!(wakes <= 10, "{wakes} wake-ups in the idle hour");
    let driver = timer.driver_wakeups() - woken_by_submits;
    assert_eq!(driver, wakes, "the driver woke only when the clock moved");

    // The busy hour: every timer fires once, at most a tick late.
    let mut busy_wakes = 0u64;
    while let Some(at) = timer.next_expiration() {
        advance_to(&clock, at);
        busy_wakes += 1;
    }
    assert_eq!(fired.load(SeqCst), N);
    assert!(
        worst_late.load(SeqCst) < 1_000_000,
        "a timer ran {} ns late",
        worst_late.load(SeqCst)
    );
    // A bucket expires at its earliest timer, so every wake-up fires at least
    // one timer: at most one per occupied millisecond (Netty: one per tick),
    // plus one for each bucket of more than 256 timers, which moves down
    // ahead of its time (at most N / 256 on each of the 5 levels above 0).
    assert!(
        busy_wakes <= N as u64 + 5 * N as u64 / 256,
        "{busy_wakes} wake-ups for {N} timers"
    );
    eprintln!("wake-ups: {woken_by_submits} during submits, {wakes} in the idle hour, {busy_wakes} in the firing hour");
}
