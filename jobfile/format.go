// Package jobfile reads and writes the friendly job file format: the YAML or
// JSON face of pb.JobSpec that operators keep in version control and pass to
// `raftcron job apply -f`.
//
// A file holds one job object, a list of job objects, or a YAML stream of
// documents separated by "---", each of which is a job object or a list.
// Durations use Go syntax ("90s", "1h30m"), timestamps RFC 3339, enums their
// lowercase names. Decoding is strict: an unknown or misspelled field is an
// error, never silently dropped. A bare YAML number or boolean given for a
// string field reads as its canonical text (tier: 2 is "2", but 1.10 is
// "1.1"): quote values whose exact spelling matters. Encoding writes the same format, so
// `job get -o yaml` output applies back unchanged.
package jobfile

// The structs below mirror the file format field by field. The json tags are
// the field names of the format; the yaml tags repeat them (the encoder keeps
// this field order, which puts name and schedule first) and a test keeps the
// two in step. Durations, timestamps and enums stay strings here so that
// their conversion can report the field path and the rule.

type jobFile struct {
	Name         string            `json:"name,omitempty" yaml:"name,omitempty"`
	Schedule     string            `json:"schedule,omitempty" yaml:"schedule,omitempty"`
	Timezone     string            `json:"timezone,omitempty" yaml:"timezone,omitempty"`
	HTTP         *httpFile         `json:"http,omitempty" yaml:"http,omitempty"`
	Exec         *execFile         `json:"exec,omitempty" yaml:"exec,omitempty"`
	Worker       *workerFile       `json:"worker,omitempty" yaml:"worker,omitempty"`
	Catchup      *catchupFile      `json:"catchup,omitempty" yaml:"catchup,omitempty"`
	Overlap      string            `json:"overlap,omitempty" yaml:"overlap,omitempty"`
	Delivery     string            `json:"delivery,omitempty" yaml:"delivery,omitempty"`
	Retry        *retryFile        `json:"retry,omitempty" yaml:"retry,omitempty"`
	Deadline     string            `json:"deadline,omitempty" yaml:"deadline,omitempty"`
	Paused       bool              `json:"paused,omitempty" yaml:"paused,omitempty"`
	PauseNote    string            `json:"pause_note,omitempty" yaml:"pause_note,omitempty"`
	StartAt      string            `json:"start_at,omitempty" yaml:"start_at,omitempty"`
	EndAt        string            `json:"end_at,omitempty" yaml:"end_at,omitempty"`
	Labels       map[string]string `json:"labels,omitempty" yaml:"labels,omitempty"`
	HistoryLimit uint32            `json:"history_limit,omitempty" yaml:"history_limit,omitempty"`
}

type httpFile struct {
	URL          string            `json:"url,omitempty" yaml:"url,omitempty"`
	Method       string            `json:"method,omitempty" yaml:"method,omitempty"`
	Headers      map[string]string `json:"headers,omitempty" yaml:"headers,omitempty"`
	Body         string            `json:"body,omitempty" yaml:"body,omitempty"`
	Timeout      string            `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	SuccessCodes []uint32          `json:"success_codes,omitempty" yaml:"success_codes,omitempty"`
	KeepResponse bool              `json:"keep_response,omitempty" yaml:"keep_response,omitempty"`
}

type execFile struct {
	Command []string          `json:"command,omitempty" yaml:"command,omitempty"`
	Env     map[string]string `json:"env,omitempty" yaml:"env,omitempty"`
	Dir     string            `json:"dir,omitempty" yaml:"dir,omitempty"`
	Timeout string            `json:"timeout,omitempty" yaml:"timeout,omitempty"`
}

type workerFile struct {
	Pool    string            `json:"pool,omitempty" yaml:"pool,omitempty"`
	Tags    map[string]string `json:"tags,omitempty" yaml:"tags,omitempty"`
	Command []string          `json:"command,omitempty" yaml:"command,omitempty"`
	Handler string            `json:"handler,omitempty" yaml:"handler,omitempty"`
	Payload string            `json:"payload,omitempty" yaml:"payload,omitempty"`
	Env     map[string]string `json:"env,omitempty" yaml:"env,omitempty"`
	Dir     string            `json:"dir,omitempty" yaml:"dir,omitempty"`
	Timeout string            `json:"timeout,omitempty" yaml:"timeout,omitempty"`
}

type catchupFile struct {
	Window string `json:"window,omitempty" yaml:"window,omitempty"`
	Policy string `json:"policy,omitempty" yaml:"policy,omitempty"`
}

type retryFile struct {
	MaxAttempts    uint32 `json:"max_attempts,omitempty" yaml:"max_attempts,omitempty"`
	InitialBackoff string `json:"initial_backoff,omitempty" yaml:"initial_backoff,omitempty"`
	MaxBackoff     string `json:"max_backoff,omitempty" yaml:"max_backoff,omitempty"`
}
