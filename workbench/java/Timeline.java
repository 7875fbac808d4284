package peers;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;

/**
 * Runs one workload spec (serde JSON of {@code workbench::spec::Workload})
 * against one peer and returns its measurements, in the Rust runner's metric
 * names and units ({@code workbench::record::metric}).
 *
 * <p><b>Timeline</b> ({@code group}s). Every operation is drawn up front from
 * the spec's seed with the Rust side's generator: per group {@code g} a
 * stream {@code Rng(seed, g)} gives, timer by timer, the arrival gap (if the
 * group has an arrival process), the first delay, the cancel coin and its
 * time, and the heartbeat gaps; reset delays come from stream
 * {@code 1000 + g} in execution order. The operations are sorted by time
 * (µs) and executed by one driver thread in real time; each operation is
 * timed alone with two clock reads, and the measured cost of those reads
 * ({@code timing_overhead}) is subtracted. A fire is an atomic slot claim and
 * two stores into preallocated arrays. After the last operation the driver
 * waits for every armed one-shot to fire, at most until the last deadline
 * plus {@code grace}. Periodic timers run until the workload cancels them,
 * {@code run_for} after their scheduling.
 *
 * <p><b>Sweep</b> ({@code sweep}). For each pending count: schedule that many
 * timers (delays from {@code sweep.delay}), heap bytes per timer after full
 * collections, reset each once, cancel all in a random order; each phase is
 * timed as a whole.
 */
final class Timeline {
    private static final int OP_SCHEDULE = 0;
    private static final int OP_RESET = 1;
    private static final int OP_CANCEL = 2;
    private static final int IDX_BITS = 28;
    private static final long IDX_MASK = (1L << IDX_BITS) - 1;
    private static final long MAX_US = 1L << 33;
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
            } else {
                sizes = null;
                sweepDelay = null;
            }
            if (groups.isEmpty() == (sizes == null)) {
                throw new IllegalArgumentException(f + ": a workload has either groups or a sweep");
            }
        }
    }

    /** The operations of a timeline, drawn from the seed, sorted by time. */
    static final class Ops {
        int n;
        int[] group;
        long[] delay;
        long[] events = new long[1024];
        int ne;

        void add(long atNs, int op, int idx) {
            long us = Math.min(atNs / 1000, MAX_US - 1);
            if (ne == events.length) {
                events = Arrays.copyOf(events, events.length * 2);
            }
            events[ne++] = (us << (IDX_BITS + 2)) | ((long) op << IDX_BITS) | idx;
        }
    }

    static Ops draw(Spec s) {
        Ops o = new Ops();
        for (Group g : s.groups) {
            o.n += g.count;
        }
        o.group = new int[o.n];
        o.delay = new long[o.n];
        int base = 0;
        for (int gi = 0; gi < s.groups.size(); gi++) {
            Group g = s.groups.get(gi);
            Dist.Rng rng = new Dist.Rng(s.seed, gi);
            double t = 0;
            for (int j = 0; j < g.count; j++) {
                int idx = base + j;
                if (g.rate > 0) {
                    t += g.poisson ? -Math.log(1.0 - rng.unit()) / g.rate * 1e9 : 1e9 / g.rate;
                }
                long at = (long) t;
                o.group[idx] = gi;
                o.delay[idx] = g.delay.sample(rng);
                o.add(at, OP_SCHEDULE, idx);
                if (g.cancelAfter != null && rng.unit() < g.cancelFraction) {
                    o.add(at + g.cancelAfter.sample(rng), OP_CANCEL, idx);
                }
                if (g.every != null) {
                    long h = at + Math.max(1000, g.every.sample(rng));
                    while (h < g.until) {
                        o.add(h, OP_RESET, idx);
                        h += Math.max(1000, g.every.sample(rng));
                    }
                }
                if (g.kind != 0) {
                    o.add(at + g.runFor, OP_CANCEL, idx);
                }
            }
            base += g.count;
        }
        Arrays.sort(o.events, 0, o.ne);
        return o;
    }

    /** Where fires land: preallocated logs, one slot claimed per fire. */
    static final class Log extends Peer.Sink {
        final byte[] kind;
        final long[] period;
        final AtomicLongArray firedTag;
        final long[] firstIdeal;
        final long[] prevStart;
        final long[] lastStart;
        final int[] runs;
        final long[] late;
        final long[] when;
        final AtomicInteger lateN = new AtomicInteger();
        final long[] jitter;
        final AtomicInteger jitterN = new AtomicInteger();

        Log(int n, int lateCap, int jitterCap) {
            kind = new byte[n];
            period = new long[n];
            firedTag = new AtomicLongArray(n);
            firstIdeal = new long[n];
            prevStart = new long[n];
            lastStart = new long[n];
            runs = new int[n];
            late = new long[lateCap];
            when = new long[lateCap];
            jitter = new long[jitterCap];
        }

        @Override
        void fired(int i, long tag) {
            long now = System.nanoTime();
            if (kind[i] == 0) {
                int k = lateN.getAndIncrement();
                if (k < late.length) {
                    late[k] = now - tag;
                    when[k] = now;
                }
                firedTag.lazySet(i, tag);
                return;
            }
            // A periodic task never runs concurrently with itself: plain fields.
            int r = runs[i];
            long dev = (kind[i] == 1 || r == 0)
                ? now - (firstIdeal[i] + (long) r * period[i])
                : now - prevStart[i] - period[i];
            if (kind[i] == 1 || r > 0) {
                int k = jitterN.getAndIncrement();
                if (k < jitter.length) {
                    jitter[k] = dev;
                }
            }
            prevStart[i] = now;
            lastStart[i] = now;
            runs[i] = r + 1;
        }
    }

    static double timingOverhead() {
        double best = Double.MAX_VALUE;
        for (int r = 0; r < 5; r++) {
            long sum = 0;
            int n = 20_000;
            for (int i = 0; i < n; i++) {
                long a = System.nanoTime();
                sum += System.nanoTime() - a;
            }
            best = Math.min(best, (double) sum / n);
        }
        return best;
    }

    static void waitUntil(long deadline) {
        long left;
        while ((left = deadline - System.nanoTime()) > 0) {
            LockSupport.parkNanos(left);
        }
    }

    /** Process CPU time, ns (0 where the JVM cannot say). */
    static long cpuNanos() {
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
        return s.sizes != null ? sweep(peer, s) : timeline(peer, s);
    }

    static String timeline(String peer, Spec s) throws Exception {
        Ops ops = draw(s);
        int n = ops.n;
        int resets = 0;
        long periodicCap = 0;
        for (int e = 0; e < ops.ne; e++) {
            if ((int) ((ops.events[e] >>> IDX_BITS) & 3) == OP_RESET) {
                resets++;
            }
        }
        for (Group g : s.groups) {
            if (g.kind != 0) {
                periodicCap += (long) g.count * (g.runFor / g.period + 3);
            }
        }
        Log log = new Log(n, n + resets, (int) Math.min(Integer.MAX_VALUE - 8, periodicCap));
        Dist.Rng[] resetRng = new Dist.Rng[s.groups.size()];
        for (int gi = 0; gi < resetRng.length; gi++) {
            resetRng[gi] = new Dist.Rng(s.seed, 1000 + gi);
        }
        int base = 0;
        for (Group g : s.groups) {
            for (int j = 0; j < g.count; j++) {
                log.kind[base + j] = (byte) g.kind;
                log.period[base + j] = g.period;
            }
            base += g.count;
        }
        Object[] h = new Object[n];
        long[] armed = new long[n];
        boolean[] stopped = new boolean[n];
        long[] cancelAt = new long[n];
        double overhead = timingOverhead();

        Peer p = Peer.create(peer);
        long cpu0 = cpuNanos();
        long thr0 = THREADS.getCurrentThreadCpuTime();
        long schedNs = 0;
        long cancelNs = 0;
        long resetNs = 0;
        int nSched = 0;
        int nCancel = 0;
        int nReset = 0;
        int cancelLate = 0;
        long maxDeadline = 0;
        long t0 = System.nanoTime();
        for (int e = 0; e < ops.ne; e++) {
            long ev = ops.events[e];
            long due = t0 + (ev >>> (IDX_BITS + 2)) * 1000;
            if (due - System.nanoTime() > 0) {
                waitUntil(due);
            }
            int op = (int) ((ev >>> IDX_BITS) & 3);
            int i = (int) (ev & IDX_MASK);
            Group g = s.groups.get(ops.group[i]);
            if (op == OP_SCHEDULE) {
                long d = ops.delay[i];
                long a = System.nanoTime();
                if (g.kind == 0) {
                    long dl = g.anchorStart ? t0 + d : a + d;
                    h[i] = p.schedule(Math.max(0, dl - a), log, i, dl);
                    armed[i] = dl;
                    maxDeadline = Math.max(maxDeadline, dl);
                } else {
                    long first = g.anchorStart ? t0 + d : a + d;
                    log.firstIdeal[i] = first;
                    long init = Math.max(0, first - a);
                    h[i] = g.kind == 1 ? p.fixedRate(init, g.period, log, i) : p.fixedDelay(init, g.period, log, i);
                }
                schedNs += System.nanoTime() - a;
                nSched++;
            } else if (op == OP_CANCEL) {
                if (stopped[i]) {
                    continue;
                }
                long a = System.nanoTime();
                boolean ok = p.cancel(h[i]);
                cancelNs += System.nanoTime() - a;
                nCancel++;
                cancelAt[i] = a;
                if (ok) {
                    stopped[i] = true;
                } else {
                    cancelLate++;
                }
            } else {
                if (stopped[i]) {
                    continue;
                }
                long d = g.resetDelay.sample(resetRng[ops.group[i]]);
                long a = System.nanoTime();
                long dl = a + d;
                h[i] = p.reset(h[i], d, log, i, dl);
                resetNs += System.nanoTime() - a;
                nReset++;
                armed[i] = dl;
                maxDeadline = Math.max(maxDeadline, dl);
            }
        }
        long thr1 = THREADS.getCurrentThreadCpuTime();
        // Wait for every armed one-shot, at most until the last deadline + grace.
        int[] pend = new int[n];
        int left = 0;
        for (int i = 0; i < n; i++) {
            if (log.kind[i] == 0 && !stopped[i]) {
                pend[left++] = i;
            }
        }
        long stop = maxDeadline + s.grace;
        while (left > 0) {
            int w = 0;
            for (int j = 0; j < left; j++) {
                if (log.firedTag.get(pend[j]) != armed[pend[j]]) {
                    pend[w++] = pend[j];
                }
            }
            left = w;
            if (left == 0 || System.nanoTime() - stop > 0) {
                break;
            }
            LockSupport.parkNanos(2_000_000L);
        }
        long cpu1 = cpuNanos();
        p.shutdown();

        Out out = new Out();
        out.add("timing_overhead", overhead, "ns");
        if (nSched > 0) {
            out.add("schedule", Math.max(0, (double) schedNs / nSched - overhead), "ns/op");
        }
        if (nCancel > 0) {
            out.add("cancel", Math.max(0, (double) cancelNs / nCancel - overhead), "ns/op");
        }
        if (nReset > 0) {
            out.add("reset", Math.max(0, (double) resetNs / nReset - overhead), "ns/op");
        }
        int fires = Math.min(log.lateN.get(), log.late.length);
        long runs = 0;
        long nominal = 0;
        double drift = 0;
        int driftN = 0;
        int periodic = 0;
        for (int i = 0; i < n; i++) {
            if (log.kind[i] == 0) {
                continue;
            }
            periodic++;
            runs += log.runs[i];
            long end = cancelAt[i] != 0 ? cancelAt[i] : System.nanoTime();
            if (end >= log.firstIdeal[i]) {
                nominal += (end - log.firstIdeal[i]) / log.period[i] + 1;
            }
            if (log.runs[i] > 0) {
                drift += log.lastStart[i] - (log.firstIdeal[i] + (long) (log.runs[i] - 1) * log.period[i]);
                driftN++;
            }
        }
        out.add("fired", fires + runs, "count");
        out.add("missed", left, "count");
        out.add("cancel_late", cancelLate, "count");
        if (fires > 0) {
            Histogram lat = new Histogram(3);
            long early = 0;
            long first = Long.MAX_VALUE;
            long last = Long.MIN_VALUE;
            for (int k = 0; k < fires; k++) {
                long v = log.late[k];
                if (v < 0) {
                    early++;
                    v = 0;
                }
                lat.recordValue(v);
                first = Math.min(first, log.when[k]);
                last = Math.max(last, log.when[k]);
            }
            out.add("lateness_p50", lat.getValueAtPercentile(50) / 1e3, "µs");
            out.add("lateness_p90", lat.getValueAtPercentile(90) / 1e3, "µs");
            out.add("lateness_p99", lat.getValueAtPercentile(99) / 1e3, "µs");
            out.add("lateness_p99.9", lat.getValueAtPercentile(99.9) / 1e3, "µs");
            out.add("lateness_max", lat.getMaxValue() / 1e3, "µs");
            out.add("early", early, "count");
            if (fires > 1 && last > first) {
                out.add("fires_per_s", fires / ((last - first) / 1e9), "fires/s");
            }
        }
        if (periodic > 0) {
            int nj = Math.min(log.jitterN.get(), log.jitter.length);
            Histogram jit = new Histogram(3);
            long early = 0;
            for (int k = 0; k < nj; k++) {
                long v = log.jitter[k];
                if (v < 0) {
                    early++;
                    v = 0;
                }
                jit.recordValue(v);
            }
            if (nj > 0) {
                out.add("jitter_p50", jit.getValueAtPercentile(50) / 1e3, "µs");
                out.add("jitter_p99", jit.getValueAtPercentile(99) / 1e3, "µs");
                out.add("jitter_p99.9", jit.getValueAtPercentile(99.9) / 1e3, "µs");
                out.add("jitter_max", jit.getMaxValue() / 1e3, "µs");
            }
            if (fires == 0) {
                out.add("early", early, "count");
            }
            if (driftN > 0) {
                out.add("drift", drift / driftN / 1e6, "ms");
            }
            if (nominal > 0) {
                out.add("runs_ratio", (double) runs / nominal, "ratio");
            }
        }
        out.add("cpu", (cpu1 - cpu0) / 1e6, "ms");
        out.add("cpu_background", Math.max(0, (cpu1 - cpu0) - (thr1 - thr0)) / 1e6, "ms");
        return out.json();
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

    static String sweep(String peer, Spec s) throws Exception {
        Out out = new Out();
        Dist.Rng rng = new Dist.Rng(s.seed, 0);
        Peer.Sink sink = new Nothing();
        for (long size : s.sizes) {
            int n = (int) size;
            long[] d = new long[n];
            long[] moves = new long[n];
            for (int i = 0; i < n; i++) {
                d[i] = s.sweepDelay.sample(rng);
            }
            for (int i = 0; i < n; i++) {
                moves[i] = s.sweepDelay.sample(rng);
            }
            int[] order = rng.permutation(n);
            Object[] h = new Object[n];
            Peer p = Peer.create(peer);
            long before = usedAfterGc();
            long cpu0 = cpuNanos();
            long t = System.nanoTime();
            for (int i = 0; i < n; i++) {
                h[i] = p.schedule(d[i], sink, i, 0);
            }
            double sched = (double) (System.nanoTime() - t) / n;
            long cpu1 = cpuNanos();
            p.settle(n);
            double bytes = (double) (usedAfterGc() - before) / n;
            long cpu2 = cpuNanos();
            t = System.nanoTime();
            for (int i = 0; i < n; i++) {
                h[i] = p.reset(h[i], moves[i], sink, i, 0);
            }
            double reset = (double) (System.nanoTime() - t) / n;
            t = System.nanoTime();
            for (int j = 0; j < n; j++) {
                p.cancel(h[order[j]]);
            }
            double cancel = (double) (System.nanoTime() - t) / n;
            long cpu3 = cpuNanos();
            p.shutdown();
            out.at("schedule", size, sched, "ns/op");
            out.at("reset", size, reset, "ns/op");
            out.at("cancel", size, cancel, "ns/op");
            out.at("memory", size, bytes, "B/timer");
            out.at("cpu", size, ((cpu1 - cpu0) + (cpu3 - cpu2)) / 1e6, "ms");
        }
        return out.json();
    }

    // ---------------------------------------------------------------- warm-up

    /** Runs every path a workload takes, unmeasured, so the JIT compiles them first. */
    static void warmup(String peer, int rounds, int timers) throws Exception {
        Dist.Rng rng = new Dist.Rng(0x5EED, 0);
        long hour = 3_600_000_000_000L;
        Peer.Sink none = new Nothing();
        for (int r = 0; r < rounds; r++) {
            Peer p = Peer.create(peer);
            Object[] h = new Object[timers];
            for (int i = 0; i < timers; i++) {
                h[i] = p.schedule(hour + rng.below(hour), none, i, 0);
            }
            for (int i = 0; i < timers; i++) {
                h[i] = p.reset(h[i], hour + rng.below(hour), none, i, 0);
            }
            for (int i = timers - 1; i >= 0; i--) {
                p.cancel(h[i]);
            }
            int f = Math.max(1, timers / 10);
            Log log = new Log(f + 100, f, 100 * 64);
            for (int i = 0; i < 100; i++) {
                log.kind[f + i] = (byte) (1 + i % 2);
                log.period[f + i] = 1_000_000L;
            }
            long now = System.nanoTime();
            for (int i = 0; i < f; i++) {
                long d = rng.below(20_000_000L);
                p.schedule(d, log, i, now + d);
            }
            Object[] ph = new Object[100];
            for (int i = 0; i < 100; i++) {
                log.firstIdeal[f + i] = System.nanoTime() + i * 10_000L;
                ph[i] = (i % 2 == 0) ? p.fixedRate(i * 10_000L, 1_000_000L, log, f + i) : p.fixedDelay(i * 10_000L, 1_000_000L, log, f + i);
            }
            waitUntil(System.nanoTime() + 50_000_000L);
            for (Object o : ph) {
                p.cancel(o);
            }
            // Let the short timers fire (a 100 ms wheel needs a few ticks).
            long until = System.nanoTime() + 500_000_000L;
            while (log.lateN.get() < f && System.nanoTime() - until < 0) {
                waitUntil(System.nanoTime() + 1_000_000L);
            }
            p.shutdown();
        }
    }
}
