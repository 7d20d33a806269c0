package fence

import (
	"errors"
	"reflect"
	"testing"
)

func TestParentRunsRoundTrip(t *testing.T) {
	in := []ParentRun{{"export-orders-41", 41}, {"export-customers-43~1", 43}}
	s := FormatParentRuns(in)
	if s != "export-orders-41@41,export-customers-43~1@43" {
		t.Fatalf("format: %q", s)
	}
	got, err := ParseParentRuns(HeaderParentRuns, s)
	if err != nil || !reflect.DeepEqual(got, in) {
		t.Fatalf("parse %q: %v, %v", s, got, err)
	}
	if got, err := ParseParentRuns(HeaderParentRuns, ""); got != nil || err != nil {
		t.Fatalf("empty: %v, %v", got, err)
	}
	for _, bad := range []string{"a", "@1", "a@", "a@0", "a@x", "a@1,,b@2", "a\x01@1"} {
		if _, err := ParseParentRuns(EnvParentRuns, bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: %v, want malformed", bad, err)
		}
	}
}
