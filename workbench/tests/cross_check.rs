//! The cross-check of the built-in lateness: on a workload of one-shots,
//! each of this crate's schedulers reports its own lateness of the same
//! runs the workbench measures (`own_lateness_*`), and the report says how
//! they agree.
//!
//! What is checked holds on any machine: the workbench reads a timer's
//! deadline before the schedule call and its fire time inside the task,
//! the scheduler both in between, so for every run the workbench's lateness
//! is at least the scheduler's, and the mean gap is at least 0 and at most
//! the workbench's mean.

use workbench::record::{Metric, SubjectKind};
use workbench::report;
use workbench::spec::Workload;
use workbench::subjects;
use workbench::suite::Suite;

const ONE_SHOTS: &str = r#"
    name = "tiny-lateness"
    description = "one-shots only, none cancelled"
    models = "a test"
    seed = 21
    grace = "5s"
    [[group]]
    name = "timeouts"
    count = 2000
    delay = { dist = "uniform", min = "2ms", max = "50ms" }
    arrival = { rate = 20000.0 }
"#;

#[test]
fn built_in_lateness_agrees_with_the_workbench_on_the_same_runs() {
    let algorithms: Vec<_> = subjects::all()
        .into_iter()
        .filter(|s| s.kind == SubjectKind::Algorithm && s.timers.is_some())
        .filter(|s| ["heap", "stpe", "wheel", "hier-kafka"].contains(&s.name))
        .collect();
    assert_eq!(algorithms.len(), 4);
    let results = Suite::test(
        algorithms,
        vec![Workload::parse(ONE_SHOTS).unwrap()],
        1,
        "cross-check",
    )
    .run(&mut |_| {});
    for s in ["heap", "stpe", "wheel", "hier-kafka"] {
        let value = |m| {
            results
                .value(s, "tiny-lateness", m, None)
                .unwrap_or_else(|| panic!("{s}: no {m:?}"))
        };
        assert_eq!(value(Metric::OwnLatenessRunsGap), 0.0, "{s}: the same runs");
        let (gap, mean) = (value(Metric::OwnLatenessGap), value(Metric::LatenessMean));
        assert!(
            gap >= 0.0,
            "{s}: the workbench's lateness is never less: {gap} ns"
        );
        assert!(
            gap <= mean * 1e3,
            "{s}: the gap {gap} ns within the lateness {mean} µs"
        );
        assert!(value(Metric::OwnLatenessP99) >= value(Metric::OwnLatenessP50));
    }
    let notes = report::notes::cross_check(&results);
    assert_eq!(notes.len(), 4, "{notes:?}");
    assert!(
        notes[0].contains("own lateness agrees with the workbench's"),
        "{notes:?}"
    );
}
