package dev.raftcron.worker;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The worker protocol of a node, faked on loopback for the outcome tests: polls take the
 * offers a test queues, heartbeats are answered, and outcomes, in batches or one by one, are
 * recorded and answered as the test says.
 */
final class FakeNode implements AutoCloseable {
    private final HttpServer server;
    private final ExecutorService exchanges = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "fake-node");
        t.setDaemon(true);
        return t;
    });
    private final BlockingQueue<Map<String, Object>> offers = new LinkedBlockingQueue<>();
    private final AtomicLong tokens = new AtomicLong(100);
    /** Statuses the next batch calls answer, one each, before batches are answered 200. */
    final BlockingQueue<Integer> batchStatuses = new LinkedBlockingQueue<>();
    /** A batch's result for an attempt of this run ID; {"taken": true} for the others. */
    final Map<String, Map<String, Object>> results = new ConcurrentHashMap<>();
    /** The items of each batch call as it came, refused or not. */
    final List<List<Map<String, Object>>> batches = new CopyOnWriteArrayList<>();
    /** The bytes of each batch call's body, as batches. */
    final List<Integer> batchBytes = new CopyOnWriteArrayList<>();
    /** Each {@code :complete} body, with the run_id and token of its path. */
    final List<Map<String, Object>> completes = new CopyOnWriteArrayList<>();
    /** Batch calls answered 200. */
    final AtomicInteger batchesTaken = new AtomicInteger();
    /** Batch calls wait on it before they are answered. */
    volatile CountDownLatch hold = new CountDownLatch(0);

    FakeNode() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.setExecutor(exchanges);
        server.createContext("/", this::serve);
        server.start();
    }

    String addr() {
        return "127.0.0.1:" + server.getAddress().getPort();
    }

    /** Offers an attempt of run ID to handler h with this payload, under a fresh token; the token. */
    long offer(String runId, String payload) {
        long token = tokens.incrementAndGet();
        Map<String, Object> o = new LinkedHashMap<>();
        o.put("run_id", runId);
        o.put("job", "j");
        o.put("slot", "2026-01-01T00:00:00Z");
        o.put("attempt", 1);
        o.put("token", Long.toString(token));
        o.put("handler", "h");
        o.put("payload", payload);
        o.put("lease", "10s");
        o.put("limit", "60s");
        offers.add(o);
        return token;
    }

    /** Every item of every batch and every one-by-one body, by run ID. */
    Map<String, Map<String, Object>> outcomes() {
        Map<String, Map<String, Object>> byRun = new LinkedHashMap<>();
        for (List<Map<String, Object>> b : batches) {
            b.forEach(item -> byRun.put((String) item.get("run_id"), item));
        }
        completes.forEach(c -> byRun.put((String) c.get("run_id"), c));
        return byRun;
    }

    private void serve(HttpExchange ex) throws IOException {
        try {
            String path = ex.getRequestURI().getPath();
            byte[] raw = ex.getRequestBody().readAllBytes();
            Map<String, Object> body = Json.parseObject(new String(raw, StandardCharsets.UTF_8));
            if (path.endsWith(":poll")) {
                answer(ex, 200, Map.of("offers", poll(body)));
            } else if (path.endsWith(":heartbeat")) {
                answer(ex, 200, Map.of("lease", "10s"));
            } else if (path.equals(Completer.PATH)) {
                batch(ex, body, raw.length);
            } else if (path.endsWith(":complete")) {
                String[] parts = path.substring(0, path.length() - ":complete".length()).split("/");
                body.put("run_id", parts[parts.length - 2]);
                body.put("token", parts[parts.length - 1]);
                completes.add(body);
                answer(ex, 200, Map.of());
            } else {
                answer(ex, 404, Map.of("code", 5, "message", "Not Found"));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            answer(ex, 500, Map.of("code", 13, "message", e.toString()));
        } finally {
            ex.close();
        }
    }

    private List<Object> poll(Map<String, Object> body) throws InterruptedException {
        List<Object> out = new ArrayList<>();
        Map<String, Object> first = offers.poll(200, TimeUnit.MILLISECONDS);
        if (first != null) {
            out.add(first);
            List<Map<String, Object>> more = new ArrayList<>();
            offers.drainTo(more, ((Number) body.get("max")).intValue() - 1);
            out.addAll(more);
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    private void batch(HttpExchange ex, Map<String, Object> body, int bytes) throws IOException, InterruptedException {
        List<Map<String, Object>> items = new ArrayList<>();
        for (Object o : (List<?>) body.get("outcomes")) {
            items.add((Map<String, Object>) o);
        }
        batches.add(items);
        batchBytes.add(bytes);
        if (!hold.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("a batch was held for 30 s");
        }
        Integer status = batchStatuses.poll();
        if (status != null) {
            answer(ex, status, Map.of("code", status == 501 ? 12 : 14, "message", "answered " + status));
            return;
        }
        List<Object> rs = new ArrayList<>();
        for (Map<String, Object> item : items) {
            rs.add(results.getOrDefault((String) item.get("run_id"), Map.of("taken", true)));
        }
        batchesTaken.incrementAndGet();
        answer(ex, 200, Map.of("results", rs));
    }

    private static void answer(HttpExchange ex, int status, Map<String, Object> body) throws IOException {
        byte[] b = Json.write(body).getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(status, b.length);
        ex.getResponseBody().write(b);
    }

    @Override
    public void close() {
        server.stop(0);
        exchanges.shutdownNow();
    }
}
