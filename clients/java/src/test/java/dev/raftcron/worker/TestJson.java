package dev.raftcron.worker;

/** The SDK's JSON reader, for the other packages' tests (it is not part of the SDK's API). */
public final class TestJson {
    private TestJson() {}

    public static Object parse(String s) {
        return Json.parse(s);
    }
}
