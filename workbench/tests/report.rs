//! End to end: a tiny suite (seconds) over the in-process subjects, its
//! report written, re-rendered from `results.json` alone, and opened in
//! headless Chromium, which must lay out every chart and table.
//!
//! Without Chromium the browser part is skipped with a message, except
//! under CI (`CI` set), where a missing browser fails the test:
//! `scripts/test` installs it.

use std::path::{Path, PathBuf};
use std::process::Command;

use workbench::record::{Metric, Results, RunStatus, SubjectKind};
use workbench::report;
use workbench::spec::Workload;
use workbench::subjects;
use workbench::suite::Suite;

const TIMELINE: &str = r#"
    name = "tiny-mix"
    description = "one-shots with cancels and resets, plus a few fixed-rate and fixed-delay tasks"
    models = "a test"
    seed = 11
    grace = "5s"
    [[group]]
    name = "acks"
    count = 400
    delay = { dist = "uniform", min = "5ms", max = "40ms" }
    arrival = { rate = 40000.0 }
    cancel = { fraction = 0.5, after = { dist = "exponential", mean = "2ms" } }
    reset = { every = { dist = "exponential", mean = "10ms" }, until = "30ms" }
    [[group]]
    name = "ticks"
    count = 5
    kind = "fixed-rate"
    delay = { dist = "fixed", value = "2ms" }
    period = "5ms"
    run_for = "60ms"
    [[group]]
    name = "polls"
    count = 5
    kind = "fixed-delay"
    delay = { dist = "fixed", value = "1ms" }
    period = "5ms"
    run_for = "60ms"
"#;

const SWEEP: &str = r#"
    name = "tiny-scale"
    description = "a tiny sweep"
    models = "a test"
    seed = 12
    [sweep]
    sizes = [100, 1000]
    delay = { dist = "uniform", min = "1h", max = "2h" }
"#;

const CONTENTION: &str = r#"
    name = "tiny-contention"
    description = "1 and 2 threads sharing one subject"
    models = "a test"
    seed = 13
    [contention]
    threads = [1, 2]
    pairs = 2000
    window = 100
    warm = 100
    delay = { dist = "uniform", min = "10s", max = "30s" }
"#;

fn tiny_run() -> Results {
    // Memory per timer is measured in fresh child processes of the binary.
    let _ = workbench::runner::MEMORY_PROBE_EXE.set(PathBuf::from(env!("CARGO_BIN_EXE_workbench")));
    let subjects: Vec<_> = subjects::all()
        .into_iter()
        .filter(|s| s.timers.is_some())
        .collect();
    let mut updates = 0;
    assert!(subjects.iter().any(|s| s.kind == SubjectKind::Algorithm));
    assert!(subjects.iter().any(|s| s.kind == SubjectKind::Peer));
    let results = Suite::test(
        subjects,
        vec![
            Workload::parse(TIMELINE).unwrap(),
            Workload::parse(SWEEP).unwrap(),
            Workload::parse(CONTENTION).unwrap(),
        ],
        2,
        "test",
    )
    .run(&mut |r| {
        // After every finished run: the results so far, marked partial.
        assert!(r.partial);
        assert_eq!(r.runs.len(), updates + 1);
        updates += 1;
    });
    assert!(!results.partial);
    assert_eq!(updates, results.runs.len());
    results
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("workbench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn chromium() -> Option<PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .or_else(|| {
            let out = Command::new("sh")
                .args(["-c", "command -v chromium"])
                .output()
                .ok()?;
            let p = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            (!p.is_empty()).then(|| PathBuf::from(p))
        })
}

/// Runs headless Chromium on `page` at `width` × `height` with `action`
/// (`--dump-dom`, `--screenshot=…`); returns its stdout.
fn chromium_run(
    browser: &Path,
    page: &Path,
    profile: &Path,
    (width, height): (u32, u32),
    action: &str,
) -> String {
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--window-size={width},{height}"))
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(action)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium starts");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_tiny_run_renders_every_chart_and_table_in_a_browser() {
    let results = tiny_run();
    assert!(results.notes.is_empty(), "{:?}", results.notes);
    for r in &results.runs {
        assert_eq!(r.status, RunStatus::Ok, "{r:?}");
    }

    // Every in-process subject measured the timeline and the sweep, and
    // nothing fired early or went missing.
    for s in &results.subjects {
        for m in [
            Metric::ScheduleCall,
            Metric::CancelCall,
            Metric::ResetCall,
            Metric::CpuPerTimer,
            Metric::LatenessP99,
            Metric::JitterP99,
        ] {
            assert!(
                results.get(&s.name, "tiny-mix", m, None).is_some(),
                "{} lacks {m}",
                s.name
            );
        }
        let r = results
            .get(&s.name, "tiny-mix", Metric::Missed, None)
            .unwrap();
        assert_eq!(r.value, 0.0, "{}: missed = {:?}", s.name, r.samples);
        // nexus-timer compares whole ticks (deadline and now both floored
        // to 1 ms), so it fires up to a tick before a ns deadline, by design.
        if s.name != "nexus" {
            let r = results
                .get(&s.name, "tiny-mix", Metric::Early, None)
                .unwrap();
            assert_eq!(r.value, 0.0, "{}: early = {:?}", s.name, r.samples);
        }
        for m in [
            Metric::ScheduleBatch,
            Metric::ResetBatch,
            Metric::CancelBatch,
            Metric::CpuPerTimer,
        ] {
            assert!(
                results.get(&s.name, "tiny-scale", m, Some(1000)).is_some(),
                "{}: {m}",
                s.name
            );
        }
        let mem = results
            .get(&s.name, "tiny-scale", Metric::Memory, Some(1000))
            .unwrap();
        assert_eq!(mem.samples.len(), 2);
        assert!(
            mem.value > 8.0,
            "{}: {} bytes per pending timer",
            s.name,
            mem.value
        );
        for r in results.records.iter().filter(|r| r.scheduler == s.name) {
            assert_eq!(
                r.samples.len(),
                2,
                "{}/{}/{}: one sample per repeat",
                r.workload,
                r.metric,
                s.name
            );
        }
        // Correctness only: how many periodic runs fit depends on the
        // machine's load, so only require that they ran.
        let runs = results
            .get(&s.name, "tiny-mix", Metric::Runs, None)
            .unwrap();
        assert!(
            runs.samples.iter().all(|s| s.value > 0.0),
            "{}: periodic runs {:?}",
            s.name,
            runs.samples
        );
    }
    for r in &results.records {
        assert_eq!(r.env, results.env);
        let seed = match r.workload.as_str() {
            "tiny-mix" => 11,
            "tiny-scale" => 12,
            _ => 13,
        };
        assert_eq!(r.seed, seed, "{}", r.workload);
    }

    let dir = scratch("report");
    report::write(&results, &dir).unwrap();
    let charts = report::charts_of(&results);
    let ids: Vec<&str> = charts.iter().map(|c| c.id.as_str()).collect();
    for want in [
        "lateness-tiny-mix",
        "cost-call",
        "cpu-per-timer",
        "tiny-scale-schedule_batch",
        "tiny-scale-memory",
        "jitter",
        "tiny-contention-pairs",
        "tiny-contention-cpu",
    ] {
        assert!(ids.contains(&want), "no chart {want}: {ids:?}");
    }
    for c in &charts {
        let svg = c
            .svg
            .as_ref()
            .unwrap_or_else(|e| panic!("{} not drawn: {e}", c.id));
        assert_eq!(
            std::fs::read_to_string(dir.join(format!("{}.svg", c.id))).unwrap(),
            svg.svg
        );
    }

    // The report re-renders from results.json alone, identically.
    let text = std::fs::read_to_string(dir.join("results.json")).unwrap();
    let back: Results = serde_json::from_str(&text).unwrap();
    assert_eq!(back, results);
    let again = scratch("rerender");
    report::write(&back, &again).unwrap();
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert_eq!(
        std::fs::read_to_string(again.join("index.html")).unwrap(),
        html
    );

    let Some(browser) = chromium() else {
        if std::env::var_os("CI").is_some() {
            panic!("chromium is missing under CI; scripts/test installs it");
        }
        eprintln!(
            "SKIPPED the browser check: chromium is not installed (scripts/test installs it)"
        );
        return;
    };
    let profile = scratch("chromium-profile");
    // 1400 px: the width at which the first version's tables overflowed.
    let dom = chromium_run(
        &browser,
        &dir.join("index.html"),
        &profile,
        (1400, 900),
        "--dump-dom",
    );
    let tables = html.matches("data-table=").count();
    let want = format!(
        "data-check=\"ok {} charts {} tables \"",
        charts.len(),
        tables
    );
    assert!(
        dom.contains(&want),
        "the page's own check says {:?}, wanted {want}",
        dom.split("data-check=")
            .nth(1)
            .map(|s| &s[..s.len().min(200)])
    );
    for c in &charts {
        assert!(dom.contains(&format!("data-chart=\"{}\"", c.id)));
    }
    for s in &results.subjects {
        assert!(
            dom.contains(&format!(">{}<", s.name)),
            "{} missing from the page",
            s.name
        );
    }
    // The verdict opens the page, before the subjects and the charts.
    let at = |needle: &str| {
        dom.find(needle)
            .unwrap_or_else(|| panic!("no {needle} on the page"))
    };
    assert!(at("id=\"verdict\"") < at("id=\"subjects\""));
    assert!(at("id=\"verdict\"") < at("data-chart="));
    assert!(dom.contains("data-table=\"pick\""));

    // Screenshots to look at (kept in the target directory): the top of the
    // page and a long view of it.
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    for (name, size) in [("top.png", (1400, 1000)), ("long.png", (1400, 7000))] {
        let png = shots.join(name);
        let _ = std::fs::remove_file(&png);
        chromium_run(
            &browser,
            &dir.join("index.html"),
            &profile,
            size,
            &format!("--screenshot={}", png.display()),
        );
        let len = std::fs::metadata(&png).map_or(0, |m| m.len());
        assert!(len > 10_000, "{}: {len} bytes", png.display());
    }
    eprintln!("screenshots: {}", shots.display());

    // A partial run says so.
    let mut partial = results.clone();
    partial.partial = true;
    let part = scratch("partial");
    report::write(&partial, &part).unwrap();
    let dom = chromium_run(
        &browser,
        &part.join("index.html"),
        &profile,
        (1400, 900),
        "--dump-dom",
    );
    assert!(dom.contains("class=\"partial\""));

    let _ = std::fs::remove_dir_all(&profile);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&again);
    let _ = std::fs::remove_dir_all(&part);
}
