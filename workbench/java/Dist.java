package peers;

import java.util.Map;

/**
 * A duration distribution as the workbench's specs write it (serde JSON of
 * {@code workbench::spec::Dist}): {@code {"dist":"fixed","value":"10ms"}},
 * {@code {"dist":"uniform","min":..,"max":..}},
 * {@code {"dist":"exponential","mean":..}} or
 * {@code {"dist":"lognormal","median":..,"sigma":S}}; durations are strings
 * with a unit. Sampling is the same arithmetic as the Rust side's
 * {@code Dist::sample}, on the same generator ({@link Rng}).
 */
final class Dist {
    private final String kind;
    private final double a;
    private final double b;

    private Dist(String kind, double a, double b) {
        this.kind = kind;
        this.a = a;
        this.b = b;
    }

    static Dist fixed(long ns) {
        return new Dist("fixed", ns, 0);
    }

    static Dist uniform(long min, long max) {
        return new Dist("uniform", min, max);
    }

    static Dist parse(Object o, String field) {
        Map<String, Object> m = Harness.map(o, field);
        String kind = Harness.str(m, "dist", field);
        switch (kind) {
            case "fixed":
                return new Dist(kind, duration(m, "value", field), 0);
            case "uniform": {
                long lo = duration(m, "min", field);
                long hi = duration(m, "max", field);
                if (hi < lo) {
                    throw new IllegalArgumentException(field + ".min: must not exceed max");
                }
                return new Dist(kind, lo, hi);
            }
            case "exponential":
                return new Dist(kind, duration(m, "mean", field), 0);
            case "lognormal":
                return new Dist(kind, duration(m, "median", field), Harness.num(m, "sigma", field));
            default:
                throw new IllegalArgumentException(field + ".dist: unknown distribution '" + kind + "'");
        }
    }

    /** A duration string ({@code "1500000ns"}, {@code "10ms"}, {@code "1.5s"}) in ns. */
    static long duration(Map<String, Object> m, String key, String field) {
        Object o = m.get(key);
        if (!(o instanceof String)) {
            throw new IllegalArgumentException(field + "." + key + ": expected a duration string such as \"10ms\"");
        }
        return parseDuration((String) o, field + "." + key);
    }

    static long parseDuration(String s, String field) {
        String t = s.trim();
        int k = 0;
        while (k < t.length() && !Character.isLetter(t.charAt(k)) && t.charAt(k) != 'µ') {
            k++;
        }
        double scale;
        switch (t.substring(k)) {
            case "ns": scale = 1; break;
            case "us": case "µs": scale = 1e3; break;
            case "ms": scale = 1e6; break;
            case "s": scale = 1e9; break;
            case "m": case "min": scale = 60e9; break;
            case "h": scale = 3600e9; break;
            default:
                throw new IllegalArgumentException(field + ": duration \"" + s + "\" needs a unit (ns, us, ms, s, m, h)");
        }
        double v;
        try {
            v = Double.parseDouble(t.substring(0, k).trim()) * scale;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(field + ": duration \"" + s + "\" is not a number");
        }
        if (!(v >= 0 && v < 9.2e18)) {
            throw new IllegalArgumentException(field + ": duration \"" + s + "\" is negative or too large");
        }
        return (long) v;
    }

    /** One draw, ns: the Rust side's formula on the Rust side's generator. */
    long sample(Rng r) {
        double v;
        switch (kind) {
            case "fixed":
                v = a;
                break;
            case "uniform":
                v = a + (b - a) * r.unit();
                break;
            case "exponential":
                v = -a * Math.log(1.0 - r.unit());
                break;
            default:
                v = a * Math.exp(b * r.normal());
        }
        if (Double.isFinite(v) && v > 0) {
            return (long) Math.min(v, 9.2e18 / 2);
        }
        return 0;
    }

    /** The largest value, or a high quantile for unbounded kinds (as the Rust side's {@code bound}). */
    long bound() {
        switch (kind) {
            case "fixed":
                return (long) a;
            case "uniform":
                return (long) b;
            case "exponential":
                return (long) Math.min(a * 20, 9.2e18);
            default:
                return (long) Math.min(a * Math.exp(5 * b), 9.2e18);
        }
    }

    /** The mean, for sizing arrays. */
    double mean() {
        switch (kind) {
            case "fixed":
            case "exponential":
                return a;
            case "uniform":
                return (a + b) / 2;
            default:
                return a * Math.exp(b * b / 2);
        }
    }

    /**
     * The workbench's random numbers, SplitMix64, bit for bit the Rust
     * {@code workbench::spec::Rng}: a seed and a stream number give the same
     * sequence in both languages.
     */
    static final class Rng {
        private long s;

        Rng(long seed, long stream) {
            s = seed ^ (stream * 0xD1B54A32D192ED03L);
            nextLong();
        }

        long nextLong() {
            s += 0x9E3779B97F4A7C15L;
            long z = s;
            z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
            z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
            return z ^ (z >>> 31);
        }

        /** Uniform in [0, 1). */
        double unit() {
            return (nextLong() >>> 11) * 0x1.0p-53;
        }

        /** Uniform in 0..n (n > 0): the high 64 bits of an unsigned 128-bit product. */
        long below(long n) {
            long x = nextLong();
            long hi = Math.multiplyHigh(x, n) + ((x >> 63) & n) + ((n >> 63) & x);
            return hi;
        }

        /** Standard normal (Box-Muller). */
        double normal() {
            double u1 = 1.0 - unit();
            double u2 = unit();
            return Math.sqrt(-2.0 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
        }

        /** A random permutation of 0..n, as the Rust side draws it. */
        int[] permutation(int n) {
            int[] v = new int[n];
            for (int i = 0; i < n; i++) {
                v[i] = i;
            }
            for (int i = n - 1; i > 0; i--) {
                int j = (int) below(i + 1);
                int t = v[i];
                v[i] = v[j];
                v[j] = t;
            }
            return v;
        }
    }
}
