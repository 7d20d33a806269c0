package dev.raftcron.worker;

import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;

/**
 * Reports attempts' outcomes (docs/workers.md, "POST /v1/attempts:batchComplete"): each is
 * queued, and one thread sends whatever is queued as one call (at most 1000 outcomes and
 * 2 MiB), so a thousand attempts ending together cost a few calls rather than a thousand. A
 * node without the call (404, or 501 from a leader without it, during a rolling upgrade) turns
 * it to one {@code :complete} per outcome for a while. An outcome is done, and its attempt's
 * slot free, once its result is known or given up.
 */
final class Completer {
    private static final System.Logger LOG = System.getLogger("dev.raftcron.worker");
    static final String PATH = "/v1/attempts:batchComplete";
    /** The most outcomes one call carries. */
    static final int MAX_BATCH = 1000;
    /** The most bytes of JSON one call carries: well within the nodes' 4 MiB body. */
    static final int MAX_BATCH_BYTES = 2 << 20;
    /** The bytes of a batch call's body around its items. */
    private static final int ENVELOPE = "{\"outcomes\":[]}".length();
    /** How long outcomes go one by one after a node answered without the batch call. */
    static final Duration ONE_BY_ONE_FOR = Duration.ofSeconds(60);
    /** How long an outcome is retried at least (its lease, when longer). */
    static final Duration DELIVER_FOR = Duration.ofSeconds(60);
    private static final Duration TRY_FOR = Duration.ofSeconds(10);

    /** One attempt's outcome; {@code done} runs once its result is known or given up. */
    static final class Outcome {
        final Context ctx;
        final String outcome;
        final String output;
        final String detail;
        final long giveUpNanos;
        final Runnable done;
        /** The bytes of its item in a batch's JSON, with the comma that follows it. */
        final int size;

        Outcome(Context ctx, String outcome, String output, String detail, Runnable done) {
            this.ctx = ctx;
            this.outcome = outcome;
            this.output = output;
            this.detail = detail;
            this.giveUpNanos = System.nanoTime() + Math.max(ctx.lease.toNanos(), DELIVER_FOR.toNanos());
            this.done = done;
            this.size = Json.write(item()).getBytes(StandardCharsets.UTF_8).length + 1;
        }

        /** The fields of a {@code :complete} body. */
        Map<String, Object> body() {
            Map<String, Object> b = new LinkedHashMap<>();
            b.put("outcome", outcome);
            b.put("output", output);
            b.put("detail", detail);
            return b;
        }

        /** An item of a batch: the body with the attempt it is of. */
        Map<String, Object> item() {
            Map<String, Object> b = new LinkedHashMap<>();
            b.put("run_id", ctx.runId());
            b.put("token", Long.toUnsignedString(ctx.token()));
            b.putAll(body());
            return b;
        }
    }

    private final Api api;
    /** Runs the one-by-one calls, each on its own, as the attempts' threads once did. */
    private final Executor threads;
    private final BlockingQueue<Outcome> queue = new LinkedBlockingQueue<>();
    private final Thread thread;
    /** Until when (System.nanoTime) outcomes go one by one, while oneByOne; the thread's own. */
    private long oneByOneUntil;
    private boolean oneByOne;

    Completer(Api api, Executor threads, ThreadFactory factory) {
        this.api = api;
        this.threads = threads;
        this.thread = factory.newThread(this::loop);
    }

    void start() {
        thread.start();
    }

    /** Ends the thread: what is queued or in flight then is not reported. */
    void stop() {
        thread.interrupt();
    }

    void add(Outcome o) {
        queue.add(o);
    }

    private void loop() {
        try {
            while (true) {
                send(next());
            }
        } catch (InterruptedException stopped) {
            // The worker has stopped.
        }
    }

    /**
     * What is queued, up to MAX_BATCH outcomes and MAX_BATCH_BYTES of JSON (one outcome alone
     * may be more), waiting for an outcome when none is.
     */
    private List<Outcome> next() throws InterruptedException {
        List<Outcome> batch = new ArrayList<>();
        batch.add(queue.take());
        long bytes = ENVELOPE + batch.get(0).size;
        // Only this thread takes from the queue: the outcome it peeks at is the one it polls.
        for (Outcome o = queue.peek(); o != null && batch.size() < MAX_BATCH && bytes + o.size <= MAX_BATCH_BYTES;
                o = queue.peek()) {
            bytes += o.size;
            batch.add(queue.poll());
        }
        return List.copyOf(batch);
    }

    private void send(List<Outcome> batch) throws InterruptedException {
        if (oneByOne && System.nanoTime() - oneByOneUntil < 0) {
            oneByOne(batch);
            return;
        }
        oneByOne = false;
        List<Object> items = new ArrayList<>(batch.size());
        long giveUp = batch.get(0).giveUpNanos;
        for (Outcome o : batch) {
            items.add(o.item());
            giveUp = Math.max(giveUp, o.giveUpNanos);
        }
        Map<String, Object> resp;
        try {
            resp = api.call(PATH, Map.of("outcomes", items), TRY_FOR, giveUp, Completer::retried);
        } catch (ApiException e) {
            if (e.status() == 404 || e.status() == 501) {
                LOG.log(Level.INFO, "a node without " + PATH + " (" + e.getMessage() + "): reporting outcomes one by one for "
                        + Offer.duration(ONE_BY_ONE_FOR));
                oneByOneUntil = System.nanoTime() + ONE_BY_ONE_FOR.toNanos();
                oneByOne = true;
                oneByOne(batch);
            } else if (e.status() == 400) {
                // One bad item refuses them all; alone, the others are taken and it is named.
                LOG.log(Level.WARNING, "outcomes refused (" + e.getMessage() + "): reporting these one by one");
                oneByOne(batch);
            } else {
                notDelivered(batch, e.getMessage());
            }
            return;
        } catch (RuntimeException e) { // an answer that is not the contract's: nothing to retry on
            notDelivered(batch, e.toString());
            return;
        }
        List<?> results = resp.get("results") instanceof List<?> l ? l : List.of();
        for (int i = 0; i < batch.size(); i++) {
            Outcome o = batch.get(i);
            Map<?, ?> r = i < results.size() && results.get(i) instanceof Map<?, ?> m ? m : Map.of();
            if (Boolean.TRUE.equals(r.get("taken"))) {
                o.done.run();
            } else if (r.get("superseded") instanceof String why) {
                notTaken(o, new Superseded(why, "no longer the run's current attempt"));
            } else {
                notDelivered(o, r.get("error") instanceof String err ? "refused: " + err : "no result for it in " + resp);
            }
        }
    }

    /** The batch's outcomes, each by {@code :complete} on a thread of its own. */
    private void oneByOne(List<Outcome> batch) {
        for (Outcome o : batch) {
            try {
                threads.execute(() -> complete(o));
            } catch (RejectedExecutionException stopped) {
                notDelivered(o, "the worker has stopped");
            }
        }
    }

    private void complete(Outcome o) {
        try {
            api.call(Worker.path(o.ctx, "complete"), o.body(), TRY_FOR, o.giveUpNanos);
            o.done.run();
        } catch (Superseded s) {
            notTaken(o, s);
        } catch (ApiException e) {
            notDelivered(o, e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The leader holds another attempt as current: said, unless the worker itself had stopped this one. */
    private static void notTaken(Outcome o, Superseded s) {
        if (!o.outcome.equals("cancelled")) {
            LOG.log(Level.INFO, o.ctx.runId() + ": outcome " + o.outcome + " not taken: " + s.getMessage());
        }
        o.done.run();
    }

    private static void notDelivered(List<Outcome> batch, String why) {
        for (Outcome o : batch) {
            notDelivered(o, why);
        }
    }

    private static void notDelivered(Outcome o, String why) {
        LOG.log(Level.WARNING, o.ctx.runId() + ": outcome " + o.outcome + " not delivered: " + why);
        o.done.run();
    }

    /** As every call, but a node without the batch call answers it for good. */
    private static boolean retried(int status) {
        return status != 404 && status != 501 && Api.retried(status);
    }
}
