//! The facades (features `metrics` and `tracing`) in virtual time, in a test
//! process of their own: a recorder and a subscriber are global, installed
//! once, and every case reads only the series and spans of its own
//! scheduler (by its `scheduler` label, the thread name).

#![allow(unreachable_pub)]

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use schedulers::calendar::MissedRuns;
use schedulers::{observe, HeapTimer, ManualClock, Scheduler, SchedulerExt, Task};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The recorder every case's schedulers report to.
fn snapshotter() -> &'static Snapshotter {
    static S: OnceLock<Snapshotter> = OnceLock::new();
    S.get_or_init(|| {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        recorder.install().expect("the only recorder");
        snapshotter
    })
}

/// One series' value: a counter's or gauge's, or a histogram's values.
#[derive(Debug, PartialEq)]
enum Value {
    Count(u64),
    Level(f64),
    Values(Vec<f64>),
}

/// The series of `scheduler`, by name and `task` or `kind` label.
fn series(scheduler: &str) -> HashMap<(String, String), Value> {
    let mut out = HashMap::new();
    for (key, _, _, value) in snapshotter().snapshot().into_vec() {
        let key = key.key();
        let label = |name: &str| {
            key.labels()
                .find(|l| l.key() == name)
                .map(|l| l.value().to_owned())
        };
        if label("scheduler").as_deref() != Some(scheduler) {
            continue;
        }
        let sub = label("task").or_else(|| label("kind")).unwrap_or_default();
        let value = match value {
            DebugValue::Counter(n) => Value::Count(n),
            DebugValue::Gauge(g) => Value::Level(g.into_inner()),
            DebugValue::Histogram(v) => {
                Value::Values(v.into_iter().map(|f| f.into_inner()).collect())
            }
        };
        out.insert((key.name().to_owned(), sub), value);
    }
    out
}

fn get<'a>(series: &'a HashMap<(String, String), Value>, name: &str, sub: &str) -> &'a Value {
    series
        .get(&(name.to_owned(), sub.to_owned()))
        .unwrap_or_else(|| panic!("no series {name}{{{sub}}} in {series:?}"))
}

/// Every series under its documented name, with the same values as the
/// scheduler's own snapshot.
#[test]
fn the_metrics_facade_gets_every_figure_under_its_name() {
    snapshotter();
    let clock = ManualClock::new();
    let label = "facade-metrics";
    let s = HeapTimer::builder()
        .clock(clock.clone())
        .thread_name(label)
        .build()
        .unwrap();
    s.submit(ms(1000), Task::once(|| ()).named("job")).unwrap();
    s.schedule(ms(2000), || ()).unwrap();
    s.submit(ms(1000), Task::once(|| panic!("boom")).named("bad"))
        .unwrap();
    let tick = Task::fixed_rate(ms(1000), || ()).unwrap();
    let tick = tick.missed_runs(MissedRuns::Skip).unwrap().named("tick");
    s.submit(ms(1000), tick).unwrap();
    let cancelled = s.schedule(ms(9000), || ()).unwrap();
    assert!(cancelled.handle().cancel());
    assert!(s
        .submit(Duration::MAX, Task::once(|| ()).named("far"))
        .is_err());
    clock.advance(ms(1000)); // job, bad and tick on time
    clock.advance(ms(3500)); // the unnamed one 2.5 s late; tick skips 2, 3 and 4 s
    let m = s.metrics();
    let got = series(label);

    assert_eq!(get(&got, observe::RUNS, "job"), &Value::Count(1));
    assert_eq!(get(&got, observe::RUNS, ""), &Value::Count(1));
    assert_eq!(get(&got, observe::RUNS, "tick"), &Value::Count(1));
    assert_eq!(get(&got, observe::PANICS, "bad"), &Value::Count(1));
    assert_eq!(get(&got, observe::PANICS, "job"), &Value::Count(0));
    assert_eq!(get(&got, observe::SKIPPED, "tick"), &Value::Count(3));
    assert_eq!(get(&got, observe::REJECTED, "far"), &Value::Count(1));
    assert_eq!(
        get(&got, observe::LATENESS, "job"),
        &Value::Values(vec![0.0])
    );
    assert_eq!(get(&got, observe::LATENESS, ""), &Value::Values(vec![2.5]));
    assert_eq!(
        get(&got, observe::RUN_TIME, "job"),
        &Value::Values(vec![0.0])
    );
    assert_eq!(
        get(&got, observe::CANCELLED, ""),
        &Value::Count(m.cancelled)
    );
    assert_eq!(m.cancelled, 1);
    let pending = |kind| get(&got, observe::PENDING, kind);
    assert_eq!(pending("one_shot"), &Value::Level(0.0));
    assert_eq!(pending("periodic"), &Value::Level(1.0));
    assert_eq!(pending("calendar"), &Value::Level(0.0));
    let Value::Count(wakeups) = get(&got, observe::WAKEUPS, "") else {
        panic!("a counter")
    };
    assert!(*wakeups <= s.metrics().wakeups);
    // Every run once: the sum over `task` is the scheduler's count.
    let runs: u64 = got
        .iter()
        .filter(|((name, _), _)| name == observe::RUNS)
        .map(|(_, v)| match v {
            Value::Count(n) => *n,
            _ => 0,
        })
        .sum();
    assert_eq!(runs, m.fired);
}

/// A span or event as the capturing layer saw it: its fields as text.
#[derive(Clone, Debug, Default)]
struct Seen {
    name: String,
    level: String,
    target: String,
    fields: HashMap<String, String>,
}

impl Visit for Seen {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.fields
            .insert(field.name().to_owned(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.fields
            .insert(field.name().to_owned(), value.to_owned());
    }
}

/// Keeps every closed span and every event.
#[derive(Clone, Default)]
struct Capture {
    spans: Arc<Mutex<Vec<Seen>>>,
    events: Arc<Mutex<Vec<Seen>>>,
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut seen = Seen {
            name: attrs.metadata().name().to_owned(),
            level: attrs.metadata().level().to_string(),
            target: attrs.metadata().target().to_owned(),
            ..Seen::default()
        };
        attrs.record(&mut seen);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(seen);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            if let Some(seen) = span.extensions_mut().get_mut::<Seen>() {
                values.record(seen);
            }
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut seen = Seen {
            name: event.metadata().name().to_owned(),
            level: event.metadata().level().to_string(),
            target: event.metadata().target().to_owned(),
            ..Seen::default()
        };
        event.record(&mut seen);
        if let Some(span) = ctx.event_span(event) {
            seen.fields.insert("in_span".into(), span.name().to_owned());
        }
        self.events.lock().unwrap().push(seen);
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(&id) {
            if let Some(seen) = span.extensions().get::<Seen>() {
                self.spans.lock().unwrap().push(seen.clone());
            }
        }
    }
}

fn capture() -> &'static Capture {
    static C: OnceLock<Capture> = OnceLock::new();
    C.get_or_init(|| {
        let capture = Capture::default();
        let subscriber = tracing_subscriber::registry().with(capture.clone());
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        capture
    })
}

fn of(seen: &Mutex<Vec<Seen>>, scheduler: &str) -> Vec<Seen> {
    let seen = seen.lock().unwrap();
    seen.iter()
        .filter(|s| s.fields.get("scheduler").map(String::as_str) == Some(scheduler))
        .cloned()
        .collect()
}

/// A span per run with the task's name, lateness, run time and outcome;
/// events for a panic (inside the run's span) and a rejection.
#[test]
fn every_run_is_a_span_and_panics_and_rejections_are_events() {
    let capture = capture();
    let clock = ManualClock::new();
    let label = "facade-tracing";
    let s = HeapTimer::builder()
        .clock(clock.clone())
        .thread_name(label)
        .build()
        .unwrap();
    let c = clock.clone();
    s.submit(
        ms(1000),
        Task::once(move || c.advance(ms(30))).named("slow"),
    )
    .unwrap();
    s.submit(ms(1500), Task::once(|| panic!("boom")).named("bad"))
        .unwrap();
    let unnamed = s.schedule(ms(1500), || ()).unwrap();
    clock.advance(ms(1500));
    unnamed.get().unwrap();
    s.shutdown();
    assert!(s.submit(ms(1), Task::once(|| ()).named("late")).is_err());
    assert!(s.await_termination(Duration::from_secs(10)));

    let spans = of(&capture.spans, label);
    assert_eq!(spans.len(), 3, "{spans:?}");
    for span in &spans {
        assert_eq!(
            (
                span.name.as_str(),
                span.level.as_str(),
                span.target.as_str()
            ),
            ("run", "DEBUG", "schedulers::run")
        );
    }
    let field = |span: &Seen, name: &str| span.fields.get(name).cloned().unwrap_or_default();
    let slow = &spans[0];
    assert_eq!(field(slow, "task"), "slow");
    // Due at 1 s, started when the clock reached 1.5 s; ran 30 ms.
    assert_eq!(field(slow, "lateness_ns"), "500000000");
    assert_eq!(field(slow, "run_ns"), "30000000");
    assert_eq!(field(slow, "outcome"), "ok");
    let bad = &spans[1];
    assert_eq!(field(bad, "task"), "bad");
    assert_eq!(field(bad, "lateness_ns"), "30000000");
    assert_eq!(field(bad, "outcome"), "panicked");
    let plain = &spans[2];
    assert_eq!(field(plain, "task"), "");
    assert_eq!(field(plain, "outcome"), "ok");

    let events = of(&capture.events, label);
    let panic = events
        .iter()
        .find(|e| e.level == "WARN")
        .expect("a panic event");
    assert_eq!(field(panic, "task"), "bad");
    assert_eq!(field(panic, "in_span"), "run");
    assert!(field(panic, "error").contains("boom"), "{panic:?}");
    let rejected = events
        .iter()
        .find(|e| e.level == "DEBUG")
        .expect("a rejection event");
    assert_eq!(field(rejected, "task"), "late");
    assert!(
        field(rejected, "error").contains("shut down"),
        "{rejected:?}"
    );
}
