package dev.raftcron.examples;

import com.sun.net.httpserver.HttpServer;
import dev.raftcron.fence.FenceHandler;
import dev.raftcron.fence.Keys;
import dev.raftcron.fence.SqlFence;
import dev.raftcron.fence.Verifier;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.sql.DriverManager;
import java.util.concurrent.Executors;

/**
 * A service that raftcron's job "slots" calls: it records each slot once, with the fencing
 * token of the attempt that applied it, in PostgreSQL (JDBC). {@link FenceHandler} verifies
 * the signature before anything reaches the database (401), and the write goes through
 * {@link SqlFence}, so a paused old leader's late attempt is refused by the database (409).
 *
 * <pre>
 * DATABASE_URL=jdbc:postgresql://... FENCE_KEY_FILE=raftcron-fence.key PORT=8080 \
 *   java -cp raftcron-fence.jar:postgresql.jar:. dev.raftcron.examples.Slots
 * </pre>
 *
 * <p>It prints "listening on HOST:PORT" (PORT 0: any free port). UNFENCED=1 writes without
 * the fence, for the end-to-end tests' negative control only.
 */
public final class Slots {
    private Slots() {}

    public static void main(String[] args) throws Exception {
        String url = System.getenv("DATABASE_URL");
        boolean unfenced = "1".equals(System.getenv("UNFENCED"));
        try (var db = DriverManager.getConnection(url); var create = db.createStatement()) {
            SqlFence.createTables(db);
            create.execute("CREATE TABLE IF NOT EXISTS slots "
                    + "(id BIGSERIAL PRIMARY KEY, slot TEXT NOT NULL, token BIGINT NOT NULL)");
        }
        var verifier = new Verifier(Keys.load(Path.of(System.getenv("FENCE_KEY_FILE")))).withJobs("slots");
        var port = Integer.parseInt(System.getenv().getOrDefault("PORT", "8080"));
        var server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 0);
        server.createContext("/slots", new FenceHandler(verifier, (exchange, run, body) -> {
            try (var db = DriverManager.getConnection(url)) {
                SqlFence.Write<Integer> record = tx -> {
                    try (var insert = tx.prepareStatement("INSERT INTO slots (slot, token) VALUES (?, ?)")) {
                        insert.setString(1, run.scheduledAt());
                        insert.setLong(2, run.token());
                        return insert.executeUpdate();
                    }
                };
                if (unfenced) {
                    record.apply(db); // auto-commit
                } else {
                    SqlFence.update(db, run, null, record);
                }
            }
            FenceHandler.answer(exchange, 200, "{\"status\":\"applied\"}");
        }));
        server.setExecutor(Executors.newCachedThreadPool());
        server.start();
        System.out.println("listening on 127.0.0.1:" + server.getAddress().getPort());
    }
}
