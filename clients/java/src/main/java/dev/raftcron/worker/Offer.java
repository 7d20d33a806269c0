package dev.raftcron.worker;

import dev.raftcron.fence.Run;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/** One offer of a poll's answer (docs/workers.md, "POST /v1/workers/{id}:poll"). */
record Offer(String runId, String job, String slot, long attempt, long token, String handler, String payload,
        Map<String, String> env, String idempotencyKey, String signature, Duration limit, Duration lease) {

    static Offer parse(Map<?, ?> o) {
        Map<String, String> env = new LinkedHashMap<>();
        if (o.get("env") instanceof Map<?, ?> m) {
            m.forEach((k, v) -> env.put(k.toString(), v.toString()));
        }
        return new Offer(str(o, "run_id"), str(o, "job"), str(o, "slot"), num(o, "attempt"), num(o, "token"),
                str(o, "handler"), str(o, "payload"), Map.copyOf(env), str(o, "idempotency_key"),
                str(o, "signature"), duration(str(o, "limit"), "limit"), duration(str(o, "lease"), "lease"));
    }

    Run run() {
        return new Run(token, job, runId, idempotencyKey, slot, attempt);
    }

    private static String str(Map<?, ?> o, String field) {
        Object v = o.get(field);
        return v == null ? "" : v.toString();
    }

    /** 64-bit integers come as strings in proto JSON; either form is taken. */
    private static long num(Map<?, ?> o, String field) {
        String v = str(o, field);
        try {
            return v.isEmpty() ? 0 : Long.parseUnsignedLong(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(field + ": " + v + " is not a number", e);
        }
    }

    /** A proto JSON duration: seconds with an optional fraction and an "s" ("10s", "0.500s"). */
    static Duration duration(String v, String field) {
        if (v.isEmpty()) {
            return Duration.ZERO;
        }
        if (!v.matches("[0-9]+(\\.[0-9]{1,9})?s")) {
            throw new IllegalArgumentException(field + ": " + v + " is not a duration like 10s or 0.500s");
        }
        String[] parts = v.substring(0, v.length() - 1).split("\\.");
        long nanos = parts.length == 1 ? 0 : Long.parseLong((parts[1] + "00000000").substring(0, 9));
        return Duration.ofSeconds(Long.parseLong(parts[0]), nanos);
    }

    static String duration(Duration d) {
        return d.getNano() == 0 ? d.getSeconds() + "s"
                : String.format("%d.%09ds", d.getSeconds(), d.getNano()).replaceAll("0+s$", "s");
    }
}
