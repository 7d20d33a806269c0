package dev.raftcron.worker;

/**
 * A heartbeat or complete answered 409 {@code SUPERSEDED}: the attempt is no longer the run's
 * current one on the leader, and the worker must stop it.
 */
public final class Superseded extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final String why;

    Superseded(String why, String message) {
        super("superseded (" + why + "): " + message);
        this.why = why;
    }

    /** {@code lease_expired}, {@code cancelled} or {@code not_held} (docs/workers.md). */
    public String why() {
        return why;
    }
}
