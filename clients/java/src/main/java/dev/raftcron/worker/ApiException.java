package dev.raftcron.worker;

/** A node refused a call with an answer that retrying does not change (400, 401, 403, ...). */
public final class ApiException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final int status;
    private final String reason;

    ApiException(int status, String reason, String message) {
        super(status + (reason.isEmpty() ? "" : " " + reason) + ": " + message);
        this.status = status;
        this.reason = reason;
    }

    /** The HTTP status. */
    public int status() {
        return status;
    }

    /** The {@code ErrorInfo} reason ({@code NOT_LEADER}, ...), or empty. */
    public String reason() {
        return reason;
    }
}
