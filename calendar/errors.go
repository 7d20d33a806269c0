package calendar

import (
	"fmt"
	"strings"
)

// maxErrors bounds the errors one compilation reports.
const maxErrors = 20

// FieldError is one broken field of a calendar spec, named by its path in
// the calendar file (entries[3].between).
type FieldError struct {
	Field string
	Rule  string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Rule }

// Errors are the broken fields of a calendar spec, in order.
type Errors []*FieldError

func (e Errors) Error() string {
	parts := make([]string, len(e))
	for i, fe := range e {
		parts[i] = fe.Error()
	}
	return strings.Join(parts, "; ")
}

func (e *Errors) add(field, rule string, args ...any) {
	*e = append(*e, &FieldError{Field: field, Rule: fmt.Sprintf(rule, args...)})
}

func entryField(i int) string { return fmt.Sprintf("entries[%d]", i) }
