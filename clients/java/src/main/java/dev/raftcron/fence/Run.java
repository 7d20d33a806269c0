package dev.raftcron.fence;

import java.nio.charset.StandardCharsets;
import java.time.LocalDateTime;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The identity of one dispatched run attempt.
 *
 * @param token fencing token, an unsigned 64-bit number (use Long.compareUnsigned)
 * @param scheduledAt RFC 3339 UTC, canonical: the fraction without trailing zeros
 * @param attempt 1-based
 */
public record Run(long token, String job, String runId, String idempotencyKey, String scheduledAt, long attempt) {
    public static final String HEADER_FENCING_TOKEN = "X-Raftcron-Fencing-Token";
    public static final String HEADER_JOB = "X-Raftcron-Job";
    public static final String HEADER_RUN_ID = "X-Raftcron-Run-Id";
    public static final String HEADER_SCHEDULED_AT = "X-Raftcron-Scheduled-At";
    public static final String HEADER_ATTEMPT = "X-Raftcron-Attempt";
    public static final String HEADER_IDEMPOTENCY_KEY = "Idempotency-Key";
    public static final String HEADER_SIGNATURE = "X-Raftcron-Signature";
    public static final String ENV_SIGNATURE = "RAFTCRON_SIGNATURE";
    public static final int MAX_FIELD_LEN = 256;

    private static final List<String> HEADERS = List.of(HEADER_FENCING_TOKEN, HEADER_JOB, HEADER_RUN_ID,
            HEADER_IDEMPOTENCY_KEY, HEADER_SCHEDULED_AT, HEADER_ATTEMPT);
    private static final List<String> ENV = List.of("RAFTCRON_FENCING_TOKEN", "RAFTCRON_JOB", "RAFTCRON_RUN_ID",
            "RAFTCRON_IDEMPOTENCY_KEY", "RAFTCRON_SCHEDULED_AT", "RAFTCRON_ATTEMPT");
    private static final Pattern JOB = Pattern.compile("[a-z0-9][a-z0-9._-]{0,62}");
    private static final Pattern DIGITS = Pattern.compile("[0-9]{1,20}");
    private static final Pattern TIME = Pattern.compile(
            "([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})(?:\\.([0-9]{1,9}))?Z");

    /**
     * Parses the run from request headers; {@code values} returns every value of a header
     * name (any case), as {@code com.sun.net.httpserver.Headers::get} does (null or empty
     * when absent).
     */
    public static Run fromHeaders(Function<String, List<String>> values) {
        return parse(HEADERS, values);
    }

    /** Parses the run from an exec run's (or worker attempt's) environment. */
    public static Run fromEnv(Map<String, String> env) {
        return parse(ENV, name -> {
            String v = env.get(name);
            return v == null || v.isEmpty() ? List.of() : List.of(v);
        });
    }

    private static Run parse(List<String> n, Function<String, List<String>> values) {
        Function<String, String> one = name -> {
            List<String> vs = values.apply(name);
            if (vs == null || vs.isEmpty() || (vs.size() == 1 && vs.get(0).isEmpty())) {
                throw new Refused.Malformed(name, "missing");
            }
            if (vs.size() > 1) {
                throw new Refused.Malformed(name, "given " + vs.size() + " times, want once");
            }
            return vs.get(0);
        };
        long token = number(n.get(0), one.apply(n.get(0)), false);
        if (token == 0) {
            throw new Refused.Malformed(n.get(0), "token 0 is never issued");
        }
        String job = one.apply(n.get(1));
        if (!JOB.matcher(job).matches()) {
            throw new Refused.Malformed(n.get(1), "not a job name: want [a-z0-9][a-z0-9._-]{0,62}");
        }
        String runId = text(n.get(2), one.apply(n.get(2)));
        String key = text(n.get(3), one.apply(n.get(3)));
        String at = canonicalTime(n.get(4), one.apply(n.get(4)));
        long attempt = number(n.get(5), one.apply(n.get(5)), true);
        if (attempt == 0) {
            throw new Refused.Malformed(n.get(5), "attempts are numbered from 1");
        }
        return new Run(token, job, runId, key, at, attempt);
    }

    private static long number(String field, String s, boolean bits32) {
        try {
            if (DIGITS.matcher(s).matches()) {
                long v = Long.parseUnsignedLong(s);
                if (!bits32 || (v >= 0 && v <= 0xFFFF_FFFFL)) {
                    return v;
                }
            }
        } catch (NumberFormatException e) {
            // out of range: reported below
        }
        throw new Refused.Malformed(field, "not an unsigned " + (bits32 ? 32 : 64) + "-bit integer");
    }

    private static String text(String field, String s) {
        if (s.getBytes(StandardCharsets.UTF_8).length > MAX_FIELD_LEN) {
            throw new Refused.Malformed(field, "longer than " + MAX_FIELD_LEN + " bytes");
        }
        if (hasControl(s)) {
            throw new Refused.Malformed(field, "contains a control character");
        }
        return s;
    }

    static boolean hasControl(String s) {
        return s.chars().anyMatch(c -> c < 0x20 || c == 0x7f);
    }

    /** An RFC 3339 UTC time as raftcron signs it: the fraction without trailing zeros. */
    public static String canonicalTime(String field, String s) {
        Matcher m = TIME.matcher(s);
        if (!m.matches()) {
            throw new Refused.Malformed(field, "not an RFC 3339 time in UTC (want e.g. 2026-11-22T01:02:03Z)");
        }
        try {
            LocalDateTime.parse(m.group(1));
        } catch (DateTimeParseException e) {
            throw new Refused.Malformed(field, "not a valid date and time");
        }
        String frac = m.group(2) == null ? "" : m.group(2).replaceAll("0+$", "");
        return m.group(1) + (frac.isEmpty() ? "" : "." + frac) + "Z";
    }
}
