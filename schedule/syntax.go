package schedule

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/robfig/cron/v3"
)

// SyntaxError is a malformed spec, located: Part names where the fault is
// ("month field", "@every"), or is empty when it is the spec as a whole.
// Every SyntaxError is an ErrSyntax.
type SyntaxError struct {
	Part   string
	Reason string
}

func (e *SyntaxError) Error() string {
	if e.Part == "" {
		return e.Reason
	}
	return e.Part + ": " + e.Reason
}

func (e *SyntaxError) Unwrap() error { return ErrSyntax }

// cronField is one field of a six-field spec, in robfig's order.
type cronField struct {
	name   string
	values string // what the field accepts, for "not a number" errors
}

var cronFields = []cronField{
	{"seconds", "0-59"},
	{"minute", "0-59"},
	{"hour", "0-23"},
	{"day-of-month", "1-31"},
	{"month", "1-12 or jan-dec"},
	{"day-of-week", "0-6 or sun-sat"},
}

// fieldParser reads exactly the six fields of cronFields: explain puts one
// field of the spec among stars to learn whether that field alone fails.
var fieldParser = cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// explain turns robfig's refusal of spec into a SyntaxError naming the
// part at fault. robfig's messages name neither the field nor, for a
// single value, which bound was crossed.
func explain(spec string, robfigErr error) error {
	if strings.HasPrefix(spec, "@") {
		return explainDescriptor(spec)
	}
	fields := strings.Fields(spec)
	if n := len(fields); n < len(cronFields)-1 || n > len(cronFields) {
		return &SyntaxError{Reason: fmt.Sprintf(
			"want 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first; found %d", n)}
	}
	first := len(cronFields) - len(fields) // the seconds field is optional
	for i, text := range fields {
		probe := []string{"*", "*", "*", "*", "*", "*"}
		probe[first+i] = text
		if _, err := parseWith(fieldParser, strings.Join(probe, " ")); err != nil {
			f := cronFields[first+i]
			return &SyntaxError{Part: f.name + " field", Reason: f.reason(err, text)}
		}
	}
	return fmt.Errorf("%w: %s", ErrSyntax, robfigErr) // no single field explains it
}

// robfigReasons rewrites robfig/cron v3.0.1's messages about one field
// (getRange and mustParseInt in its parser.go) in the field's terms; m
// holds the pattern's submatches and text the field as written.
var robfigReasons = []struct {
	pattern *regexp.Regexp
	reason  func(m []string, f cronField, text string) string
}{
	{regexp.MustCompile(`^end of range \((\d+)\) above maximum \((\d+)\)`),
		func(m []string, _ cronField, _ string) string { return m[1] + " is above " + m[2] }},
	{regexp.MustCompile(`^beginning of range \((\d+)\) below minimum \((\d+)\)`),
		func(m []string, _ cronField, _ string) string { return m[1] + " is below " + m[2] }},
	{regexp.MustCompile(`^beginning of range \((\d+)\) beyond end of range \((\d+)\): (.*)$`),
		func(m []string, _ cronField, _ string) string {
			return fmt.Sprintf("range %q runs backwards (%s is after %s)", m[3], m[1], m[2])
		}},
	{regexp.MustCompile(`^step of range should be a positive number: (.*)$`),
		func(m []string, _ cronField, _ string) string {
			return fmt.Sprintf("step of %q must be at least 1", m[1])
		}},
	{regexp.MustCompile(`^negative number \((-\d+)\) not allowed`), // only a step can be negative
		func(m []string, _ cronField, _ string) string { return fmt.Sprintf("step %s must be at least 1", m[1]) }},
	{regexp.MustCompile(`^too many hyphens: (.*)$`),
		func(m []string, _ cronField, _ string) string { return fmt.Sprintf(`%q has more than one "-"`, m[1]) }},
	{regexp.MustCompile(`^too many slashes: (.*)$`),
		func(m []string, _ cronField, _ string) string { return fmt.Sprintf(`%q has more than one "/"`, m[1]) }},
	{regexp.MustCompile(`^failed to parse int from (.*?): `),
		func(m []string, f cronField, text string) string {
			if m[1] == "" {
				return fmt.Sprintf("a number is missing in %q", text)
			}
			return fmt.Sprintf("%q is not a number (want %s)", m[1], f.values)
		}},
}

// reason words robfig's error about field f, written as text.
func (f cronField) reason(err error, text string) string {
	msg := err.Error()
	for _, r := range robfigReasons {
		if m := r.pattern.FindStringSubmatch(msg); m != nil {
			return r.reason(m, f, text)
		}
	}
	return msg
}

// descriptors lists what may follow "@", for the unknown-descriptor error.
const descriptors = "@yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every <duration>"

// explainDescriptor says why robfig refused a spec starting with "@"
// (trimmed, so "@every " is "@every").
func explainDescriptor(spec string) error {
	if spec == strings.TrimSpace(everyPrefix) {
		return &SyntaxError{Part: "@every", Reason: `missing duration (like "@every 30s")`}
	}
	if rest, ok := strings.CutPrefix(spec, everyPrefix); ok {
		return &SyntaxError{Part: "@every", Reason: fmt.Sprintf("invalid duration %q (use Go syntax like 90s, 5m, 1h30m)", rest)}
	}
	return &SyntaxError{Reason: fmt.Sprintf("unknown descriptor %q (want %s)", spec, descriptors)}
}
