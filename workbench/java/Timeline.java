package peers;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;

/**
 * Runs one workload spec (serde JSON of {@code workbench::spec::Workload})
 * against one peer and returns its measurements, in the Rust runner's metric
 * names and units ({@code workbench::record::metric}).
 *
 * <p><b>Timeline</b> ({@code group}s), as {@code runner::timeline}: every
 * operation is drawn up front from the spec's seed with a bit-exact port of
 * the Rust generator, in the same order: per group {@code g} the stream
 * {@code Rng(seed, g + 1)} gives, timer by timer, the arrival gap (if the
 * group has an arrival process) and the first delay, then for a one-shot the
 * cancel coin and its time, then each heartbeat's gap and new delay;
 * a periodic timer is cancelled {@code run_for} after the start. The
 * operations are sorted by time, ties in generation order, and executed by
 * one driver thread in real time; each is timed alone with two clock reads,
 * less the measured cost of those reads ({@code timing_overhead}). A fire
 * stores its time into a preallocated slot. After the last operation the
 * driver waits until every timer that should fire has fired, at most until
 * the last deadline plus {@code grace}; then lateness, jitter, drift and
 * counts are computed from the cells exactly as the Rust runner does.
 *
 * <p><b>Sweep</b> ({@code sweep}), as {@code runner::sweep}: for each
 * pending count {@code n} (stream {@code Rng(seed, k)} for the k-th size):
 * schedule {@code n} timers, reset each once and cancel each once, both in
 * random orders, each phase timed as a whole by the driver thread's CPU
 * clock (as the Rust side); memory per pending timer is
 * the heap in use after full collections, before and after scheduling.
 */
final class Timeline {
    private static final int OP_SCHEDULE = 0;
    private static final int OP_RESET = 1;
    private static final int OP_CANCEL = 2;
    private static final int IDX_BITS = 28;
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private Timeline() {
    }

    /** One group of a timeline spec, checked. */
    static final class Group {
        final String name;
        final int count;
        final int kind; // 0 once, 1 fixed-rate, 2 fixed-delay
        final Dist delay;
        final boolean anchorStart;
        final long period;
        final long runFor;
        final double rate;
        final boolean poisson;
        final double cancelFraction;
        final Dist cancelAfter;
        final Dist every;
        final long until;
        final Dist resetDelay;

        Group(Map<String, Object> m, String f) {
            name = Harness.str(m, "name", f);
            double c = Harness.num(m, "count", f);
            if (c < 1 || c > (1 << 26) || c != Math.rint(c)) {
                throw new IllegalArgumentException(f + ".count: the Java harness takes 1 to 67108864 timers per group");
            }
            count = (int) c;
            String k = m.containsKey("kind") ? Harness.str(m, "kind", f) : "once";
            switch (k) {
                case "once": kind = 0; break;
                case "fixed-rate": kind = 1; break;
                case "fixed-delay": kind = 2; break;
                default: throw new IllegalArgumentException(f + ".kind: expected once, fixed-rate or fixed-delay, got '" + k + "'");
            }
            delay = Dist.parse(m.get("delay"), f + ".delay");
            String anchor = m.containsKey("anchor") ? Harness.str(m, "anchor", f) : "schedule";
            if (!anchor.equals("schedule") && !anchor.equals("start")) {
                throw new IllegalArgumentException(f + ".anchor: expected schedule or start");
            }
            anchorStart = anchor.equals("start");
            period = m.get("period") == null ? 0 : Dist.duration(m, "period", f);
            runFor = m.get("run_for") == null ? 0 : Dist.duration(m, "run_for", f);
            if (kind != 0 && (period <= 0 || runFor <= 0)) {
                throw new IllegalArgumentException(f + ".period: a periodic group needs a period and run_for above zero");
            }
            if (m.get("arrival") != null) {
                Map<String, Object> a = Harness.map(m.get("arrival"), f + ".arrival");
                rate = Harness.num(a, "rate", f + ".arrival");
                if (!(rate > 0)) {
                    throw new IllegalArgumentException(f + ".arrival.rate: must be above zero");
                }
                String p = a.containsKey("process") ? Harness.str(a, "process", f + ".arrival") : "poisson";
                poisson = !p.equals("uniform");
            } else {
                rate = 0;
                poisson = false;
            }
            if (m.get("cancel") != null) {
                Map<String, Object> x = Harness.map(m.get("cancel"), f + ".cancel");
                cancelFraction = Harness.num(x, "fraction", f + ".cancel");
                if (cancelFraction > 1) {
                    throw new IllegalArgumentException(f + ".cancel.fraction: must be within 0..=1");
                }
                cancelAfter = Dist.parse(x.get("after"), f + ".cancel.after");
            } else {
                cancelFraction = 0;
                cancelAfter = null;
            }
            if (m.get("reset") != null) {
                Map<String, Object> r = Harness.map(m.get("reset"), f + ".reset");
                every = Dist.parse(r.get("every"), f + ".reset.every");
                until = Dist.duration(r, "until", f + ".reset");
                resetDelay = r.get("delay") == null ? delay : Dist.parse(r.get("delay"), f + ".reset.delay");
            } else {
                every = null;
                until = 0;
                resetDelay = null;
            }
        }
    }

    /** A checked workload spec. */
    static final class Spec {
        final String name;
        final long seed;
        final long grace;
        final List<Group> groups = new ArrayList<>();
        final long[] sizes;
        final Dist sweepDelay;
        final boolean sweepReset;
        final double sweepCancel;

        Spec(Map<String, Object> m, String f) {
            name = Harness.str(m, "name", f);
            seed = Harness.u64(m, "seed", f);
            grace = m.get("grace") == null ? 1_000_000_000L : Dist.duration(m, "grace", f);
            Object gs = m.get("group");
            if (gs != null) {
                List<Object> l = Harness.list(m, "group", f);
                long total = 0;
                for (int g = 0; g < l.size(); g++) {
                    Group gr = new Group(Harness.map(l.get(g), f + ".group[" + g + "]"), f + ".group[" + g + "]");
                    total += gr.count;
                    groups.add(gr);
                }
                if (total >= (1L << IDX_BITS)) {
                    throw new IllegalArgumentException(f + ".group: the Java harness takes fewer than 2^28 timers in all");
                }
            }
            if (m.get("sweep") != null) {
                Map<String, Object> s = Harness.map(m.get("sweep"), f + ".sweep");
                List<Object> l = Harness.list(s, "sizes", f + ".sweep");
                sizes = new long[l.size()];
                for (int k = 0; k < sizes.length; k++) {
                    Object o = l.get(k);
                    if (!(o instanceof Long) || (Long) o < 1 || (Long) o > (1 << 28)) {
                        throw new IllegalArgumentException(f + ".sweep.sizes: whole numbers from 1 to 2^28");
                    }
                    sizes[k] = (Long) o;
                }
                sweepDelay = Dist.parse(s.get("delay"), f + ".sweep.delay");
                sweepReset = !Boolean.FALSE.equals(s.get("reset"));
                sweepCancel = s.get("cancel") == null ? 1.0 : Harness.num(s, "cancel", f + ".sweep");
                if (sweepCancel > 1) {
                    throw new IllegalArgumentException(f + ".sweep.cancel: must be within 0..=1");
                }
            } else {
                sizes = null;
                sweepDelay = null;
                sweepReset = true;
                sweepCancel = 1.0;
            }
            if (groups.isEmpty() == (sizes == null)) {
                throw new IllegalArgumentException(f + ": a workload has either groups or a sweep");
            }
        }
    }

    /**
     * The operations of a timeline, drawn from the seed exactly as the Rust
     * runner draws them ({@code runner::timeline::plan}), in time order.
     */
    static final class Ops {
        int n;
        int once;
        int periodic;
        int cap = 1;
        int[] group;
        int[] slot;
        int ne;
        long[] at = new long[1024];
        long[] arg = new long[1024];
        int[] id = new int[1024];
        byte[] op = new byte[1024];

        void add(long t, long a, int i, int o) {
            if (ne == at.length) {
                int m = ne * 2;
                at = Arrays.copyOf(at, m);
                arg = Arrays.copyOf(arg, m);
                id = Arrays.copyOf(id, m);
                op = Arrays.copyOf(op, m);
            }
            at[ne] = t;
            arg[ne] = a;
            id[ne] = i;
            op[ne] = (byte) o;
            ne++;
        }

        /** Event indices sorted by time, ties in generation order (a stable sort). */
        int[] order() {
            long max = 1;
            for (int e = 0; e < ne; e++) {
                max = Math.max(max, at[e]);
            }
            int seqBits = 64 - Long.numberOfLeadingZeros(Math.max(1, ne));
            int timeBits = 63 - seqBits;
            int shift = Math.max(0, (64 - Long.numberOfLeadingZeros(max)) - timeBits);
            long[] keys = new long[ne];
            for (int e = 0; e < ne; e++) {
                keys[e] = ((at[e] >>> shift) << seqBits) | e;
            }
            Arrays.sort(keys);
            int[] ord = new int[ne];
            long mask = (1L << seqBits) - 1;
            for (int e = 0; e < ne; e++) {
                ord[e] = (int) (keys[e] & mask);
            }
            if (shift > 0) {
                // Coarse keys: restore exact time order, stably, within each run of equal keys.
                insertionFix(ord);
            }
            return ord;
        }

        private void insertionFix(int[] ord) {
            for (int k = 1; k < ord.length; k++) {
                int v = ord[k];
                int j = k - 1;
                while (j >= 0 && (at[ord[j]] > at[v] || (at[ord[j]] == at[v] && ord[j] > v))) {
                    ord[j + 1] = ord[j];
                    j--;
                }
                ord[j + 1] = v;
            }
        }
    }

    static final int OP_SCHEDULE_AT = 3;
    static final int OP_PERIODIC = 4;

    static Ops draw(Spec s) {
        Ops o = new Ops();
        for (Group g : s.groups) {
            o.n += g.count;
        }
        o.group = new int[o.n];
        o.slot = new int[o.n];
        int idn = 0;
        for (int gi = 0; gi < s.groups.size(); gi++) {
            Group g = s.groups.get(gi);
            Dist.Rng rng = new Dist.Rng(s.seed, gi + 1);
            double t = 0;
            if (g.kind != 0) {
                o.cap = (int) Math.max(o.cap, Math.min(1 << 20, g.runFor / Math.max(1, g.period) + 64));
            }
            for (int j = 0; j < g.count; j++) {
                int i = idn++;
                if (g.rate > 0) {
                    t += g.poisson ? -Math.log(1.0 - rng.unit()) / g.rate * 1e9 : 1e9 / g.rate;
                }
                long at = (long) t;
                long delay = g.delay.sample(rng);
                o.group[i] = gi;
                if (g.kind != 0) {
                    o.slot[i] = o.periodic++;
                    o.add(at, delay, i, OP_PERIODIC);
                    o.add(Math.max(g.runFor, at), 0, i, OP_CANCEL);
                    continue;
                }
                o.slot[i] = o.once++;
                o.add(at, delay, i, g.anchorStart ? OP_SCHEDULE_AT : OP_SCHEDULE);
                if (g.cancelAfter != null && rng.unit() < g.cancelFraction) {
                    o.add(at + g.cancelAfter.sample(rng), 0, i, OP_CANCEL);
                }
                if (g.every != null) {
                    long hb = at;
                    while (true) {
                        long gap = Math.max(1, g.every.sample(rng));
                        hb = hb + gap < 0 ? Long.MAX_VALUE : hb + gap;
                        if (hb > g.until) {
                            break;
                        }
                        o.add(hb, g.resetDelay.sample(rng), i, OP_RESET);
                    }
                }
            }
        }
        return o;
    }

    /**
     * Where fires land, as the Rust runner's {@code Probe}: one slot per
     * one-shot timer (its fire time), a row of {@code cap} cells per periodic
     * timer (its start times) and a run counter; all allocated before the run.
     */
    static final class Probe extends Peer.Sink {
        final long epoch;
        final int[] slotOf;
        final boolean[] periodic;
        final AtomicLongArray once;
        final AtomicIntegerArray runs;
        final AtomicLongArray times;
        final int cap;
        final AtomicInteger fired = new AtomicInteger();

        Probe(long epoch, Ops o) {
            this.epoch = epoch;
            slotOf = o.slot;
            periodic = new boolean[o.n];
            once = new AtomicLongArray(Math.max(1, o.once));
            runs = new AtomicIntegerArray(Math.max(1, o.periodic));
            cap = o.cap;
            times = new AtomicLongArray((int) Math.min(Integer.MAX_VALUE - 8, (long) Math.max(1, o.periodic) * cap));
        }

        @Override
        void fired(int i, long tag) {
            long t = System.nanoTime() - epoch;
            int s = slotOf[i];
            if (periodic[i]) {
                int k = runs.getAndIncrement(s);
                if (k < cap) {
                    times.lazySet(s * cap + k, t);
                }
            } else {
                once.lazySet(s, t + 1);
                fired.incrementAndGet();
            }
        }
    }

    static double timingOverhead() {
        double best = Double.MAX_VALUE;
        for (int r = 0; r < 7; r++) {
            long sum = 0;
            int n = 100_000;
            for (int i = 0; i < n; i++) {
                long a = System.nanoTime();
                sum += System.nanoTime() - a;
            }
            best = Math.min(best, (double) sum / n);
        }
        return best;
    }

    /** The grid waits for the next event are rounded up to (the Rust harness's measure::PACE). */
    static final long PACE_NS = 1_000_000L;

    /**
     * Waits for the next event at start + at: at once if it is due, else until that time rounded
     * up to the PACE_NS grid, so that the application wakes at most once a millisecond, as one on
     * tokio does (see measure::PACE in the Rust harness).
     */
    static void waitForEvent(long start, long at) {
        if (start + at > System.nanoTime()) {
            waitUntil(start + (at + PACE_NS - 1) / PACE_NS * PACE_NS);
        }
    }

    static void waitUntil(long deadline) {
        long left;
        while ((left = deadline - System.nanoTime()) > 0) {
            LockSupport.parkNanos(left);
        }
    }

    /**
     * Context switches (voluntary and not) of every thread of this JVM but
     * the calling one, from /proc/self/task/N/status, as the Rust runner
     * counts the subject's wake-ups (GC and JIT threads included, as in
     * {@link #cpuNanos}); 0 where Linux offers no /proc.
     */
    static long wakeupsOfOtherThreads() {
        String me;
        try {
            me = new java.io.File("/proc/thread-self").getCanonicalFile().getName();
        } catch (java.io.IOException e) {
            me = "";
        }
        java.io.File[] tasks = new java.io.File("/proc/self/task").listFiles();
        if (tasks == null) {
            return 0;
        }
        long sum = 0;
        for (java.io.File t : tasks) {
            if (t.getName().equals(me)) {
                continue;
            }
            try {
                for (String line : java.nio.file.Files.readAllLines(new java.io.File(t, "status").toPath(), java.nio.charset.StandardCharsets.US_ASCII)) {
                    if (line.contains("ctxt_switches:")) {
                        sum += Long.parseLong(line.trim().split("\\s+")[1]);
                    }
                }
            } catch (java.io.IOException | NumberFormatException | ArrayIndexOutOfBoundsException e) {
                // A thread that ended between the listing and the read.
            }
        }
        return sum;
    }

    /**
     * Process CPU time, ns: the sum of every thread's run time from
     * /proc/self/task/N/schedstat (nanoseconds; GC and JIT threads
     * included), where Linux offers it; else the JVM's own figure, which on
     * some systems moves in 10 ms steps.
     */
    static synchronized long cpuNanos() {
        java.io.File[] tasks = new java.io.File("/proc/self/task").listFiles();
        if (tasks != null) {
            long sum = 0;
            boolean any = false;
            java.util.Map<String, Long> now = new java.util.HashMap<>();
            for (java.io.File t : tasks) {
                try {
                    String line = new String(java.nio.file.Files.readAllBytes(new java.io.File(t, "schedstat").toPath()), java.nio.charset.StandardCharsets.US_ASCII);
                    int sp = line.indexOf(' ');
                    long ns = Long.parseLong(sp < 0 ? line.trim() : line.substring(0, sp));
                    now.put(t.getName(), ns);
                    sum += ns;
                    any = true;
                } catch (java.io.IOException | NumberFormatException e) {
                    // A thread that ended between the listing and the read.
                }
            }
            if (any) {
                // A thread that has ended keeps what it had used when last seen
                // (a stopped Quartz pool's idle threads end during later runs),
                // so the sum never goes back.
                for (java.util.Map.Entry<String, Long> e : SEEN.entrySet()) {
                    if (!now.containsKey(e.getKey())) {
                        ended += e.getValue();
                    }
                }
                SEEN.clear();
                SEEN.putAll(now);
                return sum + ended;
            }
        }
        return jvmCpuNanos();
    }

    /** Each live thread's CPU when last read, and the sum of those that ended since. */
    private static final java.util.Map<String, Long> SEEN = new java.util.HashMap<>();
    private static long ended;

    private static long jvmCpuNanos() {
        java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean) {
            return ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime();
        }
        return 0;
    }

    /** Measurements of one run, as JSON objects. */
    static final class Out {
        final StringBuilder b = new StringBuilder("[");

        void add(String metric, double value, String unit) {
            at(metric, -1, value, unit);
        }

        void at(String metric, long size, double value, String unit) {
            if (b.length() > 1) {
                b.append(',');
            }
            b.append("{\"metric\":").append(Json.quote(metric)).append(",\"value\":").append(Json.number(value))
                .append(",\"unit\":").append(Json.quote(unit)).append(",\"size\":").append(size < 0 ? "null" : Long.toString(size)).append('}');
        }

        String json() {
            return b + "]";
        }
    }

    static String run(String peer, Spec s) throws Exception {
        try {
            return s.sizes != null ? sweep(peer, s) : timeline(peer, s);
        } finally {
            Peer.stopAll();
        }
    }

    /** Cost of one kind of operation: total timed ns and count. */
    static final class Cost {
        long total;
        long n;

        void add(long ns) {
            total += ns;
            n++;
        }

        void put(Out out, String metric, double overhead) {
            if (n > 0) {
                out.add(metric, Math.max(0, (double) total / n - overhead), "ns/op");
            }
        }
    }

    static String timeline(String peer, Spec s) throws Exception {
        Ops ops = draw(s);
        int[] ord = ops.order();
        int n = ops.n;
        double overhead = timingOverhead();
        long[] deadline = new long[n];
        Arrays.fill(deadline, Long.MAX_VALUE);
        boolean[] cancelled = new boolean[n];
        Object[] h = new Object[n];
        Probe probe = new Probe(System.nanoTime(), ops);
        for (int i = 0; i < n; i++) {
            probe.periodic[i] = s.groups.get(ops.group[i]).kind != 0;
        }
        Peer p = Peer.create(peer);
        // Start every run from a collected heap, so one run's garbage does not
        // pause the next.
        System.gc();
        long cpu0 = cpuNanos();
        long thr0 = THREADS.getCurrentThreadCpuTime();
        long wakeups0 = wakeupsOfOtherThreads();
        long start = System.nanoTime();
        long offset = start - probe.epoch;
        Cost sched = new Cost();
        Cost cancel = new Cost();
        Cost reset = new Cost();
        long cancelOk = 0;
        long cancelLate = 0;
        long resetLate = 0;
        long onceOk = 0;
        for (int k = 0; k < ops.ne; k++) {
            int e = ord[k];
            long at = ops.at[e];
            waitForEvent(start, at);
            int i = ops.id[e];
            Group g = s.groups.get(ops.group[i]);
            int op = ops.op[e];
            if (op == OP_SCHEDULE || op == OP_SCHEDULE_AT || op == OP_PERIODIC) {
                long t0 = System.nanoTime();
                long delay = op == OP_SCHEDULE_AT ? Math.max(0, ops.arg[e] - (t0 - start)) : ops.arg[e];
                if (op == OP_PERIODIC) {
                    h[i] = g.kind == 1 ? p.fixedRate(delay, g.period, probe, i) : p.fixedDelay(delay, g.period, probe, i);
                } else {
                    h[i] = p.schedule(delay, probe, i, 0);
                }
                long t1 = System.nanoTime();
                sched.add(t1 - t0);
                // Measured from the deadline the peer's API was given
                // (java.util.Timer: the delay in whole ms).
                deadline[i] = (t0 - probe.epoch) + p.apiDelay(delay);
                if (op != OP_PERIODIC) {
                    onceOk++;
                }
            } else if (op == OP_CANCEL) {
                long t0 = System.nanoTime();
                boolean ok = h[i] != null && p.cancel(h[i]);
                long t1 = System.nanoTime();
                if (g.kind == 0) {
                    cancel.add(t1 - t0);
                    if (ok) {
                        cancelOk++;
                    } else {
                        cancelLate++;
                    }
                }
                cancelled[i] = ok;
            } else {
                long d = ops.arg[e];
                long t0 = System.nanoTime();
                Object moved = p.reset(h[i], d, probe, i, 0);
                long t1 = System.nanoTime();
                reset.add(t1 - t0);
                if (moved != null) {
                    h[i] = moved;
                    deadline[i] = (t0 - probe.epoch) + p.apiDelay(d);
                } else {
                    resetLate++;
                }
            }
        }
        long driverCpu = THREADS.getCurrentThreadCpuTime() - thr0;

        // Wait for every timer that should fire, at most until the last deadline + grace.
        long expected = onceOk - cancelOk;
        long last = 0;
        for (int i = 0; i < n; i++) {
            if (!probe.periodic[i] && !cancelled[i] && deadline[i] != Long.MAX_VALUE) {
                last = Math.max(last, deadline[i]);
            }
        }
        long giveUp = probe.epoch + last + s.grace;
        while (probe.fired.get() < expected && System.nanoTime() - giveUp < 0) {
            LockSupport.parkNanos(1_000_000L);
        }
        long cpu = cpuNanos() - cpu0;
        double runSeconds = Math.max(1e-9, (System.nanoTime() - start) / 1e9);
        long wakeups = Math.max(0, wakeupsOfOtherThreads() - wakeups0);
        p.shutdown();

        Out out = new Out();
        sched.put(out, "schedule_call", overhead);
        cancel.put(out, "cancel_call", overhead);
        reset.put(out, "reset_call", overhead);
        if (sched.n > 0) {
            out.add("cpu_per_timer", (double) cpu / sched.n, "ns/timer");
        }
        if (cancel.n > 0) {
            out.add("cancel_late", cancelLate, "count");
        }
        if (reset.n > 0) {
            out.add("reset_late", resetLate, "count");
        }
        out.add("cpu", cpu / 1e6, "ms");
        out.add("cpu_background", Math.max(0, cpu - driverCpu) / 1e6, "ms");
        out.add("run_wakeups_per_s", wakeups / runSeconds, "/s");
        out.add("timing_overhead", overhead, "ns");
        if (ops.once > 0) {
            oneShotFigures(ops, s, probe, deadline, cancelled, expected, out);
        }
        if (ops.periodic > 0) {
            periodicFigures(ops, s, probe, deadline, offset, out);
        }
        return out.json();
    }

    private static void percentiles(Histogram h, String[] names, Out out) {
        if (h.getTotalCount() == 0) {
            return;
        }
        for (String name : names) {
            long v;
            switch (name.substring(name.lastIndexOf('_') + 1)) {
                case "p50": v = h.getValueAtPercentile(50); break;
                case "p90": v = h.getValueAtPercentile(90); break;
                case "p99": v = h.getValueAtPercentile(99); break;
                case "p99.9": v = h.getValueAtPercentile(99.9); break;
                default: v = h.getMaxValue();
            }
            out.add(name, v / 1e3, "µs");
        }
    }

    private static final String[] LATENESS = {"lateness_p50", "lateness_p90", "lateness_p99", "lateness_p99.9", "lateness_max"};
    private static final String[] JITTER = {"jitter_p50", "jitter_p99", "jitter_p99.9", "jitter_max"};

    private static void oneShotFigures(Ops ops, Spec s, Probe probe, long[] deadline, boolean[] cancelled, long expected, Out out) {
        Histogram h = new Histogram(3);
        long first = Long.MAX_VALUE;
        long last = 0;
        long fired = 0;
        long early = 0;
        for (int i = 0; i < ops.n; i++) {
            if (probe.periodic[i]) {
                continue;
            }
            long v = probe.once.get(ops.slot[i]);
            if (v == 0) {
                continue;
            }
            long t = v - 1;
            fired++;
            first = Math.min(first, t);
            last = Math.max(last, t);
            if (cancelled[i]) {
                continue;
            }
            if (t < deadline[i]) {
                early++;
            }
            h.recordValue(Math.max(1, t - deadline[i]));
        }
        percentiles(h, LATENESS, out);
        out.add("fired", fired, "count");
        out.add("missed", Math.max(0, expected - fired), "count");
        out.add("early", early, "count");
        if (fired >= 2 && last > first) {
            out.add("fires_per_s", fired / ((last - first) / 1e9), "fires/s");
        }
    }

    private static void periodicFigures(Ops ops, Spec s, Probe probe, long[] deadline, long offset, Out out) {
        Histogram h = new Histogram(3);
        long runs = 0;
        long nominal = 0;
        double driftSum = 0;
        long tasks = 0;
        for (int i = 0; i < ops.n; i++) {
            Group g = s.groups.get(ops.group[i]);
            if (g.kind == 0 || deadline[i] == Long.MAX_VALUE) {
                continue;
            }
            long period = Math.max(1, g.period);
            long end = g.runFor + offset;
            int slot = ops.slot[i];
            int r = probe.runs.get(slot);
            int kept = Math.min(r, probe.cap);
            runs += r;
            long first = deadline[i];
            nominal += end > first ? (end - first) / period + 1 : 0;
            if (kept == 0) {
                continue;
            }
            tasks++;
            long base = (long) slot * probe.cap;
            long tLast = probe.times.get((int) (base + kept - 1));
            if (g.kind == 1) {
                for (int k = 0; k < kept; k++) {
                    long t = probe.times.get((int) (base + k));
                    h.recordValue(Math.max(1, Math.abs(t - (first + (long) k * period))));
                }
                driftSum += Math.abs(tLast - (first + (long) (kept - 1) * period));
            } else {
                long t0 = probe.times.get((int) base);
                h.recordValue(Math.max(1, Math.abs(t0 - first)));
                for (int k = 1; k < kept; k++) {
                    long gap = probe.times.get((int) (base + k)) - probe.times.get((int) (base + k - 1));
                    h.recordValue(Math.max(1, Math.abs(gap - period)));
                }
                driftSum += Math.abs(tLast - (t0 + (long) (kept - 1) * period));
            }
        }
        percentiles(h, JITTER, out);
        out.add("runs", runs, "count");
        if (nominal > 0) {
            out.add("runs_ratio", (double) runs / nominal, "ratio");
        }
        if (tasks > 0) {
            out.add("drift", driftSum / tasks / 1e6, "ms");
        }
    }

    // ---------------------------------------------------------------- sweep

    private static final class Nothing extends Peer.Sink {
        @Override
        void fired(int i, long tag) {
            // Sweep timers are far away; none fires while measured.
        }
    }

    /** Heap in use after full collections: the least of a few tries. */
    static long usedAfterGc() {
        Runtime rt = Runtime.getRuntime();
        long best = Long.MAX_VALUE;
        for (int k = 0; k < 4; k++) {
            System.gc();
            waitUntil(System.nanoTime() + 20_000_000L);
            best = Math.min(best, rt.totalMemory() - rt.freeMemory());
        }
        return best;
    }

    /**
     * As the Rust side: sizes below this many timers are cycled, each cost
     * the median, after one untimed warm-up cycle at the size (the heap
     * regions and code paths a cycle of this size uses are then warm).
     */
    private static final int TIMED_PER_SIZE = 2_500_000;
    private static final int MAX_CYCLES = 50;

    /**
     * The heap a sweep cycle of {@code n} timers needs at {@code perTimer}
     * bytes each: the timers, as much again for those a reset replaced
     * until they are collected, and the cycle's own arrays. The Rust side
     * ({@code peers::java::notes}) explains a size skipped by this rule.
     */
    static double heapNeeded(long n, double perTimer) {
        return n * (2 * perTimer + 64);
    }

    static String sweep(String peer, Spec s) throws Exception {
        Out out = new Out();
        double perTimer = 0;
        for (int k = 0; k < s.sizes.length; k++) {
            long size = s.sizes[k];
            int n = (int) size;
            long max = Runtime.getRuntime().maxMemory();
            if (perTimer > 0 && heapNeeded(size, perTimer) > max) {
                // Measured at the size before: this one cannot fit, nor any larger.
                System.err.printf("java-peers: %s: %s at %d: %.0f B per timer need %.1f GB of heap, beyond %.1f GB (-Xmx); not run%n",
                    peer, s.name, size, perTimer, heapNeeded(size, perTimer) / 1e9, max / 1e9);
                break;
            }
            Dist.Rng rng = new Dist.Rng(s.seed, k);
            long[] d = new long[n];
            long[] moves = new long[n];
            for (int i = 0; i < n; i++) {
                d[i] = s.sweepDelay.sample(rng);
            }
            for (int i = 0; i < n; i++) {
                moves[i] = s.sweepDelay.sample(rng);
            }
            int[] resetOrder = s.sweepReset ? rng.permutation(n) : new int[0];
            if (!s.sweepReset) {
                rng.permutation(n); // the Rust side draws it either way
            }
            int[] cancelOrder = java.util.Arrays.copyOf(rng.permutation(n), (int) Math.round(n * s.sweepCancel));
            int cycles = Math.max(1, Math.min(MAX_CYCLES, TIMED_PER_SIZE / Math.max(1, n)));
            double[][] costs = new double[3][cycles];
            long[] first = null;
            cycle(peer, d, moves, resetOrder, cancelOrder, false);
            for (int c = 0; c < cycles; c++) {
                long[] r = cycle(peer, d, moves, resetOrder, cancelOrder, c == 0);
                costs[0][c] = r[0];
                costs[1][c] = r[1];
                costs[2][c] = r[2];
                if (c == 0) {
                    first = r;
                }
            }
            out.at("schedule_batch", size, median(costs[0]) / n, "ns/op");
            if (s.sweepReset) {
                out.at("reset_batch", size, median(costs[1]) / n, "ns/op");
            }
            if (cancelOrder.length > 0) {
                out.at("cancel_batch", size, median(costs[2]) / cancelOrder.length, "ns/op");
            }
            out.at("cpu_per_timer", size, (double) first[3] / n, "ns/timer");
            // Heap after full collections: what the pending timers hold.
            out.at("memory", size, (double) first[4] / n, "B/timer");
            perTimer = (double) first[4] / n;
        }
        return out.json();
    }

    private static double median(double[] v) {
        double[] c = v.clone();
        Arrays.sort(c);
        int m = c.length;
        return m % 2 == 1 ? c[m / 2] : (c[m / 2 - 1] + c[m / 2]) / 2;
    }

    /**
     * One cycle on a fresh peer: schedule every timer, reset each, cancel
     * the chosen ones, each loop timed by the driver thread's CPU clock.
     * With {@code full}, also the heap held after full collections and the
     * whole process's CPU over the loops and a settling pause (the
     * collections left out). Returns {schedule, reset, cancel, cpu, heap}.
     */
    private static long[] cycle(String peer, long[] d, long[] moves, int[] resetOrder, int[] cancelOrder, boolean full) throws Exception {
        int n = d.length;
        Peer.Sink sink = new Nothing();
        Object[] h = new Object[n];
        Peer p = Peer.create(peer);
        long before = full ? usedAfterGc() : 0;
        long cpu0 = cpuNanos();
        long wall0 = System.nanoTime();
        long t0 = THREADS.getCurrentThreadCpuTime();
        for (int i = 0; i < n; i++) {
            h[i] = p.schedule(d[i], sink, i, 0);
        }
        long t1 = THREADS.getCurrentThreadCpuTime();
        // Netty moves submissions into its wheel on later ticks: that
        // deferred work counts.
        p.settle(n);
        long cpu1 = cpuNanos();
        // The harness's full collections for the memory reading are left
        // out of the CPU figure.
        long after = full ? usedAfterGc() : 0;
        long cpu2 = cpuNanos();
        int moved = 0;
        long t2 = THREADS.getCurrentThreadCpuTime();
        for (int i : resetOrder) {
            Object m = p.reset(h[i], moves[i], sink, i, 0);
            if (m != null) {
                h[i] = m;
                moved++;
            }
        }
        long t3 = THREADS.getCurrentThreadCpuTime();
        int stopped = 0;
        long t4 = THREADS.getCurrentThreadCpuTime();
        for (int i : cancelOrder) {
            if (p.cancel(h[i])) {
                stopped++;
            }
        }
        long t5 = THREADS.getCurrentThreadCpuTime();
        long cpu = 0;
        if (full) {
            // Work deferred to the peer's threads (Netty's unlink on the
            // next tick) runs now.
            waitUntil(System.nanoTime() + 250_000_000L);
            cpu = (cpu1 - cpu0) + (cpuNanos() - cpu2);
        }
        long wall = System.nanoTime() - wall0;
        p.shutdown();
        if (moved != resetOrder.length || stopped != cancelOrder.length) {
            long shortest = Long.MAX_VALUE;
            for (long x : d) {
                shortest = Math.min(shortest, x);
            }
            // Say why when the cycle outlasted the shortest delay: timers fired.
            String why = wall > shortest
                ? String.format("; the cycle took %.1f s, longer than the shortest delay (%.1f s), so timers fired before their turn:"
                    + " the sweep's figures need every timer still pending", wall / 1e9, shortest / 1e9)
                : "";
            throw new IllegalStateException("at " + n + " pending: " + moved + " resets and " + stopped
                + " cancels succeeded; expected " + resetOrder.length + " and " + cancelOrder.length + why);
        }
        return new long[] {t1 - t0, t3 - t2, t5 - t4, cpu, Math.max(0, after - before)};
    }

    // ---------------------------------------------------------------- warm-up

    /** Runs every path a workload takes, unmeasured, so the JIT compiles them first. */
    static void warmup(String peer, int rounds, int timers) throws Exception {
        Dist.Rng rng = new Dist.Rng(0x5EED, 0);
        long hour = 3_600_000_000_000L;
        Peer.Sink none = new Nothing();
        int f = Math.max(1, timers / 10);
        Ops ops = new Ops();
        ops.n = f + 100;
        ops.once = f;
        ops.periodic = 100;
        ops.cap = 200;
        ops.slot = new int[ops.n];
        for (int i = 0; i < ops.n; i++) {
            ops.slot[i] = i < f ? i : i - f;
        }
        for (int r = 0; r < rounds; r++) {
            Peer p = Peer.create(peer);
            Object[] h = new Object[timers];
            for (int i = 0; i < timers; i++) {
                h[i] = p.schedule(hour + rng.below(hour), none, i, 0);
            }
            for (int i = 0; i < timers; i++) {
                Object m = p.reset(h[i], hour + rng.below(hour), none, i, 0);
                if (m != null) {
                    h[i] = m;
                }
            }
            for (int i = timers - 1; i >= 0; i--) {
                p.cancel(h[i]);
            }
            Probe probe = new Probe(System.nanoTime(), ops);
            for (int i = f; i < ops.n; i++) {
                probe.periodic[i] = true;
            }
            for (int i = 0; i < f; i++) {
                p.schedule(rng.below(20_000_000L), probe, i, 0);
            }
            Object[] ph = new Object[100];
            for (int i = 0; i < 100; i++) {
                ph[i] = (i % 2 == 0) ? p.fixedRate(i * 10_000L, 1_000_000L, probe, f + i) : p.fixedDelay(i * 10_000L, 1_000_000L, probe, f + i);
            }
            waitUntil(System.nanoTime() + 50_000_000L);
            for (Object o : ph) {
                p.cancel(o);
            }
            // Let the short timers fire (a 100 ms wheel needs a few ticks).
            long until = System.nanoTime() + 500_000_000L;
            while (probe.fired.get() < f && System.nanoTime() - until < 0) {
                waitUntil(System.nanoTime() + 1_000_000L);
            }
            p.shutdown();
        }
    }
}
