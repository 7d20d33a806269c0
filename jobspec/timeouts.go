package jobspec

import "time"

// Timeouts an attempt gets when its job sets none, so that no delivery can
// hang forever. The executor applies them when it dispatches; they are not
// written into the spec, whose target (and so its generation) stays as the
// user gave it.
const (
	// DefaultHTTPTimeout bounds a webhook request without http.timeout.
	DefaultHTTPTimeout = 30 * time.Second
	// DefaultExecTimeout bounds a command without exec.timeout whose job
	// has no deadline either (a deadline, when set, bounds it instead).
	DefaultExecTimeout = time.Hour
)
