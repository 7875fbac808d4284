//! The JSR-166 TCK's `ScheduledExecutorTest`
//! (`test/jdk/java/util/concurrent/tck/ScheduledExecutorTest.java`) and the
//! jtreg tests in `test/jdk/java/util/concurrent/ScheduledThreadPoolExecutor/`,
//! ported to `ScheduledThreadPool`. Each test names its original.
//!
//! Tests about time run in virtual time on a `ManualClock`; tests about
//! blocking workers use channels as the TCK uses latches (a task due now is
//! taken without any `advance`, so the test can wait for it to start).
//!
//! Not ported, because the subject does not exist in this API:
//! `testNullTaskSubmission` and the older `test*Null` tests (closures and
//! `Duration`s cannot be null), `testGetThreadFactory` / `testSetThreadFactory*`
//! (no thread factories), `testDefaultRejectedExecutionHandler` (rejection
//! is always an `Error`), `testInvokeAny*` / `testInvokeAll*` /
//! `testTimedInvoke*` (no invoke methods), `testGetLargestPoolSize`,
//! `testGetTaskCount`, `testGetCorePoolSize` and the policy getters of
//! `testShutdown1-4` (the builder sets them; they cannot be read back or
//! changed later).

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schedulers::thread_pool::AUTO_PURGE_MIN;
use schedulers::{ManualClock, ScheduledThreadPool, Scheduler, SchedulerExt, Task, TaskHandle};

const LONG_DELAY: Duration = Duration::from_secs(10);
const WAIT: Duration = Duration::from_secs(30);

fn pool(clock: &ManualClock, threads: usize) -> ScheduledThreadPool {
    ScheduledThreadPool::builder()
        .pool_size(threads)
        .clock(clock.clone())
        .build()
        .unwrap()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A task that reports it started, then blocks until released.
fn blocker(
    started: &Sender<()>,
    release: &Arc<Mutex<Receiver<()>>>,
) -> impl FnOnce() + Send + 'static {
    let (started, release) = (started.clone(), release.clone());
    move || {
        started.send(()).unwrap();
        let _ = release.lock().unwrap().recv_timeout(WAIT);
    }
}

fn latch() -> (Sender<()>, Arc<Mutex<Receiver<()>>>) {
    let (tx, rx) = channel();
    (tx, Arc::new(Mutex::new(rx)))
}

/// `testExecute`: execute successfully executes a runnable.
#[test]
fn test_execute() {
    let clock = ManualClock::new();
    let p = pool(&clock, 1);
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    p.schedule(Duration::ZERO, move || r.fetch_add(1, SeqCst))
        .unwrap();
    clock.advance(Duration::ZERO);
    assert_eq!(ran.load(SeqCst), 1);
}

/// `testSchedule1`: delayed schedule of a callable successfully executes
/// after delay, and yields its value (`Boolean.TRUE`).
#[test]
fn test_schedule1() {
    let clock = ManualClock::new();
    let p = pool(&clock, 1);
    let c = clock.clone();
    let f = p.schedule(ms(12), move || (true, c.elapsed())).unwrap();
    clock.advance(ms(11));
    assert!(!f.handle().is_done(), "not before the delay");
    clock.advance(ms(1));
    let (value, at) = f.get().unwrap();
    assert!(value);
    assert!(at >= ms(12));
}

/// `testSchedule3`: delayed schedule of a runnable successfully executes
/// after delay; its result is `null` (`()`).
#[test]
fn test_schedule3() {
    let clock = ManualClock::new();
    let p = pool(&clock, 1);
    let c = clock.clone();
    let at = Arc::new(Mutex::new(None));
    let a = at.clone();
    let f = p
        .schedule(ms(12), move || *a.lock().unwrap() = Some(c.elapsed()))
        .unwrap();
    clock.advance(ms(12));
    f.get().unwrap();
    assert!(at.lock().unwrap().unwrap() >= ms(12));
}

/// `testSchedule4`: scheduleAtFixedRate executes runnable after the given
/// initial delay.
#[test]
fn test_schedule4() {
    let clock = ManualClock::new();
    let p = pool(&clock, 1);
    let first = Arc::new(Mutex::new(None));
    let (f, c) = (first.clone(), clock.clone());
    let h = p
        .schedule_at_fixed_rate(ms(12), LONG_DELAY, move || {
            f.lock().unwrap().get_or_insert(c.elapsed());
        })
        .unwrap();
    clock.advance(ms(11));
    assert!(first.lock().unwrap().is_none());
    clock.advance(ms(1));
    assert_eq!(*first.lock().unwrap(), Some(ms(12)));
    assert!(h.cancel());
}

/// `testSchedule5`: scheduleWithFixedDelay executes runnable after the
/// given initial delay.
#[test]
fn test_schedule5() {
    let clock = ManualClock::new();
    let p = pool(&clock, 1);
    let first = Arc::new(Mutex::new(None));
    let (f, c) = (first.clone(), clock.clone());
    let h = p
        .schedule_with_fixed_delay(ms(12), LONG_DELAY, move || {
            f.lock().unwrap().get_or_insert(c.elapsed());
        })
        .unwrap();
    clock.advance(ms(11));
    assert!(first.lock().unwrap().is_none());
    clock.advance(ms(1));
    assert_eq!(*first.lock().unwrap(), Some(ms(12)));
    assert!(h.cancel());
}

/// `testFixedRateSequence`: scheduleAtFixedRate executes series of tasks
/// at given rate; eventually, it must hold that `cycles - 1 <= elapsed/delay`
/// (and, in virtual time, exactly).
#[test]
fn test_fixed_rate_sequence() {
    for delay in [1u64, 3, 9, 27, 81] {
        let clock = ManualClock::new();
        let p = pool(&clock, 2);
        let cycles = 8;
        let times = Arc::new(Mutex::new(Vec::new()));
        let (t, c) = (times.clone(), clock.clone());
        let h = p
            .schedule_at_fixed_rate(Duration::ZERO, ms(delay), move || {
                t.lock().unwrap().push(c.elapsed())
            })
            .unwrap();
        while times.lock().unwrap().len() < cycles {
            clock.advance(ms(1));
        }
        assert!(h.cancel());
        let times = times.lock().unwrap();
        let elapsed = times[cycles - 1];
        assert!(elapsed >= ms(delay) * (cycles as u32 - 1), "{times:?}");
        assert_eq!(
            elapsed,
            ms(delay) * (cycles as u32 - 1),
            "on the grid in virtual time: {times:?}"
        );
    }
}

/// `testFixedDelaySequence`: scheduleWithFixedDelay executes series of
/// tasks with given period; every gap is at least the delay (the original
/// retries while any gap is ≥ 2 × delay; in virtual time each gap is the
/// delay exactly).
#[test]
fn test_fixed_delay_sequence() {
    for delay in [1u64, 3, 9, 27, 81] {
        let clock = ManualClock::new();
        let p = pool(&clock, 2);
        let times = Arc::new(Mutex::new(Vec::new()));
        let (t, c) = (times.clone(), clock.clone());
        let h = p
            .schedule_with_fixed_delay(Duration::ZERO, ms(delay), move || {
                t.lock().unwrap().push(c.elapsed())
            })
            .unwrap();
        while times.lock().unwrap().len() < 8 {
            clock.advance(ms(1));
        }
        assert!(h.cancel());
        let times = times.lock().unwrap();
        for w in times.windows(2) {
            assert!(w[1] - w[0] >= ms(delay), "{times:?}");
            assert_eq!(w[1] - w[0], ms(delay), "{times:?}");
        }
    }
}

/// `testSubmittedTasksRejectedWhenShutdown` (and the older
/// `testSchedule1/2/3_RejectedExecutionException`,
/// `testScheduleAtFixedRate1_RejectedExecutionException`,
/// `testScheduleWithFixedDelay1_RejectedExecutionException`): every API
/// rejects after `shutdown` and after `shutdownNow`; nothing rejected runs.
#[test]
fn test_submitted_tasks_rejected_when_shutdown() {
    for now in [false, true] {
        let clock = ManualClock::new();
        let p = pool(&clock, 2);
        let ran = Arc::new(AtomicUsize::new(0));
        if now {
            assert!(p.shutdown_now().is_empty());
        } else {
            p.shutdown();
        }
        let r = || {
            let r = ran.clone();
            move || {
                r.fetch_add(1, SeqCst);
            }
        };
        assert!(p.schedule(Duration::ZERO, r()).unwrap_err().is_shutdown());
        assert!(p.schedule(ms(1), r()).unwrap_err().is_shutdown());
        assert!(p
            .schedule_at_fixed_rate(ms(1), ms(1), r())
            .unwrap_err()
            .is_shutdown());
        assert!(p
            .schedule_with_fixed_delay(ms(1), ms(1), r())
            .unwrap_err()
            .is_shutdown());
        assert!(p.submit(ms(1), Task::once(r())).unwrap_err().is_shutdown());
        clock.advance(LONG_DELAY);
        assert_eq!(ran.load(SeqCst), 0);
        assert!(p.await_termination(WAIT));
        assert_eq!(p.metrics().pending, 0);
    }
}

/// `testGetActiveCount`: getActiveCount increases but doesn't overestimate,
/// when a thread becomes active.
#[test]
fn test_get_active_count() {
    let clock = ManualClock::new();
    let p = pool(&clock, 2);
    let (started, started_rx) = channel();
    let (release, release_rx) = latch();
    assert_eq!(p.active_count(), 0);
    p.schedule(Duration::ZERO, blocker(&started, &release_rx))
        .unwrap();
    started_rx.recv_timeout(WAIT).unwrap();
    assert_eq!(p.active_count(), 1);
    release.send(()).unwrap();
    clock.advance(Duration::ZERO);
    assert_eq!(p.active_count(), 0);
}

/// `testGetCompletedTaskCount`: getCompletedTaskCount increases, but
/// doesn't overestimate, when tasks complete.
#[test]
fn test_get_completed_task_count() {
    let clock = ManualClock::new();
    let p = pool(&clock, 2);
    let (started, started_rx) = channel();
    let (release, release_rx) = latch();
    assert_eq!(p.completed_task_count(), 0);
    p.schedule(Duration::ZERO, blocker(&started, &release_rx))
        .unwrap();
    started_rx.recv_timeout(WAIT).unwrap();
    assert_eq!(p.completed_task_count(), 0, "running is not completed");
    release.send(()).unwrap();
    clock.advance(Duration::ZERO);
    assert_eq!(p.completed_task_count(), 1);
}

/// `testGetPoolSize`: getPoolSize increases, but doesn't overestimate, when
/// threads become active. (`ZeroCorePoolSize.java`, where a pool size of
/// zero still runs tasks on one thread, is the one deliberate difference:
/// the clone refuses zero with a typed error.)
#[test]
fn test_get_pool_size() {
    let clock = ManualClock::new();
    let p = pool(&clock, 1);
    assert_eq!(p.pool_size(), 0);
    let f = p.schedule(Duration::ZERO, || 1).unwrap();
    assert_eq!(p.pool_size(), 1);
    clock.advance(Duration::ZERO);
    assert_eq!(f.get().unwrap(), 1);
    assert_eq!(p.pool_size(), 1);

    // The JDK quietly runs a core size of zero on one thread; the clone
    // refuses a setting it would have to adjust.
    let zero = ScheduledThreadPool::builder()
        .pool_size(0)
        .clock(clock.clone())
        .build();
    assert!(zero.unwrap_err().is_invalid_pool_size());
}

/// `testIsShutdown`, `testIsTerminated`, `testIsTerminating`: the lifecycle
/// flags, with a task running across the shutdown ("terminating" is
/// shut down and not yet terminated).
#[test]
fn test_is_shutdown_is_terminated_is_terminating() {
    let clock = ManualClock::new();
    let p = pool(&clock, 1);
    let (started, started_rx) = channel();
    let (release, release_rx) = latch();
    assert!(!p.is_shutdown() && !p.is_terminated());
    p.schedule(Duration::ZERO, blocker(&started, &release_rx))
        .unwrap();
    started_rx.recv_timeout(WAIT).unwrap();
    p.shutdown();
    assert!(p.is_shutdown());
    assert!(!p.is_terminated(), "terminating: a task still runs");
    release.send(()).unwrap();
    assert!(p.await_termination(WAIT));
    assert!(p.is_terminated());
}

/// `testGetQueue`: the queue holds the waiting tasks, not the running one.
#[test]
fn test_get_queue() {
    let clock = ManualClock::new();
    let p = pool(&clock, 1);
    let (started, started_rx) = channel();
    let (release, release_rx) = latch();
    let running = p
        .schedule(Duration::ZERO, blocker(&started, &release_rx))
        .unwrap();
    started_rx.recv_timeout(WAIT).unwrap();
    let queued: Vec<_> = (0..3).map(|i| p.schedule(ms(i), || ()).unwrap()).collect();
    assert_eq!(p.queue_len(), 3, "the running task is not in the queue");
    assert!(!running.handle().is_pending());
    assert!(queued.iter().all(|f| f.handle().is_pending()));
    release.send(()).unwrap();
    clock.advance(ms(2));
    assert_eq!(p.queue_len(), 0);
}

/// `testRemove`: remove(task) removes a queued task, but not a running one
/// (with `remove_on_cancel`, `cancel` is the removal).
#[test]
fn test_remove() {
    let clock = ManualClock::new();
    let p = ScheduledThreadPool::builder()
        .pool_size(1)
        .remove_on_cancel(true)
        .clock(clock.clone())
        .build()
        .unwrap();
    let (started, started_rx) = channel();
    let (release, release_rx) = latch();
    let running = p
        .schedule(Duration::ZERO, blocker(&started, &release_rx))
        .unwrap();
    started_rx.recv_timeout(WAIT).unwrap();
    let queued: Vec<_> = (1..=5).map(|i| p.schedule(ms(i), || ()).unwrap()).collect();
    assert_eq!(p.queue_len(), 5);
    assert!(
        !running.handle().cancel(),
        "a running one-shot cannot be removed"
    );
    assert!(queued[3].handle().cancel());
    assert!(!queued[3].handle().cancel(), "removed once");
    assert_eq!(p.queue_len(), 4);
    assert!(queued[0].handle().cancel());
    assert_eq!(p.queue_len(), 3);
    release.send(()).unwrap();
    clock.advance(ms(5));
    assert_eq!(
        [1, 2, 4].map(|i| queued[i].handle().is_done() && !queued[i].handle().is_cancelled()),
        [true; 3]
    );
}

/// `testPurge`: purge eventually removes cancelled tasks from the queue.
#[test]
fn test_purge() {
    let clock = ManualClock::new();
    let p = pool(&clock, 1);
    let tasks: Vec<_> = (0..5)
        .map(|i| p.schedule(LONG_DELAY + ms(i), || ()).unwrap())
        .collect();
    assert_eq!(p.queue_len(), 5);
    assert!(tasks[4].handle().cancel());
    assert!(tasks[3].handle().cancel());
    assert_eq!(
        p.queue_len(),
        5,
        "without remove_on_cancel, cancelled tasks wait for a purge"
    );
    assert_eq!(p.purge(), 2);
    assert_eq!(p.queue_len(), 3);
    assert_eq!(p.purge(), 0);
}

/// `testShutdownNow`: shutdownNow returns a list containing tasks that were
/// not run, and those tasks are drained from the queue (count - poolSize:
/// the running ones are not returned).
#[test]
fn test_shutdown_now() {
    let clock = ManualClock::new();
    let pool_size = 2;
    let count = 5;
    let p = pool(&clock, pool_size);
    let (started, started_rx) = channel();
    let (release, release_rx) = latch();
    let ran = Arc::new(AtomicUsize::new(0));
    for _ in 0..count {
        let (b, r) = (blocker(&started, &release_rx), ran.clone());
        p.schedule(Duration::ZERO, move || {
            r.fetch_add(1, SeqCst);
            b()
        })
        .unwrap();
    }
    for _ in 0..pool_size {
        started_rx.recv_timeout(WAIT).unwrap();
    }
    let queued = p.shutdown_now();
    assert!(p.is_shutdown());
    assert_eq!(p.queue_len(), 0);
    assert_eq!(queued.len(), count - pool_size);
    for t in &queued {
        assert!(!t.is_done() && !t.is_cancelled());
    }
    for _ in 0..pool_size {
        release.send(()).unwrap();
    }
    assert!(p.await_termination(WAIT));
    assert!(p.is_terminated());
    assert_eq!(
        ran.load(SeqCst),
        pool_size,
        "tasks returned by shutdown_now never run"
    );
}

/// `testShutdownNow_delayedTasks`: shutdownNow returns a list containing
/// the 9 queued delayed and periodic tasks, not done and not cancelled.
#[test]
fn test_shutdown_now_delayed_tasks() {
    let clock = ManualClock::new();
    let p = pool(&clock, 1);
    let mut tasks: Vec<TaskHandle> = Vec::new();
    for _ in 0..3 {
        tasks.push(p.schedule(LONG_DELAY, || ()).unwrap().into_handle());
        tasks.push(
            p.schedule_at_fixed_rate(LONG_DELAY, LONG_DELAY, || ())
                .unwrap(),
        );
        tasks.push(
            p.schedule_with_fixed_delay(LONG_DELAY, LONG_DELAY, || ())
                .unwrap(),
        );
    }
    assert_eq!(p.queue_len(), 9);
    let queued = p.shutdown_now();
    assert!(p.is_shutdown());
    assert_eq!(p.queue_len(), 0);
    assert_eq!(queued.len(), tasks.len());
    for t in &tasks {
        assert!(!t.is_done());
        assert!(!t.is_cancelled());
        assert!(t.wait_timeout(WAIT).unwrap_err().is_abandoned());
    }
    assert!(p.await_termination(WAIT));
    assert!(p.is_terminated());
}

/// `testShutdown_cancellation`, the whole policy matrix: every combination
/// of the shutdown policy for one-shots (the JDK's
/// `executeExistingDelayedTasksAfterShutdown`) and for periodic tasks
/// (`continueExistingPeriodicTasksAfterShutdown`), `remove_on_cancel`,
/// an initial delay of 0 or 1 ms, 1 or 2 rounds before a periodic task
/// blocks, and (with periodic tasks kept) whether they are left to continue
/// or cancelled by hand.
///
/// The pool is wedged by a first wave of four blocking tasks; a second
/// wave waits in the queue; then `shutdown` decides which of the second
/// wave survive. Periodic tasks that continue end by panicking on their
/// next run, "in a separate execution and in a detectable way". Real time:
/// the test is about policies, and its delays are at most 1 ms.
#[test]
fn test_shutdown_cancellation() {
    let mut combinations = 0;
    for delayed_policy in [true, false] {
        for periodic_policy in [false, true] {
            for remove_policy in [false, true] {
                for delay in [0u64, 1] {
                    for rounds in [1usize, 2] {
                        let continues: &[bool] = if periodic_policy {
                            &[false, true]
                        } else {
                            &[false]
                        };
                        for &periodic_tasks_continue in continues {
                            shutdown_cancellation(
                                delayed_policy,
                                periodic_policy,
                                remove_policy,
                                delay,
                                rounds,
                                periodic_tasks_continue,
                            );
                            combinations += 1;
                        }
                    }
                }
            }
        }
    }
    assert_eq!(combinations, 48);
}

fn shutdown_cancellation(
    delayed_policy: bool,
    periodic_policy: bool,
    remove_policy: bool,
    delay: u64,
    rounds: usize,
    periodic_tasks_continue: bool,
) {
    let case = format!(
        "delayed={delayed_policy} periodic={periodic_policy} remove={remove_policy} delay={delay} rounds={rounds} continue={periodic_tasks_continue}"
    );
    let pool_size = 4;
    let p = ScheduledThreadPool::builder()
        .pool_size(pool_size)
        .shutdown_policy(policy(delayed_policy, periodic_policy))
        .remove_on_cancel(remove_policy)
        .build()
        .unwrap();
    assert_eq!(p.remove_on_cancel(), remove_policy);
    let ran = Arc::new(AtomicUsize::new(0));
    let (blocked_tx, blocked_rx) = channel::<()>();
    let unblock = Arc::new((Mutex::new(false), std::sync::Condvar::new()));

    let task = {
        let (ran, blocked_tx, unblock) = (ran.clone(), blocked_tx.clone(), unblock.clone());
        move || {
            let (ran, blocked_tx, unblock) = (ran.clone(), blocked_tx.clone(), unblock.clone());
            move || {
                ran.fetch_add(1, SeqCst);
                let _ = blocked_tx.send(());
                let (lock, cv) = &*unblock;
                let mut open = lock.lock().unwrap();
                while !*open {
                    open = cv.wait(open).unwrap();
                }
            }
        }
    };
    // `PeriodicTask`: runs `task` on its `rounds`-th run, throws on the next.
    let periodic_task = |rounds: usize| {
        let run = task();
        let mut left = rounds as isize;
        move || {
            left -= 1;
            if left == 0 {
                run();
            }
            if left == -1 {
                panic!("periodic task ends");
            }
        }
    };

    let d = ms(delay);
    let period = ms(1);
    let mut immediates = vec![p.schedule(Duration::ZERO, task()).unwrap().into_handle()];
    let mut delayeds = vec![p.schedule(d, task()).unwrap().into_handle()];
    let mut periodics = vec![
        p.schedule_at_fixed_rate(d, period, periodic_task(rounds))
            .unwrap(),
        p.schedule_with_fixed_delay(d, period, periodic_task(rounds))
            .unwrap(),
    ];
    for _ in 0..pool_size {
        blocked_rx
            .recv_timeout(WAIT)
            .unwrap_or_else(|_| panic!("{case}: the pool never wedged"));
    }
    assert_eq!(ran.load(SeqCst), pool_size, "{case}");
    assert_eq!(p.active_count(), pool_size, "{case}");
    assert_eq!(p.queue_len(), 0, "{case}");

    // The second wave.
    immediates.push(p.schedule(Duration::ZERO, task()).unwrap().into_handle());
    delayeds.push(
        p.schedule(if delayed_policy { d } else { LONG_DELAY }, task())
            .unwrap()
            .into_handle(),
    );
    periodics.push(
        p.schedule_at_fixed_rate(d, period, periodic_task(rounds))
            .unwrap(),
    );
    periodics.push(
        p.schedule_with_fixed_delay(d, period, periodic_task(rounds))
            .unwrap(),
    );
    assert_eq!(p.queue_len(), pool_size, "{case}");
    assert_eq!(ran.load(SeqCst), pool_size, "{case}");
    assert!(
        immediates.iter().all(|f| f.remaining() == Duration::ZERO),
        "{case}"
    );
    assert!(
        immediates
            .iter()
            .chain(&delayeds)
            .chain(&periodics)
            .all(|f| !f.is_done()),
        "{case}"
    );

    p.shutdown();
    assert!(p.is_shutdown(), "{case}");
    assert!(!p.is_terminated(), "{case}: terminating");
    assert!(p
        .schedule(Duration::ZERO, task())
        .unwrap_err()
        .is_shutdown());
    assert!(p.schedule(ms(1000), task()).unwrap_err().is_shutdown());
    assert!(p
        .schedule_at_fixed_rate(ms(1000), ms(1000), periodic_task(1))
        .unwrap_err()
        .is_shutdown());
    assert!(p
        .schedule_with_fixed_delay(ms(1000), ms(1000), periodic_task(2))
        .unwrap_err()
        .is_shutdown());

    // What is still queued: the due immediate always; the delayed one and
    // the periodic ones as the policies say.
    assert!(immediates[1].is_pending(), "{case}");
    assert_eq!(delayeds[1].is_pending(), delayed_policy, "{case}");
    assert!(
        periodics[2..]
            .iter()
            .all(|f| f.is_pending() == periodic_policy),
        "{case}"
    );
    assert!(immediates.iter().all(|f| !f.is_done()), "{case}");
    assert!(!delayeds[0].is_done(), "{case}");
    if delayed_policy {
        assert!(!delayeds[1].is_done(), "{case}");
    } else {
        assert!(delayeds[1].is_cancelled(), "{case}");
    }
    if periodic_policy {
        for f in &periodics {
            assert!(!f.is_done(), "{case}");
            if !periodic_tasks_continue {
                assert!(f.cancel(), "{case}");
                assert!(f.is_cancelled(), "{case}");
            }
        }
    } else {
        assert!(
            periodics[..2].iter().all(|f| !f.is_done()),
            "{case}: running, cancelled only at re-queue"
        );
        assert!(periodics[2..].iter().all(|f| f.is_cancelled()), "{case}");
    }

    {
        let (lock, cv) = &*unblock;
        *lock.lock().unwrap() = true;
        cv.notify_all();
    }
    assert!(p.await_termination(WAIT), "{case}");
    assert!(p.is_terminated(), "{case}");
    assert_eq!(p.queue_len(), 0, "{case}");
    assert!(
        immediates
            .iter()
            .chain(&delayeds)
            .chain(&periodics)
            .all(|f| f.is_done()),
        "{case}"
    );
    for f in &immediates {
        f.wait().unwrap();
    }
    delayeds[0].wait().unwrap();
    if delayed_policy {
        delayeds[1].wait().unwrap();
    } else {
        assert!(delayeds[1].is_cancelled(), "{case}");
    }
    if periodic_tasks_continue {
        for f in &periodics {
            let e = f.wait().unwrap_err();
            assert!(e.is_panic(), "{case}: {e}");
            assert_eq!(e.panic_message(), Some("periodic task ends"), "{case}");
        }
    } else {
        assert!(periodics.iter().all(|f| f.is_cancelled()), "{case}");
    }
    let expected =
        pool_size + 1 + usize::from(delayed_policy) + if periodic_tasks_continue { 2 } else { 0 };
    assert_eq!(ran.load(SeqCst), expected, "{case}");
}

/// `testScheduleWithFixedDelay_overflow` (JDK-8051859): a fixed delay of
/// `Long.MAX_VALUE` seconds must not block a later submission.
#[test]
fn test_schedule_with_fixed_delay_overflow() {
    let clock = ManualClock::new();
    let p = pool(&clock, 1);
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let huge = Duration::from_secs(i64::MAX as u64);
    let periodic = p
        .schedule_with_fixed_delay(Duration::ZERO, huge, move || {
            r.fetch_add(1, SeqCst);
        })
        .unwrap();
    clock.advance(Duration::ZERO);
    assert_eq!(runs.load(SeqCst), 1);
    let later = p.schedule(Duration::ZERO, || "ran").unwrap();
    clock.advance(Duration::ZERO);
    assert_eq!(later.get().unwrap(), "ran");
    assert!(periodic.cancel());
}

/// The jtreg `DelayOverflow.java` (bug 6725789): every way of scheduling a
/// task at "the end of time" while another task is already overdue must
/// leave the overdue task running. Java's end of time is `Long.MAX_VALUE`
/// nanoseconds; `Long.MAX_VALUE` milliseconds or days, which Java clamps,
/// are a typed error here (checked too). The pool's one worker is kept
/// busy while both are queued, as in the original; the "nano time tick"
/// that makes the first task overdue is a 1 ns advance of virtual time.
#[test]
fn jtreg_delay_overflow() {
    let end_of_time = Duration::from_nanos(i64::MAX as u64);
    for now_how in 0..4 {
        for then_how in 0..4 {
            let clock = ManualClock::new();
            let p = ScheduledThreadPool::builder()
                .pool_size(1)
                .shutdown_policy(policy(false, false))
                .clock(clock.clone())
                .build()
                .unwrap();
            let (busy, busy_rx) = channel();
            let (proceed, proceed_rx) = latch();
            p.schedule(Duration::ZERO, blocker(&busy, &proceed_rx))
                .unwrap();
            busy_rx.recv_timeout(WAIT).unwrap();
            let (run, run_rx) = channel::<()>();
            schedule_now(&p, run.clone(), now_how);
            // Make the first task overdue: time moves while the worker is
            // busy, so the advance (which waits for the pool) runs apart.
            let c = clock.clone();
            let tick = std::thread::spawn(move || c.advance(Duration::from_nanos(1)));
            while clock.elapsed() == Duration::ZERO {
                std::thread::yield_now();
            }
            let never = Arc::new(AtomicUsize::new(0));
            schedule_at_the_end_of_time(&p, &never, end_of_time, then_how);
            proceed.send(()).unwrap();
            run_rx
                .recv_timeout(WAIT)
                .unwrap_or_else(|_| panic!("{now_how}/{then_how}: the due task never ran"));
            tick.join().unwrap();
            clock.advance(Duration::from_secs(3600));
            assert_eq!(never.load(SeqCst), 0);
            p.shutdown();
            assert!(
                p.await_termination(WAIT),
                "{now_how}/{then_how}: the end-of-time task is dropped at shutdown"
            );
        }

        // A periodic task with the largest fixed delay schedules the due
        // task from inside its own run.
        let clock = ManualClock::new();
        let p = Arc::new(pool(&clock, 1));
        let (run, run_rx) = channel::<()>();
        let p2 = p.clone();
        let h = p
            .schedule_with_fixed_delay(Duration::ZERO, end_of_time, move || {
                schedule_now(&p2, run.clone(), now_how)
            })
            .unwrap();
        clock.advance(Duration::ZERO);
        run_rx.recv_timeout(WAIT).unwrap();
        assert!(h.cancel());
        // The task held the pool: shutting down drops its cancelled entry.
        p.shutdown();
        assert!(p.await_termination(WAIT));
    }
    // What Java clamps, we reject.
    let clock = ManualClock::new();
    let p = pool(&clock, 1);
    assert!(p
        .schedule(Duration::from_millis(i64::MAX as u64), || ())
        .unwrap_err()
        .is_delay_overflow());
    assert!(p
        .schedule(Duration::from_secs(i64::MAX as u64), || ())
        .unwrap_err()
        .is_delay_overflow());
}

fn schedule_now(p: &ScheduledThreadPool, run: Sender<()>, how: usize) {
    let notify = move || {
        let _ = run.send(());
    };
    match how {
        0 => drop(p.schedule(Duration::ZERO, notify).unwrap()),
        1 => drop(
            p.submit(
                Duration::ZERO,
                Task::once(move || {
                    notify();
                    Some(())
                }),
            )
            .unwrap(),
        ),
        2 => drop(
            p.schedule_with_fixed_delay(Duration::ZERO, Duration::from_nanos(1000), notify)
                .unwrap(),
        ),
        _ => drop(
            p.schedule_at_fixed_rate(Duration::ZERO, ms(1000), notify)
                .unwrap(),
        ),
    }
}

fn schedule_at_the_end_of_time(
    p: &ScheduledThreadPool,
    never: &Arc<AtomicUsize>,
    end: Duration,
    how: usize,
) {
    let n = never.clone();
    let never_runs = move || {
        n.fetch_add(1, SeqCst);
    };
    match how {
        0 => drop(p.schedule(end, never_runs).unwrap()),
        1 => drop(
            p.submit(
                end,
                Task::once(move || {
                    never_runs();
                    Some(())
                }),
            )
            .unwrap(),
        ),
        2 => drop(
            p.schedule_with_fixed_delay(end, Duration::from_nanos(1000), never_runs)
                .unwrap(),
        ),
        _ => drop(p.schedule_at_fixed_rate(end, ms(1000), never_runs).unwrap()),
    }
}

/// The jtreg `BasicCancelTest.java`: scheduling and cancelling long timeouts
/// in a loop must not grow the queue (the JDK needs `removeOnCancel` for
/// that; here the lazy policy purges by itself, and `remove_on_cancel`
/// keeps the queue empty).
#[test]
fn jtreg_basic_cancel() {
    for remove_on_cancel in [false, true] {
        let clock = ManualClock::new();
        let p = ScheduledThreadPool::builder()
            .pool_size(1)
            .remove_on_cancel(remove_on_cancel)
            .clock(clock.clone())
            .build()
            .unwrap();
        let mut most = 0;
        for _ in 0..100_000 {
            let f = p.schedule(Duration::from_secs(3600), || ()).unwrap();
            assert!(f.handle().cancel());
            most = most.max(p.queue_len());
        }
        if remove_on_cancel {
            assert_eq!(most, 0);
        } else {
            // An idle worker purges, so the bound holds once it has run.
            // How far the queue grows meanwhile depends on when the OS
            // schedules that worker, so only the settled state is asserted.
            let _ = most;
            clock.advance(Duration::ZERO);
            assert!(
                p.queue_len() <= 2 * AUTO_PURGE_MIN,
                "{} left after the purge",
                p.queue_len()
            );
        }
        assert_eq!(p.metrics().pending, 0);
        assert_eq!(p.metrics().cancelled, 100_000);
    }
}

/// The JDK's two shutdown-policy booleans as a [`ShutdownPolicy`].
fn policy(run_delayed: bool, continue_periodic: bool) -> schedulers::ShutdownPolicy {
    use schedulers::OnShutdown::{Cancel, Run};
    schedulers::ShutdownPolicy::default()
        .one_shot(if run_delayed { Run } else { Cancel })
        .periodic(if continue_periodic { Run } else { Cancel })
}
