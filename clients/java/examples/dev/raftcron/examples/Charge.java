package dev.raftcron.examples;

import dev.raftcron.fence.Keys;
import dev.raftcron.worker.Worker;
import java.nio.file.Path;
import java.util.List;

/** A worker of pool billing: it charges the cards of each run of its job, reporting progress. */
public final class Charge {
    private Charge() {}

    public static void main(String[] args) throws Exception {
        // [docs:java-worker]
        var worker = new Worker("billing", System.getenv("RAFTCRON_TOKEN"), "10.0.0.1:8001", "10.0.0.2:8001")
                .id("billing-1").keys(Keys.load(Path.of("raftcron-fence.key")));
        worker.handler("charge", ctx -> {
            List<String> cards = List.of(ctx.payload().split(","));
            for (int i = 0; i < cards.size(); i++) {
                charge(cards.get(i), ctx.token(), ctx.idempotencyKey()); // interrupted if superseded
                ctx.progress(100 * (i + 1) / cards.size(), "charged " + (i + 1) + " of " + cards.size());
            }
        });
        worker.run(); // until SIGTERM: running attempts finish, or are handed back
        // [/docs:java-worker]
    }

    /** Stands for the write a real handler fences with the token (docs/fencing.md). */
    private static void charge(String card, long token, String idempotencyKey) throws InterruptedException {
        Thread.sleep(100);
    }
}
