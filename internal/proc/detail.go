package proc

import "strings"

// MaxDetail bounds an outcome's detail: it is stored in the run ledger, and
// error texts (a Go error wrapping a long URL, a shell's complaint) are
// unbounded.
const MaxDetail = 512

// OneLine makes s fit an outcome's detail: a single line of valid UTF-8
// (proto strings must be UTF-8) of at most MaxDetail bytes.
func OneLine(s string) string {
	if isOneLine(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > MaxDetail {
		s = strings.ToValidUTF8(s[:MaxDetail-len("...")], "") + "..."
	}
	return s
}

// isOneLine reports that OneLine would return s unchanged, judging only
// printable ASCII: most details ("http 200 OK") are, and are made on every
// attempt, so they skip the splitting and joining.
func isOneLine(s string) bool {
	if len(s) > MaxDetail {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ' ':
			if i == 0 || i == len(s)-1 || s[i-1] == ' ' {
				return false
			}
		case c < '!' || c > '~':
			return false
		}
	}
	return true
}
