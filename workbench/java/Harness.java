package peers;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/**
 * The Java side of the workbench's JDK and Netty peers: one process serves
 * one peer.
 *
 * <p>{@code java peers.Harness PEER [WARMUP_ROUNDS WARMUP_TIMERS]} writes one
 * JSON object per line on stdout: {@code {"type":"env",...}} (JVM, GC, Netty
 * and HdrHistogram versions), then {@code {"type":"peer","scheduler":PEER,
 * "semantics":..}} or {@code {"type":"peer","scheduler":PEER,"skipped":why}}
 * (and exits), then {@code {"type":"ready"}} once the peer is warmed up. Then
 * it reads requests on stdin, one per line: the serde JSON of a
 * {@code workbench::spec::Workload} (profile applied), and answers each with
 * {@code {"type":"result","workload":..,"measurements":[..]}}, the
 * workbench's own {@code Measurement} format, or
 * {@code {"type":"error","message":..}} naming the bad field. A workload
 * with a {@code contention} table runs {@link Contention} instead of a
 * timeline or a sweep. It exits at the
 * end of stdin. Progress and diagnostics go to stderr. The Rust side is
 * {@code workbench/src/peers/java.rs}.
 *
 * <p>The peer is warmed up (schedule, reset, cancel, one-shot and periodic
 * fires) before anything is measured, so the JIT has compiled its hot paths;
 * every run gets a fresh instance of the peer.
 */
public final class Harness {
    private static final PrintStream OUT = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);

    private Harness() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 1 && args[0].equals("--golden")) {
            golden();
            return;
        }
        if (args.length != 1 && args.length != 3) {
            System.err.println("usage: java peers.Harness PEER [WARMUP_ROUNDS WARMUP_TIMERS]");
            System.exit(2);
        }
        quietLogs();
        String name = args[0];
        int warmRounds = args.length == 3 ? Integer.parseInt(args[1]) : 3;
        int warmTimers = args.length == 3 ? Math.max(1, Integer.parseInt(args[2])) : 50_000;
        emitEnv();
        Peer probe;
        try {
            probe = Peer.create(name);
        } catch (ClassNotFoundException | NoClassDefFoundError e) {
            skip(name, name.startsWith("quartz")
                ? "Quartz is not on the classpath (install libquartz2-java)"
                : "Netty's HashedWheelTimer is not on the classpath (install libnetty-java)");
            return;
        }
        if (probe == null) {
            skip(name, "unknown Java peer");
            return;
        }
        OUT.println("{\"type\":\"peer\",\"scheduler\":" + Json.quote(name) + ",\"semantics\":" + Json.quote(probe.semantics()) + "}");
        OUT.flush();
        Peer.stopAll();
        long t = System.nanoTime();
        try {
            Timeline.warmup(name, warmRounds, warmTimers);
        } finally {
            Peer.stopAll();
        }
        System.err.printf("java-peers: %s: warmed up in %.1f s%n", name, (System.nanoTime() - t) / 1e9);
        OUT.println("{\"type\":\"ready\"}");
        OUT.flush();

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            Timeline.Spec spec;
            try {
                Map<String, Object> w = map(Json.parse(line), "workload");
                if (w.get("contention") != null) {
                    contention(name, w);
                    continue;
                }
                if (w.get("calendar") != null) {
                    calendar(name, w);
                    continue;
                }
                spec = new Timeline.Spec(w, "workload");
            } catch (IllegalArgumentException e) {
                OUT.println("{\"type\":\"error\",\"message\":" + Json.quote(e.getMessage()) + "}");
                OUT.flush();
                continue;
            }
            t = System.nanoTime();
            String m;
            try {
                m = Timeline.run(name, spec);
            } catch (Exception | OutOfMemoryError e) {
                OUT.println("{\"type\":\"error\",\"message\":" + Json.quote(name + " on " + spec.name + ": " + e) + "}");
                OUT.flush();
                continue;
            }
            OUT.println("{\"type\":\"result\",\"workload\":" + Json.quote(spec.name) + ",\"measurements\":" + m + "}");
            OUT.flush();
            // Between runs, collect: G1 then gives memory back, so the idle
            // JVMs of the other peers do not sit on a large sweep's heap.
            System.gc();
            System.err.printf("java-peers: %s: %s in %.1f s%n", name, spec.name, (System.nanoTime() - t) / 1e9);
        }
    }

    /**
     * Answers a contention workload ({@link Contention}): threads sharing
     * one peer, in the Rust runner's figures.
     */
    private static void contention(String name, Map<String, Object> w) throws Exception {
        answer(name, w, () -> "\"measurements\":" + Contention.run(name, w));
    }

    /**
     * Answers a calendar workload: no measurements but the run's fires and
     * costs ({@code "calendar":{..}}), from which the Rust side computes the
     * figures.
     */
    private static void calendar(String name, Map<String, Object> w) throws Exception {
        answer(name, w, () -> "\"measurements\":[],\"calendar\":" + Peer.create(name).calendar(w));
    }

    /** What a workload's answer holds besides its type and name. */
    private interface Fields {
        String json() throws Exception;
    }

    /**
     * Prints {@code {"type":"result","workload":..,<fields>}} or the error
     * that stopped it, then stops every peer the run started and collects.
     */
    private static void answer(String name, Map<String, Object> w, Fields fields) throws Exception {
        String workload = str(w, "name", "workload");
        long t = System.nanoTime();
        String answer;
        try {
            answer = "{\"type\":\"result\",\"workload\":" + Json.quote(workload) + "," + fields.json() + "}";
        } catch (IllegalArgumentException e) {
            answer = "{\"type\":\"error\",\"message\":" + Json.quote(e.getMessage()) + "}";
        } catch (Exception | OutOfMemoryError e) {
            answer = "{\"type\":\"error\",\"message\":" + Json.quote(name + " on " + workload + ": " + e) + "}";
        } finally {
            Peer.stopAll();
        }
        OUT.println(answer);
        OUT.flush();
        System.gc();
        System.err.printf("java-peers: %s: %s in %.1f s%n", name, workload, (System.nanoTime() - t) / 1e9);
    }

    /**
     * Prints the draws of {@code workbench::random::golden()} as one JSON
     * line: the Rust test compares them with its own, so both sides draw
     * the same numbers.
     */
    private static void golden() {
        Dist.Rng r = new Dist.Rng(42, 7);
        StringBuilder b = new StringBuilder("{\"raw\":[");
        for (int i = 0; i < 4; i++) {
            b.append(i > 0 ? "," : "").append(Long.toUnsignedString(r.nextLong()));
        }
        b.append("],\"unit_bits\":[");
        for (int i = 0; i < 3; i++) {
            b.append(i > 0 ? "," : "").append(Long.toUnsignedString(Double.doubleToRawLongBits(r.unit())));
        }
        b.append("],\"below\":[");
        for (int i = 0; i < 3; i++) {
            b.append(i > 0 ? "," : "").append(r.below(1000));
        }
        b.append("],\"permutation\":[");
        int[] p = r.permutation(10);
        for (int i = 0; i < p.length; i++) {
            b.append(i > 0 ? "," : "").append(p[i]);
        }
        b.append("],\"samples\":[");
        long ms = 1_000_000L;
        Dist[] dists = {
            Dist.fixed(ms),
            Dist.uniform(10_000 * ms, 30_000 * ms),
            Dist.parse(Json.parse("{\"dist\":\"exponential\",\"mean\":\"12s\"}"), "golden"),
            Dist.parse(Json.parse("{\"dist\":\"lognormal\",\"median\":\"50ms\",\"sigma\":0.7}"), "golden"),
        };
        Dist.Rng s = new Dist.Rng(4, 1);
        boolean first = true;
        for (Dist d : dists) {
            for (int i = 0; i < 5; i++) {
                b.append(first ? "" : ",").append(d.sample(s));
                first = false;
            }
        }
        OUT.println(b.append("]}"));
        OUT.flush();
    }

    /**
     * Libraries that log through slf4j (here slf4j-simple: Netty, Quartz)
     * and c3p0, which logs through java.util.logging, log at INFO by
     * default: warnings and errors only, on stderr (the workbench keeps its
     * tail). Before anything logs (the env line loads Netty); a setting given
     * on the command line wins.
     */
    static void quietLogs() {
        String[][] settings = {
            {"org.slf4j.simpleLogger.defaultLogLevel", "warn"},
            {"com.mchange.v2.log.MLog", "com.mchange.v2.log.FallbackMLog"},
            {"com.mchange.v2.log.FallbackMLog.DEFAULT_CUTOFF_LEVEL", "WARNING"},
        };
        for (String[] kv : settings) {
            if (System.getProperty(kv[0]) == null) {
                System.setProperty(kv[0], kv[1]);
            }
        }
    }

    private static void skip(String name, String why) {
        System.err.println("java-peers: skipping " + name + ": " + why);
        OUT.println("{\"type\":\"peer\",\"scheduler\":" + Json.quote(name) + ",\"skipped\":" + Json.quote(why) + "}");
        OUT.flush();
    }

    private static void emitEnv() {
        String netty = "absent";
        try {
            Class<?> c = Class.forName("io.netty.util.HashedWheelTimer");
            Package pkg = c.getPackage();
            netty = pkg != null && pkg.getImplementationVersion() != null ? pkg.getImplementationVersion() : "present";
        } catch (ClassNotFoundException | NoClassDefFoundError e) {
            // Reported as absent.
        }
        String hdr = org.HdrHistogram.Histogram.class.getPackage().getImplementationVersion();
        OUT.println("{\"type\":\"env\",\"java\":" + Json.quote(System.getProperty("java.version"))
            + ",\"vm\":" + Json.quote(System.getProperty("java.vm.name") + " " + System.getProperty("java.vm.version"))
            + ",\"gc\":" + Json.quote(gcNames())
            + ",\"netty\":" + Json.quote(netty)
            + ",\"hdrhistogram\":" + Json.quote(hdr == null ? "present" : hdr)
            + ",\"cpus\":" + Runtime.getRuntime().availableProcessors() + "}");
        OUT.flush();
    }

    private static String gcNames() {
        StringBuilder b = new StringBuilder();
        for (var gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            if (b.length() > 0) {
                b.append(", ");
            }
            b.append(gc.getName());
        }
        return b.toString();
    }

    // Plan accessors: errors name the field.

    @SuppressWarnings("unchecked")
    static Map<String, Object> map(Object o, String field) {
        if (!(o instanceof Map)) {
            throw new IllegalArgumentException(field + ": expected an object");
        }
        return (Map<String, Object>) o;
    }

    @SuppressWarnings("unchecked")
    static List<Object> list(Map<String, Object> m, String key, String field) {
        Object o = m.get(key);
        if (!(o instanceof List)) {
            throw new IllegalArgumentException(field + "." + key + ": expected an array");
        }
        return (List<Object>) o;
    }

    static String str(Map<String, Object> m, String key, String field) {
        Object o = m.get(key);
        if (!(o instanceof String)) {
            throw new IllegalArgumentException(field + "." + key + ": expected a string");
        }
        return (String) o;
    }

    static double num(Map<String, Object> m, String key, String field) {
        Object o = m.get(key);
        if (!(o instanceof Number)) {
            throw new IllegalArgumentException(field + "." + key + ": expected a number");
        }
        double v = ((Number) o).doubleValue();
        if (v < 0 || Double.isNaN(v)) {
            throw new IllegalArgumentException(field + "." + key + ": must not be negative");
        }
        return v;
    }

    /** A u64 (a seed), as its 64 bits. */
    static long u64(Map<String, Object> m, String key, String field) {
        Object o = m.get(key);
        if (!(o instanceof Long)) {
            throw new IllegalArgumentException(field + "." + key + ": expected a whole number");
        }
        return (Long) o;
    }
}
