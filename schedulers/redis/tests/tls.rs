//! `rediss://` (feature `tls`) against a local `redis-server` with a
//! TLS port and a certificate the test makes with the `openssl` CLI: the
//! scheduler and a worker (claims, acks and the Pub/Sub wake-ups) over TLS,
//! a password on top, and a refused server certificate.

#![cfg(feature = "tls")]

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use schedulers_redis::{Config, Error, Job, LocalRedis, RedisScheduler, Tls, Worker};

use crate::support::{redis_installed, wait_until};

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA and a server certificate for 127.0.0.1 signed by it, in `dir`:
/// `ca.crt`, `server.crt`, `server.key`.
fn make_certs(dir: &Path) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-days",
            "2",
            "-subj",
            "/CN=schedulers test CA",
        ],
    );
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
    );
    std::fs::write(
        dir.join("san.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "2",
            "-extfile",
            "san.ext",
        ],
    );
}

fn openssl_installed() -> bool {
    let found = Command::new("openssl")
        .arg("version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found && std::env::var_os("CI").is_some() {
        panic!("openssl is not installed, and CI is set: the TLS test must run");
    }
    found
}

#[test]
fn the_scheduler_and_a_worker_run_over_tls_with_a_password() {
    if !redis_installed() || !openssl_installed() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("schedulers-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    make_certs(&dir);
    let redis = LocalRedis::builder()
        .tls(
            &dir.join("server.crt"),
            &dir.join("server.key"),
            &dir.join("ca.crt"),
        )
        .set("requirepass", "tls-pass")
        .start()
        .unwrap();
    let ca = std::fs::read(dir.join("ca.crt")).unwrap();
    let tls_url = redis.tls_url().unwrap();
    let url = tls_url.replace("rediss://", "rediss://:tls-pass@");
    let config = Config::default()
        .namespace("tls")
        .shards(2)
        .tls(Tls::system_roots().root_ca(ca));
    let s = RedisScheduler::connect(&url, config.clone()).unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let w = Worker::builder(&url, config.clone())
        // Only the wake-up message (over TLS Pub/Sub) brings the job in time.
        .poll_interval(Duration::from_secs(60))
        .handler("noop", move |_| {
            r.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
        .start()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    for i in 0..20 {
        s.schedule(
            &Job::new(format!("t{i}"), "noop")
                .unwrap()
                .after(Duration::from_millis(50)),
        )
        .unwrap();
    }
    assert!(wait_until(Duration::from_secs(10), || ran
        .load(Ordering::SeqCst)
        == 20));
    w.shutdown();
    w.join();
    assert_eq!(s.job_count().unwrap(), 0);

    // A server whose certificate no trusted CA signed is refused.
    let untrusted = Config::default()
        .namespace("tls")
        .shards(2)
        .retry_for(Duration::ZERO);
    assert!(matches!(
        RedisScheduler::connect(&url, untrusted),
        Err(Error::Redis(_))
    ));
    // No password: refused too.
    assert!(matches!(
        RedisScheduler::connect(&tls_url, config.retry_for(Duration::ZERO)),
        Err(Error::Redis(_))
    ));
    drop(redis);
    let _ = std::fs::remove_dir_all(&dir);
}
