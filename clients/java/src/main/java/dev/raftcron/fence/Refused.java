package dev.raftcron.fence;

/**
 * A dispatch refused before or by the fence: answer {@link #status()} with {@link #body()}.
 * Each reason is a subclass, named like the conformance vectors' verdicts.
 */
public class Refused extends RuntimeException {
    private final int status;
    private final String verdict;

    Refused(int status, String verdict, String message) {
        super(message);
        this.status = status;
        this.verdict = verdict;
    }

    /** The HTTP status to answer. */
    public int status() {
        return status;
    }

    /** The conformance vectors' name of the reason: malformed, unsigned, bad_signature, ... */
    public String verdict() {
        return verdict;
    }

    /** The JSON body to answer. */
    public String body() {
        return "{\"error\":" + quote(getMessage()) + "}";
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }

    /** A fence header or variable is missing or malformed (400). */
    public static final class Malformed extends Refused {
        private final String field;

        public Malformed(String field, String reason) {
            super(400, "malformed", field + ": " + reason);
            this.field = field;
        }

        /** The header or variable at fault. */
        public String field() {
            return field;
        }
    }

    /** No signature (401). */
    public static final class Unsigned extends Refused {
        public Unsigned() {
            super(401, "unsigned", "fence: not signed");
        }
    }

    /** A signature none of the keys made for exactly this dispatch (401). */
    public static final class BadSignature extends Refused {
        public BadSignature(String reason) {
            super(401, "bad_signature", "fence: bad signature: " + reason);
        }
    }

    /** A genuine dispatch meant for another job or URL (403). */
    public static final class NotAccepted extends Refused {
        public NotAccepted(String reason) {
            super(403, "not_accepted", "fence: not accepted here: " + reason);
        }
    }

    /** A higher token was admitted for the scope (409: raftcron marks the attempt fenced). */
    public static final class Stale extends Refused {
        private final String scope;
        private final long token;
        private final long highest;

        public Stale(String scope, long token, long highest) {
            super(409, "stale", "stale fencing token " + Long.toUnsignedString(token) + " for scope "
                    + quote(scope) + ": " + Long.toUnsignedString(highest) + " already admitted");
            this.scope = scope;
            this.token = token;
            this.highest = highest;
        }

        public long highest() {
            return highest;
        }

        @Override
        public String body() {
            return "{\"error\":\"stale fencing token\",\"token\":" + Long.toUnsignedString(token)
                    + ",\"highest\":" + Long.toUnsignedString(highest) + ",\"scope\":" + quote(scope) + "}";
        }
    }

    /** The run's effect was applied before (answer 200: raftcron takes it as success). */
    public static final class Duplicate extends Refused {
        public Duplicate(String key) {
            super(200, "duplicate", "duplicate idempotency key " + quote(key));
        }

        @Override
        public String body() {
            return "{\"status\":\"duplicate\"}";
        }
    }
}
