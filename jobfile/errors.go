package jobfile

import "errors"

var (
	// ErrEmpty is returned for a file that holds no job.
	ErrEmpty = errors.New("empty job file: want a job object or a list of jobs")
	// ErrInvalidYAML wraps a syntax error of the file (JSON files included:
	// JSON is read as YAML); the message carries the parser's line number.
	ErrInvalidYAML = errors.New("invalid YAML")
	// ErrInvalidJSON wraps a syntax error of FromJSON's input.
	ErrInvalidJSON = errors.New("invalid JSON")
	// ErrNoSpecs is returned when asked to encode nothing.
	ErrNoSpecs = errors.New("no job to encode")
	// ErrUnsupported is returned by every call while JobSpec holds a field
	// the format's rules do not cover (see schema.go and DESIGN.md).
	ErrUnsupported = errors.New("field outside the job file's rules")
)

// FieldError is a problem with one field of a job file. Field is the path in
// the file's own names ("catchup.window", "jobs[1].http.url"), prefixed with
// the job's index when the file holds a list; it is empty when the problem is
// the file as a whole.
type FieldError struct {
	Field string
	Rule  string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Rule
	}
	return e.Field + ": " + e.Rule
}

// join extends a field path.
func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}
