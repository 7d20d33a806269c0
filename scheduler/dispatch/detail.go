package dispatch

import "strings"

// maxDetail bounds Outcome.Detail: it is stored in the run ledger, and error
// texts (a Go error wrapping a long URL, a shell's complaint) are unbounded.
const maxDetail = 512

// oneLine makes s fit Outcome.Detail: a single line of valid UTF-8 (proto
// strings must be UTF-8) of at most maxDetail bytes.
func oneLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxDetail {
		s = strings.ToValidUTF8(s[:maxDetail-len("...")], "") + "..."
	}
	return s
}
