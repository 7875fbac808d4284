package peers;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The Java side of the workbench's JDK and Netty peers.
 *
 * <p>Reads a plan (JSON) on stdin:
 * <pre>{"peers": ["jdk-timer", ...], "repeats": 3, "warmup": {"rounds": 3, "timers": 50000},
 *  "workloads": [&lt;serde JSON of workbench::spec::Workload, profile applied&gt;, ...]}</pre>
 * runs every workload {@code repeats} times against each named peer and
 * writes one JSON object per line on stdout: first {@code {"type":"env",...}}
 * (JVM, GC, Netty and HdrHistogram versions), then per peer a
 * {@code {"type":"peer","scheduler":..,"semantics":..}} line (or
 * {@code "skipped": why}), then per (workload, repeat)
 * {@code {"type":"result","scheduler":..,"workload":..,"repeat":k,
 * "measurements":[{"metric":..,"value":..,"unit":..,"size":..},...]}}: the
 * workbench's own {@code Measurement} format. Progress goes to stderr. A bad
 * plan exits with status 2 and a message naming the field, before anything
 * runs. The Rust side is {@code workbench/src/peers/java.rs}.
 *
 * <p>Every peer is warmed up (schedule, reset, cancel, one-shot and periodic
 * fires) before it is measured so the JIT has compiled its hot paths, and
 * every repeat gets a fresh instance of the peer.
 */
public final class Harness {
    private static final PrintStream OUT = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);

    private Harness() {
    }

    public static void main(String[] args) throws Exception {
        String text = new String(readAll(System.in), StandardCharsets.UTF_8);
        List<Object> peers;
        List<Timeline.Spec> specs = new ArrayList<>();
        int repeats;
        int warmRounds;
        int warmTimers;
        try {
            Map<String, Object> plan = map(Json.parse(text), "plan");
            peers = list(plan, "peers", "plan");
            List<Object> workloads = list(plan, "workloads", "plan");
            repeats = plan.containsKey("repeats") ? (int) num(plan, "repeats", "plan") : 1;
            Map<String, Object> warm = plan.get("warmup") != null ? map(plan.get("warmup"), "plan.warmup") : Map.of();
            warmRounds = warm.containsKey("rounds") ? (int) num(warm, "rounds", "plan.warmup") : 3;
            warmTimers = warm.containsKey("timers") ? Math.max(1, (int) num(warm, "timers", "plan.warmup")) : 50_000;
            for (int w = 0; w < workloads.size(); w++) {
                specs.add(new Timeline.Spec(map(workloads.get(w), "workloads[" + w + "]"), "workloads[" + w + "]"));
            }
        } catch (IllegalArgumentException e) {
            System.err.println("java-peers: bad plan: " + e.getMessage());
            System.exit(2);
            return;
        }

        emitEnv();
        for (Object o : peers) {
            String name = String.valueOf(o);
            Peer probe;
            try {
                probe = Peer.create(name);
            } catch (ClassNotFoundException | NoClassDefFoundError e) {
                skip(name, "Netty's HashedWheelTimer is not on the classpath (install libnetty-java)");
                continue;
            } catch (Exception e) {
                skip(name, "cannot start: " + e);
                continue;
            }
            if (probe == null) {
                skip(name, "unknown Java peer");
                continue;
            }
            OUT.println("{\"type\":\"peer\",\"scheduler\":" + Json.quote(name) + ",\"semantics\":" + Json.quote(probe.semantics()) + "}");
            OUT.flush();
            probe.shutdown();
            long t = System.nanoTime();
            Timeline.warmup(name, warmRounds, warmTimers);
            System.err.printf("java-peers: %s: warmed up in %.1f s%n", name, (System.nanoTime() - t) / 1e9);
            for (Timeline.Spec spec : specs) {
                for (int r = 0; r < repeats; r++) {
                    t = System.nanoTime();
                    String m = Timeline.run(name, spec);
                    OUT.println("{\"type\":\"result\",\"scheduler\":" + Json.quote(name) + ",\"workload\":" + Json.quote(spec.name)
                        + ",\"repeat\":" + r + ",\"measurements\":" + m + "}");
                    OUT.flush();
                    System.err.printf("java-peers: %s: %s #%d in %.1f s%n", name, spec.name, r + 1, (System.nanoTime() - t) / 1e9);
                }
            }
        }
        OUT.flush();
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

    private static byte[] readAll(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        byte[] buf = new byte[8192];
        int n;
        while ((n = in.read(buf)) > 0) {
            b.write(buf, 0, n);
        }
        return b.toByteArray();
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
