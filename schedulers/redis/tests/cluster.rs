//! The scheduler on a Redis Cluster: shards spread over the masters by their
//! hash tags, and a master killed mid-run and replaced by its replica, with
//! and without acknowledged replication.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schedulers_redis::{Config, Durability, Job, LocalCluster, RedisScheduler};

use crate::support::{
    all_events, check, drained, redis_installed, shared_cluster, signal, wait_until, Expect,
    WorkerOpts, WorkerProc,
};

fn keyslot(url: &str, key: &str) -> u16 {
    let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
    redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query(&mut con)
        .unwrap()
}

#[test]
fn shards_spread_over_the_masters_by_their_hash_tags() {
    let Some(c) = shared_cluster() else { return };
    let be = c.backend("spread");
    let shards = 16;
    let s = RedisScheduler::connect(
        &be.url,
        Config::default().namespace("spread").shards(shards),
    )
    .unwrap();
    let jobs: Vec<Job> = (0..400)
        .map(|i| {
            Job::new(format!("j{i}"), "noop")
                .unwrap()
                .after(Duration::from_secs(3600))
        })
        .collect();
    assert!(s.schedule_many(&jobs).unwrap().iter().all(Result::is_ok));
    assert_eq!(s.job_count().unwrap(), 400);
    // Each master holds exactly the shards whose slot it serves: the job
    // hashes, counted on every node.
    let mut per_node: HashMap<String, Vec<String>> = HashMap::new();
    for url in &be.nodes {
        let mut con = redis::Client::open(url.as_str())
            .unwrap()
            .get_connection()
            .unwrap();
        let role: String = redis::cmd("INFO")
            .arg("replication")
            .query(&mut con)
            .unwrap();
        if !role.contains("role:master") {
            continue;
        }
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg("{tw:spread:*}:m")
            .query(&mut con)
            .unwrap();
        per_node.insert(url.clone(), keys);
    }
    let total: usize = per_node.values().map(Vec::len).sum();
    assert_eq!(
        total, shards as usize,
        "one job hash per shard: {per_node:?}"
    );
    let used = per_node.values().filter(|k| !k.is_empty()).count();
    eprintln!(
        "shards per master: {:?}",
        per_node.values().map(Vec::len).collect::<Vec<_>>()
    );
    assert!(
        used >= 2,
        "16 shards spread over several masters: {per_node:?}"
    );
    // The slot the client routes a shard to is Redis's own.
    for keys in per_node.values() {
        for k in keys {
            let slot = keyslot(&be.url, k);
            assert_eq!(slot, keyslot(&be.url, &k.replace(":m", ":idx")));
        }
    }
}

/// What one failover run measured (printed whole through `Debug`).
#[derive(Debug)]
#[allow(dead_code)]
struct Failover {
    /// Schedules acknowledged to the producer.
    acked: usize,
    /// Acknowledged schedules that never ran.
    lost: usize,
    /// From the earliest lost acknowledgement to the kill.
    loss_window_ms: Option<u128>,
    /// Fires that ran twice with the same fence (a claim rolled back).
    same_fence_repeats: usize,
    /// From the kill to the replica serving the slot.
    failover_ms: u128,
    /// Producer calls that failed after all retries.
    producer_errors: usize,
}

/// Runs two workers and a producer scheduling as fast as it can; pauses the
/// replica of shard 0's master (SIGSTOP) for `lag`, the way a slow link or a
/// partition delays replication, kills the master while the replica is
/// behind, resumes the replica, waits for it to take over, brings the old
/// master back (as a replica), lets everything drain and counts.
fn failover_run(
    cluster: &mut LocalCluster,
    dir: &Path,
    ns: &str,
    d: Durability,
    lag: Duration,
) -> Failover {
    let mut o = WorkerOpts::new(ns);
    o.shards = 8;
    o.durability = d;
    o.durability_timeout_ms = 500;
    o.lease_ms = 2000;
    o.heartbeat_ms = 400;
    let url = cluster.url();
    let config = o.config().retry_for(Duration::from_secs(20));
    let slot = keyslot(&url, &format!("{{tw:{ns}:0}}"));
    let victim = cluster.master_of(slot).unwrap();
    let workers: Vec<WorkerProc> = (0..2)
        .map(|i| WorkerProc::spawn(&url, dir, &format!("{ns}-w{i}"), &o))
        .collect();

    let stop = Arc::new(AtomicBool::new(false));
    let acked: Arc<Mutex<Vec<(String, Instant, i64)>>> = Arc::default();
    // Schedules that failed after every retry: they may or may not have
    // been stored (and run), so the checker leaves them out.
    let errors: Arc<Mutex<Vec<String>>> = Arc::default();
    let producer = {
        let (stop, acked, errors, url, config) = (
            stop.clone(),
            acked.clone(),
            errors.clone(),
            url.clone(),
            config.clone(),
        );
        let ns = ns.to_owned();
        std::thread::spawn(move || {
            let s = RedisScheduler::connect(&url, config).unwrap();
            // 16 KiB payloads: a few seconds of them outgrow the kernel's socket
            // buffers between master and replica, so what the replica has
            // not received yet is in the master's own output buffer, and
            // dies with it (as behind a partition).
            let payload = "x".repeat(16 << 10);
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let id = format!("{ns}-{i}");
                let job = Job::new(id.as_str(), "noop")
                    .unwrap()
                    .payload(&payload)
                    .unwrap()
                    .after(Duration::from_millis(200));
                match s.schedule(&job) {
                    Ok(due) => acked.lock().unwrap().push((id, Instant::now(), due)),
                    Err(_) => errors.lock().unwrap().push(id),
                }
                i += 1;
            }
        })
    };
    std::thread::sleep(Duration::from_millis(1500));
    let replica = cluster.replicas_of(victim).unwrap()[0];
    let replica_pid = cluster.node_mut(replica).unwrap().pid().unwrap();
    signal(replica_pid, "STOP");
    std::thread::sleep(lag);
    let killed_at = Instant::now();
    cluster.node_mut(victim).unwrap().kill();
    signal(replica_pid, "CONT");
    assert!(
        wait_until(Duration::from_secs(20), || cluster
            .master_of(slot)
            .is_ok_and(|p| p != victim)),
        "the replica of the killed master took over"
    );
    let failover_ms = killed_at.elapsed().as_millis();
    // The old master comes back and follows its replica, now the master.
    cluster.node_mut(victim).unwrap().start_again().unwrap();
    cluster.wait_ok(Duration::from_secs(30)).unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    stop.store(true, Ordering::Relaxed);
    producer.join().unwrap();

    assert!(
        wait_until(Duration::from_secs(60), || drained(&url, &o)),
        "every stored job runs once the cluster is back"
    );
    let mut workers = workers;
    for w in &mut workers {
        w.stop();
    }
    let refs: Vec<&WorkerProc> = workers.iter().collect();
    let events = all_events(&refs);
    let acked = acked.lock().unwrap().clone();
    let started: std::collections::HashSet<&str> = events
        .iter()
        .filter(|e| e.ev == "start")
        .map(|e| e.id.as_str())
        .collect();
    let lost: Vec<&(String, Instant, i64)> = acked
        .iter()
        .filter(|(id, _, _)| !started.contains(id.as_str()))
        .collect();
    let mut fences: HashMap<(String, i64), usize> = HashMap::new();
    for e in events.iter().filter(|e| e.ev == "start") {
        *fences.entry((e.fire_id(), e.fence)).or_default() += 1;
    }
    let report = Failover {
        acked: acked.len(),
        lost: lost.len(),
        loss_window_ms: lost
            .iter()
            .map(|(_, at, _)| killed_at.saturating_duration_since(*at).as_millis())
            .max(),
        same_fence_repeats: fences.values().filter(|&&n| n > 1).count(),
        failover_ms,
        producer_errors: errors.lock().unwrap().len(),
    };
    if d != Durability::Async {
        // Acknowledged replication: the whole history keeps every invariant.
        let jobs: BTreeMap<String, Expect> = acked
            .iter()
            .map(|(id, _, due)| (id.clone(), Expect::once(*due)))
            .collect();
        let maybe = errors.lock().unwrap().clone();
        let events: Vec<_> = events
            .into_iter()
            .filter(|e| !maybe.contains(&e.id))
            .collect();
        check(&events, &jobs);
    }
    report
}

#[test]
fn a_master_killed_mid_run_loses_acknowledged_writes_only_without_wait() {
    if !redis_installed() {
        return;
    }
    let mut cluster = LocalCluster::start(3, 1).expect("start a cluster");
    let dir = std::env::temp_dir().join(format!("schedulers-failover-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The replica is paused 2.5 s when its master dies: with 16 KiB
    // payloads, more than the socket buffers between them hold.
    let lag = Duration::from_millis(2500);
    let unacked = failover_run(&mut cluster, &dir, "fo-async", Durability::Async, lag);
    let acked = failover_run(&mut cluster, &dir, "fo-wait", Durability::Replicas(1), lag);
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("failover, Durability::Async: {unacked:?}");
    eprintln!("failover, Durability::Replicas(1): {acked:?}");
    assert_eq!(
        (acked.lost, acked.same_fence_repeats),
        (0, 0),
        "with WAIT 1 nothing acknowledged is lost and no claim is rolled back"
    );
    assert!(unacked.acked > 0 && acked.acked > 0);
}
