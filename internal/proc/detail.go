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
		return s // the common case, without a copy: a burst reports thousands
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > MaxDetail {
		s = strings.ToValidUTF8(s[:MaxDetail-len("...")], "") + "..."
	}
	return s
}

// isOneLine reports whether OneLine would return s as it is: short enough,
// printable ASCII, single spaces between words. Anything else (UTF-8 that
// may hold Unicode spaces included) takes the long way.
func isOneLine(s string) bool {
	if len(s) > MaxDetail {
		return false
	}
	space := true // no leading space
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ' ':
			if space {
				return false
			}
			space = true
		case c < ' ' || c >= 0x7f:
			return false
		default:
			space = false
		}
	}
	return !space || s == ""
}
