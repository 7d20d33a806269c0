package dev.raftcron.worker;

/**
 * Thrown by a handler whose downstream refused its fencing token (a newer attempt exists):
 * the attempt is completed {@code fenced}, which is never retried.
 */
public class Fenced extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public Fenced(String message) {
        super(message);
    }
}
