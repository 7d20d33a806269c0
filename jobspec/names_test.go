package jobspec

import (
	"regexp"
	"testing"
)

// The name and label-key checks are written out by hand for speed; the
// regular expressions of their rules are the reference.
var (
	nameRef     = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	labelKeyRef = regexp.MustCompile(`^` + labelKeyRule + `$`)
)

var nameSamples = []string{
	"", "a", "0", "nightly-billing", "a.b_c-d", "A", "aB", "-a", ".a", "_a", "a/b", "team/x",
	"Team", "a b", "a\x00", "é", "a\u00e9", "x" + string(rune(0x7f)),
	"a23456789012345678901234567890123456789012345678901234567890123",  // 63
	"a234567890123456789012345678901234567890123456789012345678901234", // 64
}

func TestValidNameMatchesRule(t *testing.T) {
	t.Parallel()
	for _, s := range nameSamples {
		if got, want := validName(s), nameRef.MatchString(s); got != want {
			t.Errorf("validName(%q) = %v, the rule says %v", s, got, want)
		}
	}
}

func TestValidLabelKeyMatchesRule(t *testing.T) {
	t.Parallel()
	for _, s := range append(nameSamples, "Example.com/Tier", "a//b", "9/", "/a") {
		if got, want := validLabelKey(s), labelKeyRef.MatchString(s); got != want {
			t.Errorf("validLabelKey(%q) = %v, the rule says %v", s, got, want)
		}
	}
}

func FuzzNameRules(f *testing.F) {
	for _, s := range nameSamples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validName(s), nameRef.MatchString(s); got != want {
			t.Fatalf("validName(%q) = %v, the rule says %v", s, got, want)
		}
		if got, want := validLabelKey(s), labelKeyRef.MatchString(s); got != want {
			t.Fatalf("validLabelKey(%q) = %v, the rule says %v", s, got, want)
		}
	})
}
