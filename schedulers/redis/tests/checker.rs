//! The invariant checker itself: it must reject each kind of violation.

use std::collections::BTreeMap;
use std::panic::catch_unwind;

use crate::support::{check, Event, Expect};

fn ev(ev: &str, id: &str, due: i64, fence: i64, claimed: i64, outcome: &str) -> Event {
    Event {
        ev: ev.into(),
        worker: "w".into(),
        id: id.into(),
        fire: String::new(),
        due,
        fence,
        attempt: fence,
        claimed,
        shard: 0,
        outcome: outcome.into(),
        at: if ev == "end" { claimed + 1 } else { 0 },
        next: None,
        skipped: 0,
    }
}

fn jobs(cancelled_at: Option<i64>) -> BTreeMap<String, Expect> {
    BTreeMap::from([(
        "a".to_owned(),
        Expect {
            cancelled_at,
            ..Expect::once(100)
        },
    )])
}

fn rejects(events: Vec<Event>, jobs: BTreeMap<String, Expect>) -> bool {
    catch_unwind(move || {
        check(&events, &jobs);
    })
    .is_err()
}

#[test]
fn accepts_a_clean_history_and_a_redelivery_after_a_recorded_loss() {
    let clean = vec![
        ev("start", "a", 100, 1, 100, ""),
        ev("end", "a", 100, 1, 100, "done"),
    ];
    assert_eq!(check(&clean, &jobs(None)).runs["a"], 1);
    let redone = vec![
        ev("start", "a", 100, 1, 100, ""),
        ev("reaped", "a", 100, 1, 0, "RETRY"),
        ev("start", "a", 100, 2, 900, ""),
        ev("end", "a", 100, 2, 900, "done"),
    ];
    let s = check(&redone, &jobs(None));
    assert_eq!((s.runs["a"], s.repeated_fires, s.lease_losses), (2, 1, 1));
}

#[test]
fn rejects_each_violation() {
    // Never ran.
    assert!(rejects(vec![], jobs(None)));
    // Ran but was never acked.
    assert!(rejects(vec![ev("start", "a", 100, 1, 100, "")], jobs(None)));
    // Early.
    assert!(rejects(
        vec![
            ev("start", "a", 100, 1, 99, ""),
            ev("end", "a", 100, 1, 99, "done")
        ],
        jobs(None)
    ));
    // Fired with another due time than scheduled.
    assert!(rejects(
        vec![
            ev("start", "a", 150, 1, 150, ""),
            ev("end", "a", 150, 1, 150, "done")
        ],
        jobs(None)
    ));
    // Ran after a successful cancel.
    assert!(rejects(
        vec![
            ev("start", "a", 100, 1, 300, ""),
            ev("end", "a", 100, 1, 300, "done")
        ],
        jobs(Some(200))
    ));
    // The same fire twice with no recorded loss.
    assert!(rejects(
        vec![
            ev("start", "a", 100, 1, 100, ""),
            ev("end", "a", 100, 1, 100, "done"),
            ev("start", "a", 100, 2, 100, ""),
            ev("end", "a", 100, 2, 100, "done"),
        ],
        jobs(None)
    ));
    // A run of an unknown job.
    let mut events = vec![
        ev("start", "a", 100, 1, 100, ""),
        ev("end", "a", 100, 1, 100, "done"),
    ];
    events.push(ev("start", "ghost", 1, 1, 1, ""));
    assert!(rejects(events, jobs(None)));
}

#[test]
fn a_calendar_jobs_fires_must_be_its_fire_times() {
    use schedulers_redis::calendar::Calendar;

    // Every 10 s; the first fire at 10 s.
    let cal = Calendar::parse("*/10 * * * * ?").unwrap();
    let jobs = || BTreeMap::from([("a".to_owned(), Expect::calendar(10_000, &cal))]);
    let runs = |dues: &[i64]| -> Vec<Event> {
        dues.iter()
            .enumerate()
            .flat_map(|(i, &d)| {
                let fence = i as i64 + 1;
                [
                    ev("start", "a", d, fence, d, ""),
                    ev("end", "a", d, fence, d, "next"),
                ]
            })
            .collect()
    };
    assert_eq!(check(&runs(&[10_000, 20_000]), &jobs()).runs["a"], 2);
    assert!(
        rejects(runs(&[10_000, 25_000]), jobs()),
        "off its fire times"
    );
    assert!(rejects(runs(&[0]), jobs()), "before its first fire");
    // A redelivery of a fire that a policy ran for another point: the reap
    // names the due time stored (10 s), the runs the point (20 s); the loss
    // is the job's, under the same fence.
    let redone = vec![
        ev("start", "a", 20_000, 1, 25_000, ""),
        ev("reaped", "a", 10_000, 1, 0, "RETRY"),
        ev("start", "a", 20_000, 2, 26_000, ""),
        ev("end", "a", 20_000, 2, 26_000, "next"),
    ];
    assert_eq!(check(&redone, &jobs()).repeated_fires, 1);
}
