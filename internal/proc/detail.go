package proc

import "strings"

// MaxDetail bounds an outcome's detail: it is stored in the run ledger, and
// error texts (a Go error wrapping a long URL, a shell's complaint) are
// unbounded.
const MaxDetail = 512

// OneLine makes s fit an outcome's detail: a single line of valid UTF-8
// (proto strings must be UTF-8) of at most MaxDetail bytes.
func OneLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > MaxDetail {
		s = strings.ToValidUTF8(s[:MaxDetail-len("...")], "") + "..."
	}
	return s
}
