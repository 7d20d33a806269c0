package jobspec

import (
	"strconv"
	"strings"
	"unicode"
)

// Violation is one broken rule. Field is the path in the job file
// ("schedule", "http.url", "catchup.window", "exec.command[0]").
type Violation struct {
	Field string
	Rule  string
}

// ValidationError lists every rule a job breaks, so one round trip shows
// the operator all of them.
type ValidationError struct {
	// Name is the job's name as submitted, for the message only.
	Name       string
	Violations []Violation
	// What is checked: "job" when empty, else "channel" or "notify rule".
	What string
}

// Error renders one line: invalid job "NAME": field: rule; field: rule.
func (e *ValidationError) Error() string {
	var b strings.Builder
	what := e.What
	if what == "" {
		what = "job"
	}
	b.WriteString("invalid " + what)
	if e.Name != "" {
		b.WriteString(" " + quote(e.Name))
	}
	b.WriteString(": ")
	for i, v := range e.Violations {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(v.Field + ": " + v.Rule)
	}
	return b.String()
}

// maxEcho bounds how much of an operator's input a message repeats.
const maxEcho = 64

// quote renders user input for a message: quoted, escaped, and short.
func quote(s string) string {
	if r := []rune(s); len(r) > maxEcho {
		return strconv.Quote(string(r[:maxEcho])) + "…"
	}
	return strconv.Quote(s)
}

// oneLine escapes control characters so that a rule (which may repeat a
// parser's message about the input) stays on one line.
func oneLine(s string) string {
	if strings.IndexFunc(s, unicode.IsControl) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			b.WriteString(strings.Trim(strconv.QuoteRune(r), "'"))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// violations collects broken rules in the order they are found.
type violations []Violation

func (v *violations) add(field, rule string) {
	*v = append(*v, Violation{Field: field, Rule: oneLine(rule)})
}
