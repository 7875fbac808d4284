//! The runner's instruments: the clock, waiting, CPU time and resident
//! memory. The only module of the workbench that reads real time.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use nix::sys::resource::{getrusage, UsageWho};
use nix::time::{clock_gettime, ClockId};

pub use crate::record::Floors;

/// Now, from the monotonic clock.
#[allow(clippy::disallowed_methods)] // the workbench measures real time
#[inline]
pub fn now() -> Instant {
    Instant::now()
}

/// Sleeps the calling thread (the workload driver, never a subject).
#[allow(clippy::disallowed_methods)] // the driver waits for the next event in real time
pub fn sleep(d: Duration) {
    std::thread::sleep(d);
}

/// Waits until `t` with one sleep (the thread's timer slack makes it late
/// by some 50-100 µs): no spinning, so the application's thread costs no
/// CPU while it waits and the process's CPU time is the subject's.
pub fn wait_until(t: Instant) {
    let n = now();
    if t > n {
        sleep(t - n);
    }
}

/// The grid the application's waits for its next event are rounded up to:
/// it wakes at most once a millisecond, as an application on tokio does
/// (whose timers have a 1 ms resolution, so that the `delay-queue` and
/// `tokio-*` subjects' applications already woke so). A wake-up costs a
/// few microseconds of CPU; waking for every event of a paced workload
/// (every 50-100 µs, the timer slack) cost the other subjects' processes
/// up to 25 ms a run that tokio's did not pay, which counted as theirs.
pub const PACE: Duration = Duration::from_millis(1);

/// `t` rounded up to the [`PACE`] grid counted from `origin`.
fn paced(origin: Instant, t: Instant) -> Instant {
    let pace = PACE.as_nanos();
    let since = t.saturating_duration_since(origin).as_nanos();
    let at = since.div_ceil(pace) * pace;
    origin + Duration::from_nanos(u64::try_from(at).unwrap_or(u64::MAX))
}

/// When an application waiting for its next event at `t` wakes: `t`
/// rounded up to the process's [`PACE`] grid.
pub fn event_wake(t: Instant) -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    paced(*ORIGIN.get_or_init(now), t)
}

/// Waits for an application's next event at `t`: at once if it is due,
/// else until [`event_wake`].
pub fn wait_for_event(t: Instant) {
    if t > now() {
        wait_until(event_wake(t));
    }
}

/// Tells the C allocator to keep the memory the subjects free (no trimming
/// of the heap's top, no `mmap` for blocks under 32 MiB), so that a sweep
/// cycle reuses the pages an earlier one faulted in, as a long-running
/// process does. Without it glibc hands a freed 1e5-timer structure back to
/// the kernel and the next cycle's schedule loop pays a page fault every
/// 4 KiB: 20 ns a timer for `heap`, 200 for `tokio-sleep-2w`, present in
/// some repeats and absent in others. Returns false where it cannot (not
/// glibc, or a setting refused): the costs then include those faults.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn keep_freed_memory() -> bool {
    // glibc's largest accepted mmap threshold (half its 64 MiB arena heap).
    const MMAP_THRESHOLD: libc::c_int = 32 << 20;
    // SAFETY: `mallopt` only sets allocator parameters under the allocator's
    // own lock; it takes no pointers and any value is checked by glibc.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
            && libc::mallopt(libc::M_TRIM_THRESHOLD, libc::c_int::MAX) == 1
    }
}

/// See the glibc version: elsewhere the allocator keeps its defaults.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn keep_freed_memory() -> bool {
    false
}

/// The 1-, 5- and 15-minute load averages (zeros where unavailable).
pub fn load_average() -> [f64; 3] {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut it = text.split_whitespace().map(|x| x.parse().unwrap_or(0.0));
    [0; 3].map(|_| it.next().unwrap_or(0.0))
}

/// A cache line's round trip between two cores, ns: two threads hand a
/// counter back and forth, 20,000 times or for 20 ms, whichever comes
/// first (a core another process holds would make each trip wait for a
/// time slice). `None` on one core. A VM's host may move its CPUs closer
/// or farther apart between runs (here 85-130 ns one minute, 350 the
/// next), and everything that hands work to another thread (each schedule
/// of ours feeds the driver's lane) costs more while they are far.
pub fn handoff_ns() -> Option<f64> {
    use std::sync::atomic::{AtomicU64, Ordering::Acquire, Ordering::Release};
    const TRIPS: u64 = 20_000;
    const BUDGET: Duration = Duration::from_millis(20);
    const STOP: u64 = u64::MAX;
    #[repr(align(128))]
    struct Line(AtomicU64);
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return None;
    }
    let line = Line(AtomicU64::new(0));
    let trip = |i: u64| {
        line.0.store(2 * i + 1, Release);
        while line.0.load(Acquire) != 2 * i + 2 {
            std::hint::spin_loop();
        }
    };
    std::thread::scope(|s| {
        // Answers every odd value with the next one, until told to stop.
        s.spawn(|| loop {
            match line.0.load(Acquire) {
                STOP => break,
                v if v % 2 == 1 => line.0.store(v + 1, Release),
                _ => std::hint::spin_loop(),
            }
        });
        trip(0); // the other thread is running
        let start = now();
        let mut trips = 0;
        while trips < TRIPS && (trips % 256 != 0 || start.elapsed() < BUDGET) {
            trips += 1;
            trip(trips);
        }
        let elapsed = start.elapsed();
        line.0.store(STOP, Release);
        Some(elapsed.as_nanos() as f64 / trips as f64)
    })
}

/// True if round trips of `a` and `b` ns differ by more than ×2: the
/// host moved the CPUs (or a core was busy) between them.
pub fn handoff_moved(a: f64, b: f64) -> bool {
    a.max(b) > 2.0 * a.min(b)
}

/// Times the cross-core round trip around `run` and says so on stderr:
/// before, after, and a warning if they differ by more than ×2 (then the
/// figures `run` printed may come from two placements of the CPUs; see
/// [`handoff_ns`]). For benches, whose figures follow it as the
/// workbench's do.
pub fn with_handoff_noted<R>(what: &str, run: impl FnOnce() -> R) -> R {
    let before = handoff_ns();
    let out = run();
    if let (Some(a), Some(b)) = (before, handoff_ns()) {
        let moved = if handoff_moved(a, b) {
            ": it moved, so the figures between may come from both; run again"
        } else {
            ""
        };
        eprintln!("{what}: cross-core round trip {a:.0} ns before, {b:.0} ns after{moved}");
    }
    out
}

/// The memory the floor of a load from memory walks, MiB: more than the
/// caches hold.
pub const MEMORY_FLOOR_MIB: usize = 64;

/// How many wake-ups the floor of a timed wait's wake-up counts (one
/// [`PACE`] apart: a tenth of a second).
pub const WAKE_FLOOR_WAKES: u32 = 100;

/// What this machine's hardware takes at the least for the steps every
/// per-call figure is made of (see [`Floors`]): each the fastest of a few
/// batches, about 0.3 s in all (most of it on the 64 MiB, the cancels and
/// the wake-ups).
pub fn floors() -> Floors {
    use std::hint::black_box;
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    let counter = AtomicU64::new(0);
    Floors {
        clock_read: fastest(100_000, || {
            black_box(now());
        }),
        ordered_counter: ordered_counter_read().map_or(0.0, |read| fastest(100_000, read)),
        locked_rmw: fastest(100_000, || {
            black_box(&counter).fetch_add(1, Relaxed);
        }),
        memory: dependent_load_ns(MEMORY_FLOOR_MIB << 20),
        cancel_stream: cancel_stream_ns(CANCEL_STREAM_TIMERS),
        timed_wake: timed_wake_ns(WAKE_FLOOR_WAKES),
    }
}

/// CPU ns a thread spends per wake-up when it sleeps on a condition
/// variable until each of `wakes` deadlines one [`PACE`] apart, woken by
/// its timeout (as a driver thread sleeps until its next deadline): the
/// kernel's timer, the switches in and out and, in a VM, the hypervisor's
/// share. The least a driver's wake-up costs, however little it does.
fn timed_wake_ns(wakes: u32) -> f64 {
    std::thread::spawn(move || {
        let (lock, wait) = (std::sync::Mutex::new(()), std::sync::Condvar::new());
        let mut guard = lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (start, cpu) = (now(), cpu_thread());
        for k in 1..=wakes {
            let at = start + PACE * k;
            while let Some(left) = at.checked_duration_since(now()).filter(|d| !d.is_zero()) {
                guard = match wait.wait_timeout(guard, left) {
                    Ok((guard, _)) => guard,
                    Err(poisoned) => poisoned.into_inner().0,
                };
            }
        }
        cpu_thread().saturating_sub(cpu).as_nanos() as f64 / f64::from(wakes.max(1))
    })
    .join()
    .unwrap_or(0.0)
}

/// How many timers the floor of a stream of random-order cancels cancels
/// (see [`Floors::cancel_stream`]): as many as `ack-batch` holds.
pub const CANCEL_STREAM_TIMERS: usize = 1_000_000;

/// ns per cancel of a loop of random-order cancels stripped to what every
/// cancel that says whether it stopped its timer does: read the caller's
/// 16-byte handle, at random over `timers` of them, and CAS the 4-byte
/// state word it names, at random over `timers` of those. Unlike
/// [`dependent_load_ns`], no step's addresses wait for the step before, so
/// the cache misses of several steps overlap, as in a caller's loop: the
/// floor of `cancel_batch` at that size. The fastest of 3 passes over all
/// the timers, each after a read of 44 MiB that leaves neither array in
/// the last-level cache.
fn cancel_stream_ns(timers: usize) -> f64 {
    use std::sync::atomic::{AtomicU32, Ordering::AcqRel, Ordering::Relaxed};
    const HANDLE_WORDS: usize = 4;
    const FLUSH_WORDS: usize = 11 << 20;
    let n = timers;
    // One block: the handles, the state words, the cancel order and the
    // memory read to empty the cache; more than 32 MiB, so the allocator
    // maps it and gives it back whole (see `random_cycle`).
    let block: Vec<AtomicU32> = (0..n * (HANDLE_WORDS + 2) + FLUSH_WORDS)
        .map(|_| AtomicU32::new(0))
        .collect();
    let (handles, rest) = block.split_at(n * HANDLE_WORDS);
    let (words, rest) = rest.split_at(n);
    let (order, flush) = rest.split_at(n);
    for i in 0..n {
        handles[i * HANDLE_WORDS].store(i as u32, Relaxed);
        order[i].store(i as u32, Relaxed);
    }
    crate::random::Rng::new(0x0ca1_ce15, 0).shuffle(n, |i, j| {
        let (a, b) = (order[i].load(Relaxed), order[j].load(Relaxed));
        order[i].store(b, Relaxed);
        order[j].store(a, Relaxed);
    });
    (0..3)
        .map(|_| {
            for w in words {
                w.store(1, Relaxed);
            }
            std::hint::black_box(flush.iter().map(|w| w.load(Relaxed)).sum::<u32>());
            let start = now();
            let mut stopped = 0u32;
            for at in order {
                let handle = at.load(Relaxed) as usize * HANDLE_WORDS;
                let key = handles[handle].load(Relaxed) as usize;
                stopped += u32::from(words[key].compare_exchange(1, 2, AcqRel, Relaxed).is_ok());
            }
            let ns = start.elapsed().as_nanos() as f64 / n as f64;
            std::hint::black_box(stopped);
            ns
        })
        .fold(f64::MAX, f64::min)
}

/// The fastest of 5 batches of `n` calls of `step`, ns per call.
fn fastest(n: u32, mut step: impl FnMut()) -> f64 {
    (0..5)
        .map(|_| {
            let start = now();
            for _ in 0..n {
                step();
            }
            start.elapsed().as_nanos() as f64 / f64::from(n)
        })
        .fold(f64::MAX, f64::min)
}

/// A read of the CPU's counter that waits for the instructions before it
/// (`lfence; rdtsc`), where there is one.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
fn ordered_counter_read() -> Option<fn()> {
    Some(|| {
        // SAFETY: both instructions exist on every x86-64 CPU (SSE2 is part
        // of the architecture) and touch no memory.
        let count = unsafe {
            std::arch::x86_64::_mm_lfence();
            std::arch::x86_64::_rdtsc()
        };
        std::hint::black_box(count);
    })
}

#[cfg(not(target_arch = "x86_64"))]
fn ordered_counter_read() -> Option<fn()> {
    None
}

/// ns per load over `bytes` of memory, each load's address read by the
/// load before, in one cycle through every 64-byte line in random order
/// (so the hardware cannot guess the next line): the fastest of 3 runs of
/// 100,000 loads, after 100,000 that leave the caches as a long run of
/// such loads does (right after the cycle is written, the last-level cache
/// still holds a good part of it, and the figure comes out at half).
fn dependent_load_ns(bytes: usize) -> f64 {
    let memory = random_cycle(bytes / 64, LINE_WORDS);
    let mut at = 0u32;
    let mut chase = |n: u32| {
        for _ in 0..n {
            at = memory[at as usize * LINE_WORDS];
        }
        std::hint::black_box(at);
    };
    chase(100_000);
    (0..3)
        .map(|_| {
            let start = now();
            chase(100_000);
            start.elapsed().as_nanos() as f64 / 100_000.0
        })
        .fold(f64::MAX, f64::min)
}

/// `u32` words in a 64-byte line.
const LINE_WORDS: usize = 64 / std::mem::size_of::<u32>();

/// `lines` lines of `stride` words (at least 2), each line's first word
/// naming the next line of one cycle through them all, in random order.
/// The order is shuffled in the lines' second words, so nothing but the
/// returned memory is allocated: a large block, which the allocator maps
/// and gives back whole, never heap pages a subject's timers could reuse
/// (see [`keep_freed_memory`]).
fn random_cycle(lines: usize, stride: usize) -> Vec<u32> {
    assert!(
        stride >= 2,
        "a line holds its link and its place in the order"
    );
    let mut memory = vec![0u32; lines * stride];
    for i in 0..lines {
        memory[i * stride + 1] = i as u32;
    }
    crate::random::Rng::new(0x00f1_00f5, 0).shuffle(lines, |i, j| {
        memory.swap(i * stride + 1, j * stride + 1);
    });
    for i in 0..lines {
        let (line, next) = (memory[i * stride + 1], memory[(i + 1) % lines * stride + 1]);
        memory[line as usize * stride] = next;
    }
    memory
}

/// CPU time (user + system) of the whole process.
pub fn cpu_process() -> Duration {
    cpu(UsageWho::RUSAGE_SELF)
}

/// CPU time (user + system) of the calling thread, to the nanosecond
/// (`CLOCK_THREAD_CPUTIME_ID`; zero where unavailable).
pub fn cpu_thread() -> Duration {
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).map_or(Duration::ZERO, |t| {
        Duration::new(
            t.tv_sec().max(0) as u64,
            t.tv_nsec().clamp(0, 999_999_999) as u32,
        )
    })
}

fn cpu(who: UsageWho) -> Duration {
    match getrusage(who) {
        Ok(u) => {
            let (a, b) = (u.user_time(), u.system_time());
            let us =
                |t: nix::sys::time::TimeVal| t.tv_sec() as u64 * 1_000_000 + t.tv_usec() as u64;
            Duration::from_micros(us(a) + us(b))
        }
        Err(_) => Duration::ZERO,
    }
}

/// Anonymous resident memory, bytes, from `/proc/self/statm` (resident
/// minus shared pages; 0 where unavailable): the heap and stacks, without
/// the file-backed pages of the binary's code, which the first run of a
/// code path faults in and which are no cost per timer.
pub fn rss_bytes() -> u64 {
    let text = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: Vec<u64> = text
        .split_whitespace()
        .map(|p| p.parse().unwrap_or(0))
        .collect();
    match pages[..] {
        [_, resident, shared, ..] => resident.saturating_sub(shared) * 4096,
        _ => 0,
    }
}

/// The cost of the timing loop the timeline wraps around every operation
/// (two clock reads and the bookkeeping), in ns per operation: the mean of
/// the fastest of several batches of empty operations.
pub fn timing_overhead() -> f64 {
    let mut best = f64::MAX;
    for _ in 0..7 {
        let n = 100_000u32;
        let mut sum = Duration::ZERO;
        for i in 0..n {
            let t0 = now();
            std::hint::black_box(i);
            sum += now() - t0;
        }
        best = best.min(sum.as_nanos() as f64 / f64::from(n));
    }
    best
}

/// Nanoseconds between two instants (0 if `b` is earlier).
pub fn ns(a: Instant, b: Instant) -> u64 {
    u64::try_from(b.saturating_duration_since(a).as_nanos()).unwrap_or(u64::MAX)
}

/// Context switches (voluntary and not) of every thread of this process but
/// the calling one, from `/proc/self/task/*/status`: how often the subject's
/// own threads woke up. 0 where `/proc` is unavailable.
pub fn wakeups_of_other_threads() -> u64 {
    let me = this_thread_id();
    wakeups_of_threads(|tid| Some(tid) != me.as_deref())
}

/// The kernel's id of the calling thread (its name in `/proc/self/task`).
fn this_thread_id() -> Option<String> {
    std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| Some(p.file_name()?.to_str()?.to_owned()))
}

/// Context switches of the threads of this process whose id `keep` accepts.
fn wakeups_of_threads(keep: impl Fn(&str) -> bool) -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter(|t| t.file_name().to_str().is_some_and(&keep))
        .filter_map(|t| std::fs::read_to_string(t.path().join("status")).ok())
        .map(|status| {
            status
                .lines()
                .filter(|l| l.contains("ctxt_switches:"))
                .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                .sum::<u64>()
        })
        .sum()
}

#[cfg(test)]
mod test {
    use super::*;

    /// Event times round up to the next millisecond of the grid; one on
    /// the grid stays.
    #[test]
    fn paced_rounds_up_to_the_grid() {
        let origin = now();
        let ms = Duration::from_millis;
        let at = |d| paced(origin, origin + d);
        assert_eq!(at(Duration::ZERO), origin);
        assert_eq!(at(Duration::from_nanos(1)), origin + ms(1));
        assert_eq!(at(ms(3)), origin + ms(3));
        assert_eq!(at(ms(3) + Duration::from_micros(999)), origin + ms(4));
        assert_eq!(
            paced(origin + ms(5), origin),
            origin + ms(5),
            "before the origin"
        );
    }

    /// The wake-up count sees a thread of the process that sleeps and
    /// wakes: checks that can fail, for
    /// a figure that is often zero. (The process-wide sum is not compared
    /// before and after: other tests' threads come and go meanwhile.)
    #[test]
    fn wakeups_count_another_thread_waking() {
        let (slept, slept_rx) = std::sync::mpsc::channel::<String>();
        let (stop, stop_rx) = std::sync::mpsc::channel::<()>();
        let sleeper = std::thread::spawn(move || {
            let tid = this_thread_id().expect("/proc/thread-self");
            let before = wakeups_of_threads(|t| t == tid);
            for _ in 0..50 {
                sleep(Duration::from_millis(1));
            }
            slept.send(tid).unwrap();
            // Stay alive, so its counts are still there to read.
            stop_rx.recv().unwrap();
            before
        });
        let tid = slept_rx.recv().unwrap();
        let after = wakeups_of_threads(|t| t == tid);
        let seen_by_others = wakeups_of_other_threads() >= after;
        stop.send(()).unwrap();
        let before = sleeper.join().unwrap();
        assert!(
            after >= before + 50,
            "50 sleeps and wake-ups not seen: {before} then {after}"
        );
        assert!(seen_by_others, "the sleeper is one of the other threads");
    }

    /// Memory freed and allocated again costs no page faults once the
    /// allocator keeps it: the second fill of a 16 MiB block (bigger than
    /// glibc's default `mmap` threshold, so without the setting it goes
    /// back to the kernel when freed) faults on no more than a few pages.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn freed_memory_is_kept_for_the_next_allocation() {
        let faults = || getrusage(UsageWho::RUSAGE_THREAD).map_or(0, |u| u.minor_page_faults());
        let fill = || {
            let mut block = vec![1u8; 16 << 20];
            block[12345] = 2;
            std::hint::black_box(&block);
        };
        assert!(keep_freed_memory(), "mallopt refused the settings");
        fill();
        let before = faults();
        fill();
        let after = faults();
        assert!(
            after - before < 64,
            "the second 16 MiB fill faulted on {} pages",
            after - before
        );
    }

    #[test]
    fn the_memory_floor_walks_one_cycle_through_every_line() {
        let (lines, stride) = (1000, 3);
        let memory = random_cycle(lines, stride);
        let mut seen = vec![false; lines];
        let mut at = 0usize;
        for _ in 0..lines {
            assert!(!seen[at], "line {at} came round before the cycle closed");
            seen[at] = true;
            at = memory[at * stride] as usize;
        }
        assert_eq!(at, 0, "the cycle closes after every line");
        assert!(seen.iter().all(|&s| s));
        let in_order = (0..lines)
            .filter(|&l| memory[l * stride] as usize == l + 1)
            .count();
        assert!(
            in_order < lines / 10,
            "not in address order ({in_order} lines are)"
        );
    }

    #[test]
    fn the_floors_are_measured() {
        let f = floors();
        for (what, ns) in [
            ("clock read", f.clock_read),
            ("locked read-modify-write", f.locked_rmw),
            ("memory", f.memory),
            ("cancel stream", f.cancel_stream),
            ("timed wake-up", f.timed_wake),
        ] {
            assert!(ns.is_finite() && ns > 0.0, "{what}: {ns}");
        }
        // A wake-up takes a system call and two switches at the least.
        assert!(
            f.timed_wake > 10.0 * f.clock_read,
            "a wake-up ({} ns) costs more than a clock read ({} ns)",
            f.timed_wake,
            f.clock_read
        );
        assert_eq!(f.ordered_counter > 0.0, cfg!(target_arch = "x86_64"));
    }
}
