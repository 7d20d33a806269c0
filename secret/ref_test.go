package secret

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

func TestRefs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		bad  bool
	}{
		{"plain", nil, false},
		{"Bearer ${secret:api-token}", []string{"api-token"}, false},
		{"${secret:a}:${secret:b.c_D}${secret:a}", []string{"a", "b.c_D", "a"}, false},
		{"$secret:a}", nil, false},
		{"${secret:}", nil, true},
		{"${secret:a", nil, true},
		{"${secret:a b}", nil, true},
		{"${secret:-a}", nil, true},
	} {
		got, err := Refs(tc.in)
		if bad := errors.Is(err, ErrBadRef); bad != tc.bad || (!tc.bad && !slices.Equal(got, tc.want)) {
			t.Errorf("Refs(%q) = %q, %v; want %q, bad %v", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

func TestExpand(t *testing.T) {
	values := map[string]string{"user": "u", "pw": "p@ss"}
	lookup := func(name string) (string, error) {
		v, ok := values[name]
		if !ok {
			return "", fmt.Errorf("secret %q not found", name)
		}
		return v, nil
	}
	got, err := Expand("https://${secret:user}:${secret:pw}@host/${secret:pw}", lookup)
	if err != nil || got != "https://u:p@ss@host/p@ss" {
		t.Errorf("Expand: %q, %v", got, err)
	}
	if got, err := Expand("no refs", lookup); err != nil || got != "no refs" {
		t.Errorf("Expand without refs: %q, %v", got, err)
	}
	if _, err := Expand("x ${secret:gone}", lookup); err == nil {
		t.Error("Expand of a missing secret: no error")
	}
}

func TestScrub(t *testing.T) {
	values := []string{"hunter2", "tok-123"}
	if got := ScrubString("dial https://u:hunter2@h: refused (tok-123)", values); got != "dial https://u:<redacted>@h: refused (<redacted>)" {
		t.Errorf("ScrubString: %q", got)
	}
	if got := string(Scrub([]byte("...hunt"), values, true)); got != "...<redacted>" {
		t.Errorf("Scrub of a value cut at the end: %q", got)
	}
	if got := string(Scrub([]byte("...hunt"), values, false)); got != "...hunt" {
		t.Errorf("Scrub of output that was not cut: %q", got)
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:pw@host/p?q=1":              "https://<redacted>@host/p?q=1",
		"https://token@host":                      "https://<redacted>@host",
		"https://host/a@b":                        "https://host/a@b",
		"https://u:${secret:pw}@host/":            "https://u:${secret:pw}@host/",
		"https://host/?next=http://u:p@elsewhere": "https://host/?next=http://u:p@elsewhere",
		"not a url":                               "not a url",
	} {
		if got := RedactURL(in, Redacted); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
