package dev.raftcron.fence;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * The SQL fence over JDBC for PostgreSQL: the tables and statements of Go's
 * fence/sqlfence, so services in several languages can share them.
 */
public final class SqlFence {
    /** The write the fence runs inside its transaction. */
    @FunctionalInterface
    public interface Write<T> {
        T apply(Connection tx) throws SQLException;
    }

    private SqlFence() {}

    /** Creates the fence tables if they do not exist. */
    public static void createTables(Connection c) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute("CREATE TABLE IF NOT EXISTS raftcron_fences (scope TEXT PRIMARY KEY, token BIGINT NOT NULL)");
            s.execute("CREATE TABLE IF NOT EXISTS raftcron_applied_runs (idempotency_key TEXT PRIMARY KEY, "
                    + "token BIGINT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())");
        }
    }

    /**
     * Runs write for run in one transaction with the fence, as Go's sqlfence.Update does:
     * throws {@link Refused.Stale} (nothing committed) if a higher token was admitted for
     * scope (null: the job); throws {@link Refused.Duplicate} (the admission committed,
     * write not called) if the key was recorded; otherwise runs write and commits it with
     * the token and the key, or rolls all back if it throws. Runs at READ COMMITTED; the
     * connection's auto-commit and isolation are restored afterwards.
     */
    public static <T> T update(Connection c, Run run, String scope, Write<T> write) throws SQLException {
        String sc = scope == null || scope.isEmpty() ? run.job() : scope;
        if (run.token() <= 0) {
            throw new IllegalArgumentException("token " + Long.toUnsignedString(run.token())
                    + ": outside 1..2^63-1, which a BIGINT holds");
        }
        if (sc.getBytes(StandardCharsets.UTF_8).length > Run.MAX_FIELD_LEN) {
            throw new IllegalArgumentException("scope longer than " + Run.MAX_FIELD_LEN + " bytes");
        }
        boolean autoCommit = c.getAutoCommit();
        int isolation = c.getTransactionIsolation();
        c.setAutoCommit(false);
        c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
        try {
            advance(c, sc, run.token());
            if (exec(c, "INSERT INTO raftcron_applied_runs (idempotency_key, token) VALUES (?, ?) "
                    + "ON CONFLICT (idempotency_key) DO NOTHING", run.idempotencyKey(), run.token()) == 0) {
                c.commit();
                throw new Refused.Duplicate(run.idempotencyKey());
            }
            T result = write.apply(c);
            c.commit();
            return result;
        } catch (Refused.Duplicate d) {
            throw d;
        } catch (SQLException | RuntimeException e) {
            c.rollback();
            throw e;
        } finally {
            c.setAutoCommit(autoCommit);
            c.setTransactionIsolation(isolation);
        }
    }

    private static void advance(Connection c, String scope, long token) throws SQLException {
        exec(c, "INSERT INTO raftcron_fences (scope, token) VALUES (?, 0) ON CONFLICT (scope) DO NOTHING", scope);
        if (exec(c, "UPDATE raftcron_fences SET token = ? WHERE scope = ? AND token <= ?", token, scope, token) == 1) {
            return;
        }
        try (PreparedStatement p = c.prepareStatement("SELECT token FROM raftcron_fences WHERE scope = ?")) {
            p.setString(1, scope);
            try (ResultSet rs = p.executeQuery()) {
                rs.next();
                throw new Refused.Stale(scope, token, rs.getLong(1));
            }
        }
    }

    private static int exec(Connection c, String sql, Object... args) throws SQLException {
        try (PreparedStatement p = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                p.setObject(i + 1, args[i]);
            }
            return p.executeUpdate();
        }
    }
}
