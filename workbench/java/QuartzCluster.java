package peers;

import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.FileDescriptor;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Date;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.quartz.Job;
import org.quartz.JobBuilder;
import org.quartz.JobExecutionContext;
import org.quartz.JobExecutionException;
import org.quartz.JobKey;
import org.quartz.Scheduler;
import org.quartz.SchedulerException;
import org.quartz.Trigger;
import org.quartz.TriggerBuilder;
import org.quartz.TriggerKey;
import org.quartz.impl.StdSchedulerFactory;

/**
 * A Quartz cluster on PostgreSQL, as its users run one: every node a
 * {@code StdSchedulerFactory} scheduler with Quartz's shipped defaults and
 * {@code JobStoreTX}, {@code PostgreSQLDelegate},
 * {@code isClustered=true} (nodes share the database and nothing else;
 * Quartz's default JDBC pool, c3p0, of 10 connections), the schema from
 * Quartz's own {@code tables_postgres.sql}. The workbench starts the
 * PostgreSQL server ({@code workbench::postgres}) and this driver in a JVM
 * of its own; the driver creates the schema and the jobs through a producer
 * scheduler that never starts (a client, {@code ZeroSizeThreadPool}), then
 * starts the worker JVMs, children of this one, each one node:
 *
 * <pre>
 *   java peers.QuartzCluster bench --url JDBC --pg-pid PID --shape drain|paced --workers N --jobs J --threads T
 *       [--window-ms W] [--record]
 *   java peers.QuartzCluster calendar --url JDBC --pg-pid PID --workers N --threads T --schedules S --every-s E
 *       --run-for-ms R --grace-ms G --zone Z
 *   java peers.QuartzCluster work --url JDBC --threads T --instance NAME [--record]
 * </pre>
 *
 * <p>Each also takes {@code --set "key=value;…"}: Quartz properties set on
 * every node and the producer on top of the above.
 *
 * <p>{@code bench} prints one JSON line in the format of the distributed
 * workload's other harnesses: drain (N no-op jobs already due, then the
 * nodes start: jobs/s from the first start to the last end) or paced (N jobs
 * due evenly over the window: lateness, start − due, ms); the database's
 * CPU per job (the postmaster and its children from {@code /proc}),
 * transactions per job ({@code pg_stat_database}) and the mean number of
 * sessions waiting for a lock ({@code pg_stat_activity}, sampled every
 * 10 ms) over the measured window. {@code calendar} prints the
 * {@code calendar} workload's report ({@link QuartzCalendar}). With
 * {@code --record} every run also inserts a row into
 * {@code workbench_runs(job, node)}, so a test reads back from the database
 * that each job ran once.
 *
 * <p>A worker writes {@code ready}, then one line per run ({@code r I START_MS
 * END_MS}) or calendar fire ({@code c K US}), and ends (its scheduler shut
 * down, waiting for running jobs) at the end of its stdin.
 */
final class QuartzCluster {
    private QuartzCluster() {
    }

    /** The cluster's scheduler name: the SCHED_NAME every node shares. */
    static final String CLUSTER = "workbench";

    private static final PrintStream OUT = new PrintStream(new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16), false, StandardCharsets.UTF_8);

    public static void main(String[] args) throws Exception {
        Harness.quietLogs();
        if (args.length < 1) {
            usage();
        }
        Map<String, String> o = options(Arrays.copyOfRange(args, 1, args.length));
        overrides = o.getOrDefault("set", "");
        switch (args[0]) {
            case "work":
                work(o);
                break;
            case "bench":
                bench(o);
                break;
            case "calendar":
                calendar(o);
                break;
            default:
                usage();
        }
        OUT.flush();
        // c3p0's helper threads are not daemons.
        System.exit(0);
    }

    private static void usage() {
        System.err.println("usage: java peers.QuartzCluster bench|calendar|work --url JDBC [options] (see the class's documentation)");
        System.exit(2);
    }

    static Map<String, String> options(String[] args) {
        Map<String, String> o = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            if (!args[i].startsWith("--")) {
                throw new IllegalArgumentException("expected --option, got " + args[i]);
            }
            String key = args[i].substring(2);
            if (key.equals("record")) {
                o.put(key, "true");
            } else if (i + 1 < args.length) {
                o.put(key, args[++i]);
            } else {
                throw new IllegalArgumentException("--" + key + " wants a value");
            }
        }
        if (!o.containsKey("url")) {
            throw new IllegalArgumentException("--url is required");
        }
        return o;
    }

    static long num(Map<String, String> o, String key, long dflt) {
        String v = o.get(key);
        if (v == null) {
            return dflt;
        }
        long n = Long.parseLong(v);
        if (n < 0) {
            throw new IllegalArgumentException("--" + key + " must not be negative");
        }
        return n;
    }

    /**
     * Quartz properties set on top of the cluster's, on every node and the
     * producer: {@code --set "key=value;key=value"} (the workbench passes
     * {@code WORKBENCH_QUARTZ_SET}), to measure a setting users change.
     */
    private static String overrides = "";

    /** A node's (or the producer's) properties: Quartz's defaults, the JDBC store, clustered. */
    static Properties properties(String url, String instance, int threads) {
        Properties p = QuartzPeer.defaults();
        p.setProperty("org.quartz.scheduler.instanceName", CLUSTER);
        p.setProperty("org.quartz.scheduler.instanceId", instance);
        if (threads > 0) {
            p.setProperty("org.quartz.threadPool.threadCount", Integer.toString(threads));
        } else {
            p.setProperty("org.quartz.threadPool.class", "org.quartz.simpl.ZeroSizeThreadPool");
            p.remove("org.quartz.threadPool.threadCount");
            p.remove("org.quartz.threadPool.threadPriority");
            p.remove("org.quartz.threadPool.threadsInheritContextClassLoaderOfInitializingThread");
        }
        p.setProperty("org.quartz.jobStore.class", "org.quartz.impl.jdbcjobstore.JobStoreTX");
        p.setProperty("org.quartz.jobStore.driverDelegateClass", "org.quartz.impl.jdbcjobstore.PostgreSQLDelegate");
        p.setProperty("org.quartz.jobStore.isClustered", "true");
        p.setProperty("org.quartz.jobStore.dataSource", "qds");
        p.setProperty("org.quartz.dataSource.qds.driver", "org.postgresql.Driver");
        p.setProperty("org.quartz.dataSource.qds.URL", url);
        p.setProperty("org.quartz.dataSource.qds.user", "postgres");
        p.setProperty("org.quartz.dataSource.qds.password", "");
        for (String kv : overrides.split(";")) {
            int eq = kv.indexOf('=');
            if (eq > 0) {
                p.setProperty(kv.substring(0, eq).trim(), kv.substring(eq + 1).trim());
            } else if (!kv.isBlank()) {
                throw new IllegalArgumentException("--set wants key=value;key=value, got " + kv);
            }
        }
        return p;
    }

    // ---------------------------------------------------------------- worker

    /** Where a worker's runs are recorded: {@code workbench_runs} (--record). */
    private static volatile String recordAs;
    private static String url;
    private static final ThreadLocal<Connection> RECORDER = new ThreadLocal<>();

    /** A drain or paced job ({@code j<I>}): reports its start and end. */
    public static final class Run implements Job {
        @Override
        public void execute(JobExecutionContext ctx) throws JobExecutionException {
            long start = System.currentTimeMillis();
            String name = ctx.getJobDetail().getKey().getName();
            String node = recordAs;
            if (node != null) {
                try {
                    Connection c = RECORDER.get();
                    if (c == null) {
                        c = DriverManager.getConnection(url);
                        RECORDER.set(c);
                    }
                    try (PreparedStatement st = c.prepareStatement("INSERT INTO workbench_runs (job, node) VALUES (?, ?)")) {
                        st.setInt(1, Integer.parseInt(name.substring(1)));
                        st.setString(2, node);
                        st.executeUpdate();
                    }
                } catch (SQLException e) {
                    throw new JobExecutionException(e);
                }
            }
            long end = System.currentTimeMillis();
            OUT.println("r " + name.substring(1) + " " + start + " " + end);
        }
    }

    static void work(Map<String, String> o) throws Exception {
        url = o.get("url");
        String instance = o.getOrDefault("instance", "node");
        if (o.containsKey("record")) {
            recordAs = instance;
        }
        QuartzCalendar.sink = (k, us) -> OUT.println("c " + k + " " + us);
        Scheduler s = new StdSchedulerFactory(properties(url, instance, (int) num(o, "threads", 4))).getScheduler();
        s.start();
        OUT.println("ready");
        OUT.flush();
        Thread flusher = new Thread(() -> {
            while (!Thread.currentThread().isInterrupted()) {
                OUT.flush();
                try {
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "flusher");
        flusher.setDaemon(true);
        flusher.start();
        // Until the driver closes our stdin.
        while (System.in.read() >= 0) {
            // Nothing is said on stdin.
        }
        s.shutdown(true);
        flusher.interrupt();
        OUT.println("stopped");
        OUT.flush();
    }

    // ---------------------------------------------------------------- driver

    /** Creates Quartz's tables from its own tables_postgres.sql (and the test's record table). */
    static void schema(Connection c, boolean record) throws IOException, SQLException {
        String sql;
        try (InputStream in = Scheduler.class.getResourceAsStream("/org/quartz/impl/jdbcjobstore/tables_postgres.sql")) {
            if (in == null) {
                throw new IOException("tables_postgres.sql is not in the Quartz jar");
            }
            sql = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        try (Statement st = c.createStatement()) {
            st.execute(sql);
            if (record) {
                st.execute("CREATE TABLE workbench_runs (job INTEGER NOT NULL, node TEXT NOT NULL)");
            }
        }
    }

    /** A scheduler that only schedules (never started, no threads): the application's side. */
    static Scheduler producer(String url) throws SchedulerException {
        return new StdSchedulerFactory(properties(url, "producer", 0)).getScheduler();
    }

    /** CPU time of a process (all its threads) from /proc, µs; with its reaped children too. */
    static long procCpuUs(long pid, boolean reaped) {
        try {
            String stat = new String(Files.readAllBytes(Paths.get("/proc/" + pid + "/stat")), StandardCharsets.US_ASCII);
            // Fields after the command name (which may hold spaces): state is field 3.
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            long ticks = Long.parseLong(f[11]) + Long.parseLong(f[12]);
            if (reaped) {
                ticks += Long.parseLong(f[13]) + Long.parseLong(f[14]);
            }
            // USER_HZ is 100 on Linux.
            return ticks * 10_000L;
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }

    /** The database's CPU, µs: the postmaster, its live children and those it has reaped. */
    static long pgCpuUs(long postmaster) {
        long sum = procCpuUs(postmaster, true);
        ProcessHandle pm = ProcessHandle.of(postmaster).orElse(null);
        if (pm != null) {
            for (ProcessHandle c : (Iterable<ProcessHandle>) pm.children()::iterator) {
                sum += procCpuUs(c.pid(), false);
            }
        }
        return sum;
    }

    static long transactions(Connection c) throws SQLException {
        try (Statement st = c.createStatement();
             ResultSet r = st.executeQuery("SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()")) {
            r.next();
            return r.getLong(1);
        }
    }

    /** Samples the sessions waiting for a lock every 10 ms until stopped; each sample is one transaction. */
    static final class LockSampler extends Thread {
        private final Connection c;
        long samples;
        long waiting;
        volatile boolean stop;

        LockSampler(String url) throws SQLException {
            super("lock-sampler");
            setDaemon(true);
            c = DriverManager.getConnection(url);
        }

        @Override
        public void run() {
            try (Statement st = c.createStatement()) {
                while (!stop) {
                    try (ResultSet r = st.executeQuery("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'")) {
                        r.next();
                        waiting += r.getLong(1);
                        samples++;
                    }
                    Thread.sleep(10);
                }
            } catch (SQLException | InterruptedException e) {
                System.err.println("quartz-cluster: the lock sampler stopped: " + e);
            }
        }

        double mean() throws InterruptedException {
            stop = true;
            join();
            try {
                c.close();
            } catch (SQLException e) {
                // Closing a connection we are done with.
            }
            return samples == 0 ? 0 : (double) waiting / samples;
        }
    }

    /** The worker JVMs: started, their lines read, stopped. */
    static final class Workers {
        final List<Process> procs = new ArrayList<>();
        final CountDownLatch ready;
        final List<Thread> readers = new ArrayList<>();
        final int jobs;
        final int[] runs;
        final long[] start;
        final long[] end;
        long total;
        final List<long[]> fires = new ArrayList<>();
        final Object lock = new Object();

        Workers(String url, int n, int threads, int jobs, boolean record) throws IOException {
            this.jobs = jobs;
            runs = new int[Math.max(1, jobs)];
            start = new long[Math.max(1, jobs)];
            end = new long[Math.max(1, jobs)];
            ready = new CountDownLatch(n);
            String java = ProcessHandle.current().info().command().orElse("java");
            for (int i = 0; i < n; i++) {
                List<String> cmd = new ArrayList<>(List.of(java, "-XX:+UseG1GC", "-Xmx1g", "-cp", System.getProperty("java.class.path"),
                    "peers.QuartzCluster", "work", "--url", url, "--threads", Integer.toString(threads), "--instance", "node-" + (i + 1)));
                if (record) {
                    cmd.add("--record");
                }
                if (!overrides.isEmpty()) {
                    cmd.addAll(List.of("--set", overrides));
                }
                Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
                procs.add(p);
                Thread t = new Thread(() -> read(p), "worker-" + (i + 1));
                t.setDaemon(true);
                t.start();
                readers.add(t);
            }
        }

        private void read(Process p) {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (line.equals("ready")) {
                        ready.countDown();
                    } else if (line.startsWith("r ")) {
                        String[] f = line.split(" ");
                        int i = Integer.parseInt(f[1]);
                        synchronized (lock) {
                            if (runs[i]++ == 0) {
                                start[i] = Long.parseLong(f[2]);
                                end[i] = Long.parseLong(f[3]);
                            }
                            total++;
                            lock.notifyAll();
                        }
                    } else if (line.startsWith("c ")) {
                        String[] f = line.split(" ");
                        synchronized (lock) {
                            fires.add(new long[] {Long.parseLong(f[1]), Long.parseLong(f[2])});
                        }
                    }
                }
            } catch (IOException e) {
                System.err.println("quartz-cluster: reading a worker: " + e);
            }
        }

        void awaitReady() throws InterruptedException {
            if (!ready.await(120, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the Quartz nodes did not start within 120 s");
            }
        }

        /** Waits until every job has run at least once; false at the time limit. */
        boolean awaitRuns(long limitMs) throws InterruptedException {
            long until = System.currentTimeMillis() + limitMs;
            synchronized (lock) {
                while (distinct() < jobs) {
                    long left = until - System.currentTimeMillis();
                    if (left <= 0) {
                        return false;
                    }
                    lock.wait(Math.min(left, 100));
                }
            }
            return true;
        }

        int distinct() {
            int d = 0;
            for (int r : runs) {
                d += r > 0 ? 1 : 0;
            }
            return jobs == 0 ? 0 : d;
        }

        long cpuUs() {
            long sum = 0;
            for (Process p : procs) {
                sum += procCpuUs(p.pid(), false);
            }
            return sum;
        }

        /** Closes their stdin (they shut down, running jobs finish) and waits for them. */
        void stop() throws Exception {
            for (Process p : procs) {
                p.getOutputStream().close();
            }
            for (Process p : procs) {
                if (!p.waitFor(60, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                }
            }
            for (Thread t : readers) {
                t.join(5_000);
            }
        }

        void kill() {
            for (Process p : procs) {
                p.destroyForcibly();
            }
        }
    }

    static void sleepUntil(long ms) throws InterruptedException {
        long left;
        while ((left = ms - System.currentTimeMillis()) > 0) {
            Thread.sleep(left);
        }
    }

    static long percentile(long[] sorted, double p) {
        if (sorted.length == 0) {
            return 0;
        }
        int i = (int) Math.min(sorted.length, Math.max(1, Math.ceil(sorted.length * p))) - 1;
        return sorted[i];
    }

    static String load() {
        try {
            String[] f = new String(Files.readAllBytes(Paths.get("/proc/loadavg")), StandardCharsets.US_ASCII).split(" ");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (IOException e) {
            return "";
        }
    }

    /**
     * How long before the first due time the nodes start: enough for their
     * JVMs to come up, and well within one idle wait (30 s), so the first
     * acquisition of every node finds the first jobs.
     */
    static final long NODES_AHEAD_MS = 6_000;

    static void bench(Map<String, String> o) throws Exception {
        String url = o.get("url");
        String shape = o.getOrDefault("shape", "paced");
        if (!shape.equals("drain") && !shape.equals("paced")) {
            throw new IllegalArgumentException("--shape wants drain or paced, got " + shape);
        }
        boolean drain = shape.equals("drain");
        int workers = (int) num(o, "workers", 1);
        int jobs = (int) num(o, "jobs", 1000);
        int threads = (int) num(o, "threads", 4);
        long windowMs = drain ? 0 : num(o, "window-ms", 4000);
        long pgPid = num(o, "pg-pid", 0);
        boolean record = o.containsKey("record");
        try (Connection admin = DriverManager.getConnection(url)) {
            schema(admin, record);
            Scheduler producer = producer(url);
            long first = System.currentTimeMillis();
            if (!drain) {
                // The jobs are created before the nodes start, due from a start that creating them all ends well before.
                long far = first + 3_600_000L;
                int probe = Math.min(100, jobs);
                long t0 = System.nanoTime();
                for (int i = 0; i < probe; i++) {
                    add(producer, i, far, "probe");
                }
                double perMs = (System.nanoTime() - t0) / 1e6 / probe;
                for (int i = 0; i < probe; i++) {
                    producer.unscheduleJob(new TriggerKey("j" + i, "probe"));
                }
                first = System.currentTimeMillis() + Math.max(NODES_AHEAD_MS, (long) (2 * perMs * jobs)) + 2_000;
            }
            long[] due = new long[jobs];
            long c0 = System.nanoTime();
            for (int i = 0; i < jobs; i++) {
                due[i] = first + (jobs > 1 ? windowMs * i / (jobs - 1) : 0);
                add(producer, i, due[i], null);
            }
            double insertPerS = jobs / ((System.nanoTime() - c0) / 1e9);
            producer.shutdown();
            if (!drain && System.currentTimeMillis() > first - 1_000) {
                throw new IllegalStateException("creating " + jobs + " jobs ended " + (System.currentTimeMillis() - first)
                    + " ms before their first due time, beyond the lead measured on a few");
            }
            if (!drain) {
                sleepUntil(first - NODES_AHEAD_MS);
            }
            long tx0 = drain ? transactions(admin) : 0;
            long cpu0 = drain ? pgCpuUs(pgPid) : 0;
            LockSampler sampler = null;
            if (drain) {
                sampler = new LockSampler(url);
                sampler.start();
            }
            Workers w = new Workers(url, workers, threads, jobs, record);
            try {
                w.awaitReady();
                if (!drain) {
                    sleepUntil(first);
                    tx0 = transactions(admin);
                    cpu0 = pgCpuUs(pgPid);
                    sampler = new LockSampler(url);
                    sampler.start();
                }
                long limit = num(o, "timeout-s", 600) * 1000;
                if (!w.awaitRuns(limit)) {
                    w.kill();
                    System.err.println("quartz-cluster: " + w.distinct() + " of " + jobs + " jobs ran within " + limit / 1000 + " s");
                    System.exit(1);
                }
                long cpu = pgCpuUs(pgPid) - cpu0;
                double waiters = sampler.mean();
                String loadAvg = load();
                w.stop();
                // Stopped nodes' sessions have ended and flushed their statistics.
                long tx = transactions(admin) - tx0 - sampler.samples - 1;
                long firstStart = Long.MAX_VALUE;
                long lastEnd = 0;
                long[] late = new long[jobs];
                for (int i = 0; i < jobs; i++) {
                    firstStart = Math.min(firstStart, w.start[i]);
                    lastEnd = Math.max(lastEnd, w.end[i]);
                    late[i] = w.start[i] - due[i];
                }
                Arrays.sort(late);
                long from = drain ? firstStart : first;
                long elapsed = Math.max(1, lastEnd - from);
                OUT.println("{\"shape\":\"" + shape + "\",\"peer\":\"quartz\",\"workers\":" + workers + ",\"threads\":" + threads
                    + ",\"jobs\":" + jobs + ",\"runs\":" + w.total + ",\"distinct\":" + w.distinct() + ",\"elapsed_ms\":" + elapsed
                    + ",\"jobs_per_sec\":" + Math.round(jobs * 1000.0 / elapsed)
                    + ",\"lateness_ms\":{\"p50\":" + percentile(late, 0.5) + ",\"p90\":" + percentile(late, 0.9)
                    + ",\"p99\":" + percentile(late, 0.99) + ",\"max\":" + (jobs > 0 ? late[jobs - 1] : 0) + "}"
                    + ",\"db\":{\"cpu_us_per_job\":" + Json.number((double) cpu / Math.max(1, jobs))
                    + ",\"transactions_per_job\":" + Json.number((double) tx / Math.max(1, jobs))
                    + ",\"lock_waiters\":" + Json.number(waiters) + "}"
                    + ",\"insert_per_s\":" + Json.number(insertPerS) + ",\"load\":" + Json.quote(loadAvg) + "}");
            } finally {
                w.kill();
            }
        }
    }

    /** Job {@code j<i>} and its one-shot trigger, due at {@code dueMs}. */
    static void add(Scheduler s, int i, long dueMs, String group) throws SchedulerException {
        JobKey jk = new JobKey("j" + i, group);
        Trigger t = TriggerBuilder.newTrigger().withIdentity(new TriggerKey("j" + i, group)).forJob(jk).startAt(new Date(dueMs)).build();
        s.scheduleJob(JobBuilder.newJob(Run.class).withIdentity(jk).build(), t);
    }

    /** Bytes of Quartz's tables, their indexes and TOAST. */
    static long relationBytes(Connection c) throws SQLException {
        try (Statement st = c.createStatement();
             ResultSet r = st.executeQuery("SELECT coalesce(sum(pg_total_relation_size(oid)), 0) FROM pg_class WHERE relkind = 'r' AND relname LIKE 'qrtz\\_%'")) {
            r.next();
            return r.getLong(1);
        }
    }

    static void calendar(Map<String, String> o) throws Exception {
        String url = o.get("url");
        long pgPid = num(o, "pg-pid", 0);
        QuartzCalendar.Spec spec = new QuartzCalendar.Spec((int) num(o, "schedules", 100), (int) num(o, "every-s", 60),
            num(o, "run-for-ms", 20_000), num(o, "grace-ms", 1_000), o.getOrDefault("zone", "UTC"));
        try (Connection admin = DriverManager.getConnection(url)) {
            schema(admin, false);
            Scheduler producer = producer(url);
            // Before the probe: its deleted schedules leave pages the real ones
            // fill, so at a few schedules the growth after it can be nothing.
            long bytes0 = relationBytes(admin);
            long startMs = QuartzCalendar.start(producer, spec, Math.min(100, spec.schedules), NODES_AHEAD_MS + 2_000);
            double ns = QuartzCalendar.create(producer, spec, startMs);
            // Autovacuum's statistics are not needed: the size is the relations' pages.
            long bytes = relationBytes(admin) - bytes0;
            producer.shutdown();
            sleepUntil(startMs - NODES_AHEAD_MS);
            Workers w = new Workers(url, (int) num(o, "workers", 2), (int) num(o, "threads", 4), 0, false);
            try {
                w.awaitReady();
                sleepUntil(startMs);
                long cpu0 = w.cpuUs();
                long pg0 = pgCpuUs(pgPid);
                sleepUntil(startMs + spec.runForMs + spec.graceMs);
                long cpu = w.cpuUs() - cpu0;
                long pg = pgCpuUs(pgPid) - pg0;
                w.stop();
                StringBuilder fires = new StringBuilder("[");
                long from = startMs * 1000 - 1_000_000;
                synchronized (w.lock) {
                    for (long[] f : w.fires) {
                        if (f[1] >= from) {
                            fires.append(fires.length() > 1 ? "," : "").append('[').append(f[0]).append(',').append(f[1]).append(']');
                        }
                    }
                }
                OUT.println(QuartzCalendar.report(startMs, fires.append(']').toString(), ns, cpu, pg, (double) bytes / spec.schedules));
            } finally {
                w.kill();
            }
        }
    }
}
