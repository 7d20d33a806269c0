package policy

import (
	"errors"
	"strings"
	"testing"
)

func TestExecAllowsOnlyMatchingAbsolutePaths(t *testing.T) {
	t.Parallel()
	e, err := NewExec([]string{"/usr/local/bin/*", " /opt/jobs/report ", ""})
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"/usr/local/bin/prune", "/opt/jobs/report"} {
		if err := e.Allow(cmd); err != nil {
			t.Errorf("Allow(%q) = %v, want allowed", cmd, err)
		}
	}
	denied := map[string]string{
		"/bin/sh":                     "matches no pattern of --exec-allow (/usr/local/bin/*,/opt/jobs/report)",
		"/usr/local/bin/sub/prune":    "matches no pattern", // '*' stops at '/'
		"/usr/local/bin/../../bin/sh": "not an absolute, clean path",
		"/usr/local/bin/./prune":      "not an absolute, clean path",
		"prune":                       "not an absolute, clean path",
		"usr/local/bin/prune":         "not an absolute, clean path",
		"/opt/jobs/report-and-more":   "matches no pattern",
		"":                            "not an absolute, clean path",
	}
	for cmd, want := range denied {
		err := e.Allow(cmd)
		if !errors.Is(err, ErrExecDenied) || !strings.Contains(err.Error(), want) {
			t.Errorf("Allow(%q) = %v, want ErrExecDenied saying %q", cmd, err, want)
		}
	}
}

func TestExecDisabledByDefault(t *testing.T) {
	t.Parallel()
	empty, err := NewExec(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []*Exec{nil, {}, empty} {
		err := e.Allow("/bin/true")
		if e.Enabled() || !errors.Is(err, ErrExecDenied) || !strings.Contains(err.Error(), "--exec-allow is empty") {
			t.Errorf("%v: Allow = %v, Enabled = %v; want exec disabled, naming --exec-allow", e, err, e.Enabled())
		}
	}
}

func TestNewExecRefusesBadPatterns(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"bin/*", "*", "/usr/bin/", "/usr/../bin/*", "/usr/bin/[", "/usr/bin/\\"} {
		if _, err := NewExec([]string{"/ok/*", p}); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("NewExec(%q) = %v, want an error naming the pattern", p, err)
		}
	}
}
