package secret

import (
	"bytes"
	"strings"
)

// Redacted stands for a value nobody may read back.
const Redacted = "<redacted>"

// ScrubString replaces every occurrence of each value in s with Redacted.
func ScrubString(s string, values []string) string {
	for _, v := range values {
		if v != "" && strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, Redacted)
		}
	}
	return s
}

// Scrub is ScrubString for output. When the output was cut at a size
// limit (cut), a value may have been cut with it: a tail that is the start
// of a value is replaced too.
func Scrub(b []byte, values []string, cut bool) []byte {
	for _, v := range values {
		if v != "" && bytes.Contains(b, []byte(v)) {
			b = bytes.ReplaceAll(b, []byte(v), []byte(Redacted))
		}
	}
	if !cut {
		return b
	}
	for _, v := range values {
		for n := min(len(v)-1, len(b)); n > 0; n-- {
			if bytes.HasSuffix(b, []byte(v[:n])) {
				return append(b[:len(b)-n:len(b)-n], Redacted...)
			}
		}
	}
	return b
}
