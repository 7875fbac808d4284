//! Cross-check with Quartz itself: `CronExpression.getNextValidTimeAfter`
//! from Debian's `libquartz2-java` (2.3.2), through a small Java program
//! compiled here with `javac`, on Quartz-syntax expressions and instants
//! away from DST transitions. (Around a transition Quartz differs on
//! purpose: its lenient `GregorianCalendar` moves a skipped 02:30 by the
//! gap, to 03:30, and it fires a repeated wall-clock time once even when
//! the hour field names every hour.)
//!
//! Needs a JDK (`JAVA_HOME/bin`, else `PATH`) and the jar
//! (`QUARTZ_JAR`, else `/usr/share/java/quartz2.jar`). Without them the
//! test says so and passes, except under `CI`, where it fails.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};

use super::super::Calendar;
use super::dst::CASES;

const PROGRAM: &str = r#"
import java.io.*;
import java.util.*;
import org.quartz.CronExpression;

/** Per line "expression TAB zone TAB epoch-millis TAB n": the next n fire times, or the error. */
public class QuartzNext {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        PrintWriter out = new PrintWriter(new BufferedWriter(new OutputStreamWriter(System.out, "UTF-8")));
        for (String line; (line = in.readLine()) != null; ) {
            String[] f = line.split("\t");
            StringBuilder sb = new StringBuilder("ok");
            try {
                CronExpression c = new CronExpression(f[0]);
                c.setTimeZone(TimeZone.getTimeZone(f[1]));
                Date t = new Date(Long.parseLong(f[2]));
                for (int i = Integer.parseInt(f[3]); i > 0; i--) {
                    t = c.getNextValidTimeAfter(t);
                    if (t == null) break;
                    sb.append('\t').append(t.getTime());
                }
            } catch (Exception e) {
                sb = new StringBuilder("error\t" + e);
            }
            out.println(sb);
        }
        out.flush();
    }
}
"#;

/// A tool of the JDK: `JAVA_HOME/bin/<name>`, else on `PATH`.
fn jdk_tool(name: &str) -> Option<PathBuf> {
    let home = std::env::var_os("JAVA_HOME").map(|h| PathBuf::from(h).join("bin"));
    let path = std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect::<Vec<_>>());
    home.into_iter()
        .chain(path.unwrap_or_default())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The JDK's `javac` and `java`, and Quartz's jar, or what is missing.
fn toolchain() -> Result<(PathBuf, PathBuf, PathBuf), String> {
    let javac = jdk_tool("javac")
        .ok_or("no `javac` in JAVA_HOME/bin or on PATH (install default-jdk-headless)")?;
    let java = jdk_tool("java")
        .ok_or("no `java` in JAVA_HOME/bin or on PATH (install default-jdk-headless)")?;
    let jar = std::env::var_os("QUARTZ_JAR").map_or_else(
        || PathBuf::from("/usr/share/java/quartz2.jar"),
        PathBuf::from,
    );
    if !jar.is_file() {
        return Err(format!(
            "no Quartz jar at {} (install libquartz2-java)",
            jar.display()
        ));
    }
    Ok((javac, java, jar))
}

/// The toolchain; or, when something is missing, `None` after saying so,
/// but a panic under `CI`, where the cross-check must run.
fn toolchain_or_skip() -> Option<(PathBuf, PathBuf, PathBuf)> {
    match toolchain() {
        Ok(tools) => Some(tools),
        Err(missing) if std::env::var_os("CI").is_some() => {
            panic!("the Quartz cross-check needs Java and Quartz under CI: {missing}")
        }
        Err(missing) => {
            eprintln!("skipping the Quartz cross-check: {missing}");
            None
        }
    }
}

/// Runs the program on `input` lines; its output lines.
fn run_quartz(javac: &Path, java: &Path, jar: &Path, input: &str) -> Vec<String> {
    // A directory per call: the tests run in parallel.
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("schedulers-quartz-{}-{call}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("QuartzNext.java");
    std::fs::write(&source, PROGRAM).unwrap();
    let compiled = Command::new(javac)
        .arg("-d")
        .arg(&dir)
        .arg("-cp")
        .arg(jar)
        .arg(&source)
        .output()
        .unwrap();
    assert!(
        compiled.status.success(),
        "javac: {}",
        String::from_utf8_lossy(&compiled.stderr)
    );
    let classpath = std::env::join_paths([dir.as_path(), jar]).unwrap();
    let mut child = Command::new(java)
        .arg("-cp")
        .arg(classpath)
        .arg("QuartzNext")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        out.status.success(),
        "java: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Expressions written by hand: each feature of the Quartz syntax.
const HAND: &[&str] = &[
    "0 0 12 * * ?",
    "0 15 10 ? * *",
    "0 15 10 * * ? 2030",
    "0 * 14 * * ?",
    "0 0/5 14 * * ?",
    "0 0/5 14,18 * * ?",
    "0 0-5 14 * * ?",
    "0 10,44 14 ? 3 WED",
    "0 15 10 ? * MON-FRI",
    "0 15 10 15 * ?",
    "0 15 10 L * ?",
    "0 15 10 L-2 * ?",
    "0 15 10 LW * ?",
    "0 15 10 ? * 6L",
    "0 15 10 ? * 6L 2030-2035",
    "0 15 10 ? * 6#3",
    "0 0 12 1/5 * ?",
    "0 11 11 11 11 ?",
    "0 0 0 15W * ?",
    "0 0 0 1W * ?",
    "*/20 * * * * ?",
    "5/15 30 9-17 ? * MON-FRI",
    "0 0 22-2 * * ?",
    "0 0 12 ? NOV-FEB *",
    "0 0 12 ? * FRI-MON",
    "0 0 12 ? * L",
    "0 0 12 29 2 ?",
    "0 30 * ? * 2#5",
    "59 59 23 31 12 ? 2025/3",
];

/// Quartz-syntax expressions that Quartz 2.3.2 takes (one day field `?`, no
/// lists with `L`, `W` or `#`), from a seed.
fn random_expressions(count: usize) -> Vec<String> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut pick = |options: &[&'static str]| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        options[(state % options.len() as u64) as usize]
    };
    (0..count)
        .map(|_| {
            let second = pick(&["0", "0", "*/20", "15", "0,30", "10-40/15"]);
            let minute = pick(&["*", "0", "*/15", "5-10", "45-15/10", "59", "10/25", "0,30"]);
            let hour = pick(&["*", "0", "9-17", "*/3", "22-2", "12", "1,13", "5/7"]);
            let dom = pick(&[
                "*", "1", "L", "L-2", "LW", "15W", "1W", "*/2", "28-31", "10-20/5", "31",
            ]);
            let month = pick(&["*", "*", "1", "3-11/2", "*/4", "DEC-FEB", "6,7", "2"]);
            let dow = pick(&[
                "*", "MON-FRI", "1", "6L", "2#1", "FRI#2", "SAT,SUN", "7", "L", "FRI-MON", "*/2",
            ]);
            let year = pick(&["", "", "", " *", " 2020-2060", " 2021/3"]);
            let (dom, dow) = if pick(&["dom", "dow"]) == "dom" {
                (dom, "?")
            } else {
                ("?", dow)
            };
            format!("{second} {minute} {hour} {dom} {month} {dow}{year}")
        })
        .collect()
}

#[test]
fn agrees_with_quartz_away_from_dst() {
    let Some((javac, java, jar)) = toolchain_or_skip() else {
        return;
    };
    const ZONES: &[&str] = &[
        "UTC",
        "Asia/Tokyo",
        "Asia/Kolkata",
        "Europe/Berlin",
        "America/New_York",
    ];
    const N: usize = 8;
    // Starts mid-January and mid-July, far from these zones' transitions;
    // fire times are compared up to a day before the next transition.
    let mut cases = Vec::new();
    let expressions: Vec<String> = HAND
        .iter()
        .map(|&e| e.to_owned())
        .chain(random_expressions(400))
        .collect();
    for (i, expr) in expressions.iter().enumerate() {
        for (j, zone) in ZONES.iter().enumerate() {
            let year = 2001 + ((i * 7 + j * 3) % 34) as i16;
            let month = if (i + j) % 2 == 0 { 1 } else { 7 };
            let tz = TimeZone::get(zone).unwrap();
            let after = jiff::civil::date(year, month, 10 + (i % 10) as i8)
                .at((i % 24) as i8, (j * 7 % 60) as i8, 13, 250_000_000)
                .to_zoned_datetime(tz.clone())
                .unwrap()
                .timestamp();
            let horizon = tz
                .following(after)
                .next()
                .map(|t| t.timestamp() - SignedDuration::from_hours(24));
            cases.push((expr.clone(), *zone, after, horizon));
        }
    }
    let input: String = cases
        .iter()
        .map(|(expr, zone, after, _)| format!("{expr}\t{zone}\t{}\t{N}\n", after.as_millisecond()))
        .collect();
    let lines = run_quartz(&javac, &java, &jar, &input);
    assert_eq!(lines.len(), cases.len());

    let (mut compared, mut wrong) = (0, Vec::new());
    for ((expr, zone, after, horizon), line) in cases.iter().zip(&lines) {
        let mut fields = line.split('\t');
        assert_eq!(fields.next(), Some("ok"), "Quartz refused `{expr}`: {line}");
        let before_horizon = |t: &Timestamp| horizon.is_none_or(|h| *t < h);
        let theirs: Vec<Timestamp> = fields
            .map(|ms| Timestamp::from_millisecond(ms.parse().unwrap()).unwrap())
            .take_while(before_horizon)
            .collect();
        let cal = match Calendar::parse_in(expr, zone) {
            Ok(cal) => cal,
            // Quartz takes an expression that never fires, and finds nothing.
            Err(e) if e.is_never_fires() && theirs.is_empty() => continue,
            Err(e) => panic!("{e}; Quartz: {theirs:?}"),
        };
        let ours: Vec<Timestamp> = cal
            .fire_times(*after)
            .map(|z| z.timestamp())
            .take(N)
            .take_while(before_horizon)
            .collect();
        compared += ours.len().min(theirs.len());
        if ours != theirs {
            wrong.push(format!(
                "`{expr}` in {zone} after {after}:\n  ours   {ours:?}\n  Quartz {theirs:?}"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} cases differ:\n{}",
        wrong.len(),
        cases.len(),
        wrong[..wrong.len().min(30)].join("\n")
    );
    // Most cases compare all N fire times; a check that the horizon did not
    // leave the test comparing nothing.
    assert!(
        compared > cases.len() * N / 2,
        "only {compared} fire times compared"
    );
    eprintln!(
        "Quartz agrees on {compared} fire times of {} cases",
        cases.len()
    );
}

/// Quartz on the DST table's rows (`cargo test -p schedulers --lib
/// calendar::tests::quartz -- --nocapture` prints them beside ours): it
/// differs from the rule on purpose. Quartz 2.3.2 skips a wall-clock time
/// the zone skips (no run that day), and fires a repeated one at its
/// second occurrence only, even for an every-hour expression (whose first
/// occurrence it loses).
#[test]
fn quartz_at_transitions() {
    let Some((javac, java, jar)) = toolchain_or_skip() else {
        return;
    };
    // Unix rows become Quartz's syntax: second 0, `?` for the weekday.
    let quartz = |expr: &str| match expr.split(' ').count() {
        5 => format!(
            "0 {}",
            expr.strip_suffix(" *")
                .map_or(expr.to_owned(), |e| format!("{e} ?"))
        ),
        _ => expr.to_owned(),
    };
    let input: String = CASES
        .iter()
        .map(|c| {
            format!(
                "{}\t{}\t{}\t{}\n",
                quartz(c.expr),
                c.zone,
                super::ts(c.after).as_millisecond(),
                c.expected.len()
            )
        })
        .collect();
    let lines = run_quartz(&javac, &java, &jar, &input);
    let mut rows = vec![
        "| zone | expression | ours | Quartz 2.3.2 |".to_owned(),
        "|---|---|---|---|".to_owned(),
    ];
    let mut quartz_fires = Vec::new();
    for (case, line) in CASES.iter().zip(&lines) {
        let mut fields = line.split('\t');
        assert_eq!(
            fields.next(),
            Some("ok"),
            "Quartz refused {}: {line}",
            quartz(case.expr)
        );
        let zone = TimeZone::get(case.zone).unwrap();
        let theirs: Vec<String> = fields
            .map(|ms| {
                Timestamp::from_millisecond(ms.parse().unwrap())
                    .unwrap()
                    .to_zoned_datetime(zone.clone())
                    .strftime("%FT%T%:z")
                    .to_string()
            })
            .collect();
        rows.push(format!(
            "| {} | `{}` | {} | {} |",
            case.zone,
            case.expr,
            case.expected.join(", "),
            theirs.join(", ")
        ));
        quartz_fires.push(theirs);
    }
    println!("{}", rows.join("\n"));
    let row = |zone: &str, transition: &str, expr: &str| {
        let i = CASES
            .iter()
            .position(|c| c.zone == zone && c.transition == Some(transition) && c.expr == expr)
            .unwrap();
        quartz_fires[i]
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
    };
    // The skipped 02:30 of 2024-03-31 does not run at all.
    assert_eq!(
        row("Europe/Berlin", "2024-03-31T01:00:00Z", "30 2 * * *"),
        ["2024-04-01T02:30:00+02:00", "2024-04-02T02:30:00+02:00"]
    );
    // The repeated 01:30 runs at its second occurrence.
    assert_eq!(
        row("America/New_York", "2024-11-03T06:00:00Z", "30 1 * * *"),
        ["2024-11-03T01:30:00-05:00", "2024-11-04T01:30:00-05:00"]
    );
    // Hourly loses the first 02:00.
    assert_eq!(
        row("Europe/Berlin", "2024-10-27T01:00:00Z", "0 * * * *"),
        [
            "2024-10-27T01:00:00+02:00",
            "2024-10-27T02:00:00+01:00",
            "2024-10-27T03:00:00+01:00",
            "2024-10-27T04:00:00+01:00"
        ]
    );
}
