package dev.raftcron.worker;

import dev.raftcron.fence.Run;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Arrays;

/**
 * The worker program of the SDKs' end-to-end test (test/e2e/sdk_workers_test.go): it serves
 * the handler {@code e2e-sink} of pool E2E_POOL as worker E2E_WORKER_ID, polling the nodes at
 * E2E_ADDRS. An attempt runs for the payload's {@code run_ms}, reporting progress, then posts
 * to E2E_SINK/<job> with the attempt's fencing headers. It prints {@code start}, {@code wrote
 * <status>} and {@code cancelled <why>} lines, each with the run ID and token.
 */
public final class E2eWorker {
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    private E2eWorker() {}

    private static synchronized void say(String what, Context ctx, String detail) {
        System.out.println((what + " " + ctx.runId() + " " + Long.toUnsignedString(ctx.token()) + " " + detail).strip());
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        String sink = System.getenv("E2E_SINK");
        String token = System.getenv("E2E_TOKEN");
        Worker w = new Worker(System.getenv("E2E_POOL"), token == null || token.isEmpty() ? null : token,
                System.getenv("E2E_ADDRS").split(",")).id(System.getenv("E2E_WORKER_ID")).concurrency(8);
        w.handler("e2e-sink", ctx -> {
            Object ms = Json.parseObject(ctx.payload().isEmpty() ? "{}" : ctx.payload()).getOrDefault("run_ms", 0L);
            long runMs = ((Number) ms).longValue();
            say("start", ctx, "");
            long end = System.nanoTime() + runMs * 1_000_000;
            try {
                for (long left; (left = end - System.nanoTime()) > 0;) {
                    ctx.progress((int) (100 - 100 * left / (runMs * 1_000_000)), left / 1_000_000 + " ms to go");
                    Thread.sleep(Math.max(1, Math.min(left / 1_000_000, 500)));
                }
            } catch (InterruptedException e) {
                say("cancelled", ctx, ctx.cancelReason());
                throw e;
            }
            int status = post(sink, ctx);
            say("wrote", ctx, Integer.toString(status));
            if (status == 409) {
                throw new Fenced("the sink refused token " + Long.toUnsignedString(ctx.token()));
            }
            if (status != 200) {
                throw new IllegalStateException("the sink answered " + status);
            }
            ctx.output("sink " + status);
        });
        w.run();
    }

    private static int post(String sink, Context ctx) throws Exception {
        Run r = ctx.run();
        String[] headers = {Run.HEADER_FENCING_TOKEN, Long.toUnsignedString(r.token()), Run.HEADER_JOB, r.job(),
            Run.HEADER_RUN_ID, r.runId(), Run.HEADER_SCHEDULED_AT, r.scheduledAt(),
            Run.HEADER_ATTEMPT, Long.toString(r.attempt()), Run.HEADER_IDEMPOTENCY_KEY, r.idempotencyKey()};
        HttpRequest req = HttpRequest.newBuilder(URI.create(sink + "/" + ctx.job())).timeout(Duration.ofSeconds(5))
                .headers(Arrays.copyOf(headers, headers.length)).POST(HttpRequest.BodyPublishers.noBody()).build();
        return HTTP.send(req, HttpResponse.BodyHandlers.discarding()).statusCode();
    }
}
