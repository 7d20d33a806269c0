package dev.raftcron.worker;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.IntPredicate;

/**
 * The calls of the HTTP worker protocol, to any node of a list: a connection error, a
 * 404, 5xx or 429 moves to the next node after a backoff (100 ms doubling to 5 s, with
 * jitter), so the worker follows the leader across failovers (docs/workers.md, "Retries").
 */
final class Api {
    static final Duration MIN_BACKOFF = Duration.ofMillis(100);
    static final Duration MAX_BACKOFF = Duration.ofSeconds(5);

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final List<URI> addrs;
    private final String token;
    private int next;
    /** How long the last heartbeat or complete that was answered took, one try, in nanoseconds. */
    private volatile long lastTryNanos;

    Api(List<String> addrs, String token) {
        if (addrs.isEmpty()) {
            throw new IllegalArgumentException("addrs: at least one host:port is required");
        }
        List<URI> us = new ArrayList<>();
        for (String a : addrs) {
            us.add(URI.create(a.contains("://") ? a : "http://" + a));
        }
        this.addrs = us;
        this.token = token == null ? "" : token;
    }

    /**
     * POSTs body to path, retrying on another node until the answer is one to keep or
     * {@code giveUpNanos} (System.nanoTime) passes; each try waits at most {@code timeout}.
     *
     * @throws Superseded on 409 SUPERSEDED
     * @throws ApiException on an answer not worth retrying, or the last one at giveUp
     */
    Map<String, Object> call(String path, Map<String, Object> body, Duration timeout, long giveUpNanos)
            throws InterruptedException {
        return call(path, body, timeout, giveUpNanos, Api::retried);
    }

    /** The same, retrying the statuses {@code retried} names. */
    Map<String, Object> call(String path, Map<String, Object> body, Duration timeout, long giveUpNanos,
            IntPredicate retried) throws InterruptedException {
        Duration backoff = MIN_BACKOFF;
        while (true) {
            URI base = addr();
            RuntimeException failure;
            long began = System.nanoTime();
            try {
                HttpRequest.Builder req = HttpRequest.newBuilder(base.resolve(path)).timeout(timeout)
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(Json.write(body)));
                if (!token.isEmpty()) {
                    req.header("Authorization", "Bearer " + token);
                }
                HttpResponse<String> resp = http.send(req.build(),
                        HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
                if (path.endsWith(":heartbeat") || path.endsWith(":complete")) { // a poll waits, a batch is large
                    lastTryNanos = System.nanoTime() - began;
                }
                if (resp.statusCode() == 200) {
                    return resp.body().isBlank() ? Map.of() : Json.parseObject(resp.body());
                }
                failure = refusal(resp.statusCode(), resp.body());
                if (!retried.test(resp.statusCode())) {
                    throw failure;
                }
            } catch (IOException e) {
                failure = new ApiException(0, "", base + ": " + e);
            }
            synchronized (this) {
                next++;
            }
            long sleep = ThreadLocalRandom.current().nextLong(backoff.toMillis() / 2, backoff.toMillis() + 1);
            if (System.nanoTime() + sleep * 1_000_000 - giveUpNanos > 0) {
                throw failure;
            }
            Thread.sleep(sleep);
            backoff = backoff.multipliedBy(2).compareTo(MAX_BACKOFF) > 0 ? MAX_BACKOFF : backoff.multipliedBy(2);
        }
    }

    /** The round trip of the last answered try: what a heartbeat costs now. */
    Duration roundTrip() {
        return Duration.ofNanos(lastTryNanos);
    }

    private synchronized URI addr() {
        return addrs.get(Math.floorMod(next, addrs.size()));
    }

    /** 404 and 501: a node of a release without the protocol; 5xx: no leader, or down. */
    static boolean retried(int status) {
        return status == 404 || status == 429 || status >= 500;
    }

    /** The google.rpc.Status answer as an exception: its reason, and why for SUPERSEDED. */
    static RuntimeException refusal(int status, String body) {
        String message = body;
        String reason = "";
        String why = "";
        try {
            Map<String, Object> st = Json.parseObject(body);
            message = String.valueOf(st.getOrDefault("message", body));
            if (st.get("details") instanceof List<?> details) {
                for (Object d : details) {
                    if (d instanceof Map<?, ?> m && m.get("reason") instanceof String r) {
                        reason = r;
                        if (m.get("metadata") instanceof Map<?, ?> md && md.get("why") instanceof String w) {
                            why = w;
                        }
                    }
                }
            }
        } catch (IllegalArgumentException notJson) {
            // A proxy's page, say: keep the body as the message.
        }
        if (status == 409 && reason.equals("SUPERSEDED")) {
            return new Superseded(why, message);
        }
        return new ApiException(status, reason, message);
    }
}
