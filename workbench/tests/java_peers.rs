//! End to end through the Java harness: every Java peer runs a small
//! timeline (one-shots with cancels and resets, fixed-rate and fixed-delay
//! tasks), a small sweep and a small contention run (threads sharing the
//! peer) in its own JVM, and every record it sends back
//! is checked: present, finite, in the right unit, and consistent with the
//! operations the spec implies.
//!
//! Without a JVM or the jars the test skips with one line, except under CI
//! (`CI` set), where `scripts/test` installs them and a missing piece fails.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::SeqCst;

use workbench::peers::java::{self, JavaPeer, JavaRunner, PEERS};
use workbench::record::{Measurement, Metric};
use workbench::runner::{RunContext, Runner};
use workbench::spec::Workload;
use workbench::subjects;

const ONE_SHOTS: &str = r#"
    name = "java-one-shots"
    description = "one-shots, some cancelled, some reset"
    seed = 11
    [[group]]
    name = "t"
    count = 300
    delay = { dist = "uniform", min = "200ms", max = "300ms" }
    cancel = { fraction = 0.3, after = { dist = "fixed", value = "5ms" } }
    [[group]]
    name = "k"
    count = 100
    delay = { dist = "fixed", value = "250ms" }
    reset = { every = { dist = "fixed", value = "10ms" }, until = "35ms" }
"#;

const PERIODIC: &str = r#"
    name = "java-periodic"
    description = "fixed-rate and fixed-delay tasks"
    seed = 12
    grace = "100ms"
    [[group]]
    name = "rate"
    count = 20
    kind = "fixed-rate"
    delay = { dist = "uniform", min = "0ms", max = "10ms" }
    period = "10ms"
    run_for = "300ms"
    [[group]]
    name = "delay"
    count = 20
    kind = "fixed-delay"
    delay = { dist = "uniform", min = "0ms", max = "10ms" }
    period = "10ms"
    run_for = "300ms"
"#;

const SWEEP: &str = r#"
    name = "java-sweep"
    description = "cost and memory at two sizes"
    seed = 13
    [sweep]
    sizes = [1000, 5000]
    delay = { dist = "uniform", min = "1h", max = "2h" }
"#;

const CONTENTION: &str = r#"
    name = "java-contention"
    description = "1 and 3 threads sharing the peer"
    seed = 14
    [contention]
    threads = [1, 3]
    pairs = 2000
    window = 100
    warm = 500
    delay = { dist = "uniform", min = "10s", max = "30s" }
"#;

fn by_metric(ms: &[Measurement]) -> HashMap<(Metric, Option<u64>), f64> {
    ms.iter().map(|m| ((m.metric, m.size), m.value)).collect()
}

fn get(
    peer: &str,
    w: &str,
    m: &HashMap<(Metric, Option<u64>), f64>,
    metric: Metric,
    size: Option<u64>,
) -> f64 {
    let Some(v) = m.get(&(metric, size)) else {
        panic!(
            "{peer} on {w}: no {metric} at {size:?}; got {:?}",
            m.keys().collect::<Vec<_>>()
        )
    };
    assert!(v.is_finite() && *v >= 0.0, "{peer} on {w}: {metric} = {v}");
    *v
}

#[test]
fn the_java_harness_draws_the_same_random_numbers() {
    match java::golden() {
        Ok(g) => assert_eq!(g, workbench::random::golden()),
        Err(why) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "under CI the Java harness must run: {why}"
            );
            eprintln!("skipping the golden vector in Java: {why}");
        }
    }
}

#[test]
fn every_java_peer_runs_the_specs_end_to_end() {
    if let Err(why) = java::harness() {
        assert!(
            std::env::var_os("CI").is_none(),
            "under CI the Java peers must run: {why}"
        );
        eprintln!("skipping the Java peers: {why}");
        return;
    }
    let one = Workload::parse(ONE_SHOTS).unwrap();
    let per = Workload::parse(PERIODIC).unwrap();
    let sweep = Workload::parse(SWEEP).unwrap();
    let contention = Workload::parse(CONTENTION).unwrap();
    let ctx = RunContext::quiet(0.0);
    // The figures the Rust runner reports for the same specs: a Java peer
    // must report the same ones, in the same units (plus its own timing
    // overhead), or the report would compare apples with nothing.
    let heap = subjects::find("heap").expect("the heap scheduler is registered");
    let mut rust = (heap.runner)().unwrap();
    // Less the cross-check of our schedulers' own lateness
    // (`Metrics::lateness`), which no peer measures of itself.
    let cross_check = [
        Metric::LatenessMean,
        Metric::OwnLatenessMean,
        Metric::OwnLatenessP50,
        Metric::OwnLatenessP99,
        Metric::OwnLatenessGap,
        Metric::OwnLatenessRunsGap,
    ];
    let keys = |ms: &[Measurement]| -> BTreeSet<(Metric, Option<u64>)> {
        ms.iter()
            .filter(|m| !cross_check.contains(&m.metric))
            .map(|m| (m.metric, m.size))
            .collect()
    };
    let expected: Vec<_> = [&one, &per, &sweep, &contention]
        .iter()
        .map(|w| keys(&rust.run(w, &ctx).unwrap()))
        .collect();
    // One peer's JVM end to end; false if it could not start (outside CI).
    let check = |peer: &JavaPeer| -> bool {
        let mut r = match JavaRunner::start_with_warmup(*peer, 1, 5000) {
            Ok(r) => r,
            Err(why) => {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "under CI every Java peer must run; {}: {why}",
                    peer.name
                );
                eprintln!("skipping {}: {why}", peer.name);
                return false;
            }
        };
        let p = peer.name;
        assert!(
            !r.semantics.is_empty(),
            "{p}: the harness states the original's semantics"
        );
        assert!(
            r.env
                .get("java")
                .and_then(|v| v.as_str())
                .is_some_and(|v| !v.is_empty()),
            "{p}: env {:?}",
            r.env
        );

        // One-shots: 300 + 100 scheduled, ~90 cancelled 5 ms in, 300 resets,
        // all long before any deadline (so even a stalled machine has no late ones).
        let ms = r.run(&one, &ctx).unwrap();
        assert_eq!(
            keys(&ms),
            expected[0],
            "{p}: the Rust runner's figures for the one-shots"
        );
        let m = by_metric(&ms);
        let w = "one-shots";
        for cost in [
            Metric::ScheduleCall,
            Metric::CancelCall,
            Metric::ResetCall,
            Metric::CpuPerTimer,
        ] {
            get(p, w, &m, cost, None);
        }
        assert_eq!(
            get(p, w, &m, Metric::CancelLate, None),
            0.0,
            "{p}: cancels 195 ms before any deadline"
        );
        assert_eq!(
            get(p, w, &m, Metric::ResetLate, None),
            0.0,
            "{p}: resets 215 ms before any deadline"
        );
        assert_eq!(
            get(p, w, &m, Metric::Missed, None),
            0.0,
            "{p}: every timer not cancelled fires"
        );
        let fired = get(p, w, &m, Metric::Fired, None);
        assert!(
            (250.0..=350.0).contains(&fired),
            "{p}: fired {fired} of 400 less ~90 cancelled"
        );
        let lat: Vec<f64> = Metric::LATENESS
            .iter()
            .map(|(n, _)| get(p, w, &m, *n, None))
            .collect();
        assert!(
            lat.windows(2).all(|x| x[0] <= x[1]),
            "{p}: percentiles ascend: {lat:?}"
        );
        assert!(
            lat[4] < 2_000_000.0,
            "{p}: a 2 s late fire is no timer: {lat:?}"
        );
        get(p, w, &m, Metric::Early, None);
        get(p, w, &m, Metric::FiresPerS, None);
        get(p, w, &m, Metric::Cpu, None);
        get(p, w, &m, Metric::CpuBackground, None);
        get(p, w, &m, Metric::TimingOverhead, None);

        // Periodic: 40 tasks, 10 ms, 300 ms.
        let ms = r.run(&per, &ctx).unwrap();
        assert_eq!(
            keys(&ms),
            expected[1],
            "{p}: the Rust runner's figures for periodic tasks"
        );
        let m = by_metric(&ms);
        let w = "periodic";
        for (n, _) in Metric::JITTER {
            get(p, w, &m, n, None);
        }
        get(p, w, &m, Metric::Drift, None);
        let ratio = get(p, w, &m, Metric::RunsRatio, None);
        // A 100 ms wheel runs a 10 ms period once per tick (Netty has no
        // periodic API); everyone else keeps close to the nominal count.
        let floor = if p == "netty-100ms" { 0.03 } else { 0.5 };
        assert!(ratio > floor && ratio < 1.2, "{p}: runs_ratio {ratio}");
        assert!(get(p, w, &m, Metric::Runs, None) > 0.0);

        // Sweep: every figure at both sizes.
        let ms = r.run(&sweep, &ctx).unwrap();
        assert_eq!(
            keys(&ms),
            expected[2],
            "{p}: the Rust runner's figures for a sweep"
        );
        let m = by_metric(&ms);
        for size in [1000, 5000] {
            for cost in [
                Metric::ScheduleBatch,
                Metric::ResetBatch,
                Metric::CancelBatch,
                Metric::CpuPerTimer,
            ] {
                get(p, "sweep", &m, cost, Some(size));
            }
            let b = get(p, "sweep", &m, Metric::Memory, Some(size));
            assert!(
                b > 8.0 && b < 10_000.0,
                "{p}: {b} bytes per pending timer at {size}"
            );
        }

        // Contention: 1 and 3 Java threads, every pair done.
        let ms = r.run(&contention, &ctx).unwrap();
        assert_eq!(
            keys(&ms),
            expected[3],
            "{p}: the Rust runner's figures for the contention workload"
        );
        let m = by_metric(&ms);
        let w = "contention";
        for threads in [1u64, 3] {
            let at = Some(threads);
            assert_eq!(
                get(p, w, &m, Metric::Pairs, at),
                2000.0 * threads as f64,
                "{p}: every pair at P = {threads}"
            );
            for f in [
                Metric::PairsPerS,
                Metric::CallerCpuPerPair,
                Metric::CpuPerPair,
                Metric::Parallelism,
            ] {
                let v = get(p, w, &m, f, at);
                assert!(v > 0.0, "{p}: {f} = {v} at P = {threads}");
            }
        }
        assert_eq!(
            get(p, w, &m, Metric::ContendedPairsPerS, None),
            get(p, w, &m, Metric::PairsPerS, Some(3))
        );

        // A bad workload is refused with the field named, and the JVM serves
        // on (the contention run: the sweep would take netty-100ms half a
        // minute again).
        let mut bad = one.clone();
        bad.groups[0].kind = workbench::spec::Kind::FixedRate;
        let e = r.run(&bad, &ctx).unwrap_err();
        assert!(e.to_string().contains("period"), "{p}: {e}");
        assert!(
            r.run(&contention, &ctx).is_ok(),
            "{p}: still serving after a refused workload"
        );
        true
    };
    // Two JVMs at a time (the machine has 2 cores; each peer's figures are
    // checked for presence and consistency, not speed): a worker takes the
    // next peer until none is left. A failed check fails the test. The
    // longest first: netty-100ms's sweep waits three of its ticks and its
    // stop in each of 102 cycles, half a minute in which the other worker
    // gets through the rest.
    let mut peers: Vec<&JavaPeer> = PEERS.iter().collect();
    peers.sort_by_key(|p| p.name != "netty-100ms");
    let next = AtomicUsize::new(0);
    let ran = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                while let Some(peer) = peers.get(next.fetch_add(1, SeqCst)) {
                    if check(peer) {
                        ran.fetch_add(1, SeqCst);
                    }
                }
            });
        }
    });
    let ran = ran.into_inner();
    eprintln!("{ran} of {} Java peers ran end to end", PEERS.len());
    if std::env::var_os("CI").is_some() {
        assert_eq!(ran, PEERS.len(), "under CI every Java peer runs");
    }
}
