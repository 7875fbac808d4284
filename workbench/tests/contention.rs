//! End to end: the contention workload at a tiny size (P = 1, 2, 4 threads,
//! 3,000 pairs each) through the suite, on one of our schedulers and every
//! Rust peer that runs it, then the verdict, the notes and the report.
//! Every record is checked: one per figure and thread count, every pair
//! done, throughput and CPU above zero.

use workbench::peers::contention as peers;
use workbench::record::{Metric, Results, RunStatus};
use workbench::report;
use workbench::spec::{Workload, WorkloadKind};
use workbench::subjects;
use workbench::suite::Suite;

const CONTENTION: &str = r#"
    name = "tiny-contention"
    description = "P threads sharing one subject, a few thousand pairs each"
    models = "a test"
    seed = 28
    [contention]
    threads = [1, 2, 4]
    pairs = 3000
    window = 100
    warm = 200
    delay = { dist = "uniform", min = "10s", max = "30s" }
"#;

const SUBJECTS: &[&str] = &[
    "heap",
    "stp",
    "tokio-timeout",
    "nexus-mutex",
    "delay-queue-mutex",
];

fn run() -> Results {
    let w = Workload::parse(CONTENTION).unwrap();
    assert_eq!(w.kind(), WorkloadKind::Contention);
    let subjects = SUBJECTS
        .iter()
        .map(|n| subjects::find(n).unwrap_or_else(|| panic!("{n} is registered")))
        .collect::<Vec<_>>();
    for s in &subjects {
        assert!(s.runs(&w), "{} runs the contention workload", s.name);
    }
    Suite::test(subjects, vec![w], 1, "contention-test").run(&mut |_| {})
}

#[test]
fn every_subject_does_every_pair_at_every_thread_count() {
    let results = run();
    for r in &results.runs {
        assert_eq!(r.status, RunStatus::Ok, "{r:?}");
    }
    let w = "tiny-contention";
    for s in SUBJECTS {
        let mine: Vec<_> = results
            .records
            .iter()
            .filter(|r| r.scheduler == *s && r.workload == w)
            .collect();
        // Five figures at each of three thread counts, and the contended one.
        assert_eq!(mine.len(), 5 * 3 + 1, "{s}: {mine:?}");
        let mut rates = Vec::new();
        for p in [1u64, 2, 4] {
            for m in [
                Metric::PairsPerS,
                Metric::CallerCpuPerPair,
                Metric::CpuPerPair,
                Metric::Pairs,
                Metric::Parallelism,
            ] {
                let n = mine
                    .iter()
                    .filter(|r| r.metric == m && r.size == Some(p))
                    .count();
                assert_eq!(n, 1, "{s}: one {m} record at P = {p}");
            }
            let get = |m| results.value(s, w, m, Some(p)).unwrap();
            assert_eq!(get(Metric::Pairs), 3000.0 * p as f64, "{s} at P = {p}");
            let rate = get(Metric::PairsPerS);
            assert!(rate.is_finite() && rate > 0.0, "{s} at P = {p}: {rate}");
            for m in [
                Metric::CallerCpuPerPair,
                Metric::CpuPerPair,
                Metric::Parallelism,
            ] {
                let v = get(m);
                assert!(v.is_finite() && v > 0.0, "{s} at P = {p}: {m} = {v}");
            }
            if p >= 2 {
                rates.push(rate);
            }
        }
        let least = rates.iter().copied().fold(f64::INFINITY, f64::min);
        assert_eq!(
            results.value(s, w, Metric::ContendedPairsPerS, None),
            Some(least),
            "{s}: the contended figure is the least at P >= 2"
        );
    }

    // The verdict: one row per figure; pairs/s at the highest P all ran.
    let v = report::verdict::verdicts(&results);
    assert_eq!(
        v.iter().map(|v| (v.metric, v.size)).collect::<Vec<_>>(),
        [
            (Metric::ContendedPairsPerS, None),
            (Metric::PairsPerS, Some(4))
        ]
    );
    assert!(v.iter().all(|v| v.ours.is_some() && v.peer.is_some()));

    // The notes say the machine's core count, from the environment record.
    let notes = report::contention::notes(&results);
    let cores = results.env.cores;
    assert!(
        notes[0].contains(&format!("this machine has {cores} core")),
        "{notes:?}"
    );

    // The report: both charts drawn, the figures labelled by thread count.
    let dir = std::env::temp_dir().join(format!("workbench-contention-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    report::write(&results, &dir).unwrap();
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    for needle in [
        "data-chart=\"tiny-contention-pairs\"",
        "data-chart=\"tiny-contention-cpu\"",
        "pairs/s (pairs/s) @P=4",
        "contended pairs/s",
    ] {
        assert!(html.contains(needle), "the page lacks {needle:?}");
    }
    assert!(dir.join("tiny-contention-pairs.svg").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_subjects_that_cannot_share_one_between_threads_say_why() {
    let w = Workload::parse(CONTENTION).unwrap();
    for name in ["delay-queue", "nexus", "tokio-sleep", "tokio-sleep-2w"] {
        let s = subjects::find(name).unwrap();
        assert!(!s.runs(&w), "{name} does not run it");
        let notes = peers::notes(&[name, "heap"]);
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains(name), "{notes:?}");
    }
    assert!(peers::notes(&["heap", "stp"]).is_empty());
    // Every in-process subject either runs it or says why not.
    for s in subjects::all().into_iter().filter(|s| s.timers.is_some()) {
        assert!(
            s.runs(&w) || peers::CANNOT.iter().any(|(n, _)| *n == s.name),
            "{} neither runs the contention workload nor says why",
            s.name
        );
    }
}
