package dev.raftcron.worker;

/**
 * Runs one attempt. Returning completes it {@code succeeded}; throwing completes it
 * {@code failed} with the exception as the detail, or {@code fenced} for a
 * {@link Fenced} or a {@link dev.raftcron.fence.Refused.Stale}. A handler stops when
 * {@link Context#isCancelled()} turns true; its thread is interrupted then too.
 */
@FunctionalInterface
public interface Handler {
    void handle(Context ctx) throws Exception;
}
