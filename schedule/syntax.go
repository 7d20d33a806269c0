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
	day    bool   // takes Quartz day items
}

var cronFields = []cronField{
	{"seconds", "0-59", false},
	{"minute", "0-59", false},
	{"hour", "0-23", false},
	{"day-of-month", "1-31", true},
	{"month", "1-12 or jan-dec", false},
	{"day-of-week", "0-6 or sun-sat", true},
}

// dayItemRE matches the Quartz day items (see days.go), bounds aside.
var dayItemRE = regexp.MustCompile(`(?i)^(L(-\d+)?W?|\d+W|([0-7]|sun|mon|tue|wed|thu|fri|sat)(#\d+|L))$`)

// dayItemIn returns the first Quartz day item of a field's text, or "".
func dayItemIn(text string) string {
	for _, item := range strings.Split(text, ",") {
		if dayItemRE.MatchString(item) {
			return item
		}
	}
	return ""
}

// fieldParser reads exactly the six fields of cronFields: explain puts one
// field of the spec among stars to learn whether that field alone fails.
var fieldParser = cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// fieldCount is the message for a spec with a wrong number of fields.
const fieldCount = "want 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first; found %d"

// explain turns robfig's refusal of the fields probe into a SyntaxError
// naming the first field at fault; shown holds the fields as written
// (probe may have Quartz day items taken out). robfig's messages name
// neither the field nor, for a single value, which bound was crossed.
func explain(probe, shown []string, robfigErr error) error {
	if err := fieldFault(probe, shown); err != nil {
		return err
	}
	return fmt.Errorf("%w: %s", ErrSyntax, robfigErr) // no single field explains it
}

// fieldFault puts each field of probe alone among stars, in order, and
// returns a SyntaxError for the first one robfig refuses, or nil. probe
// may be the first fields of a spec only; shown is the whole spec.
func fieldFault(probe, shown []string) *SyntaxError {
	first := len(cronFields) - len(shown) // the seconds field is optional
	for i, text := range probe {
		fields := []string{"*", "*", "*", "*", "*", "*"}
		fields[first+i] = text
		if _, err := parseWith(fieldParser, strings.Join(fields, " ")); err != nil {
			f := cronFields[first+i]
			return &SyntaxError{Part: f.name + " field", Reason: f.reason(err, shown[i])}
		}
	}
	return nil
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
	if item := dayItemIn(text); item != "" && !f.day {
		return fmt.Sprintf("%q is only allowed in the day-of-month and day-of-week fields", item)
	}
	msg := err.Error()
	for _, r := range robfigReasons {
		if m := r.pattern.FindStringSubmatch(msg); m != nil {
			return r.reason(m, f, text)
		}
	}
	return msg
}

// descriptors lists what may follow "@", for the unknown-descriptor error.
const descriptors = "@yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, " +
	"@every <duration> [offset <duration>] or @at <RFC 3339 time>"
