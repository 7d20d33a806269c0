package jobfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"go.yaml.in/yaml/v2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// EncodeYAML writes specs in the job file format: one object for one spec,
// a list for more. Empty fields are left out. Decode reads the result back
// to specs proto.Equal to the input.
func EncodeYAML(specs ...*pb.JobSpec) ([]byte, error) {
	v, err := fileValue(specs)
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(v)
}

// EncodeJSON is EncodeYAML's JSON twin, indented by two spaces.
func EncodeJSON(specs ...*pb.JobSpec) ([]byte, error) {
	v, err := fileValue(specs)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // a body like {"a":"<b>"} stays readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// fileValue is the value to marshal: one *jobFile, or a list of them.
func fileValue(specs []*pb.JobSpec) (any, error) {
	if len(specs) == 0 {
		return nil, ErrNoSpecs
	}
	files := make([]*jobFile, len(specs))
	for i, s := range specs {
		path := ""
		if len(specs) > 1 {
			path = fmt.Sprintf("jobs[%d]", i)
		}
		f, err := fromSpec(s, path)
		if err != nil {
			return nil, err
		}
		files[i] = f
	}
	if len(files) == 1 {
		return files[0], nil
	}
	return files, nil
}

// fromSpec converts a spec to the file struct. Values the format cannot
// carry faithfully (an enum number without a name, a duration beyond
// time.Duration's range, a timestamp outside RFC 3339's years) are errors,
// so that every encoded file decodes back to the same spec.
func fromSpec(s *pb.JobSpec, path string) (*jobFile, error) {
	if s == nil {
		return nil, &FieldError{Field: path, Rule: "nil job spec"}
	}
	c := formatter{path: path}
	f := &jobFile{
		Name:         s.GetName(),
		Schedule:     s.GetSchedule(),
		Timezone:     s.GetTimezone(),
		Overlap:      enumName(&c, overlaps, "overlap", s.GetOverlap()),
		Delivery:     enumName(&c, deliveries, "delivery", s.GetDelivery()),
		Deadline:     c.duration("deadline", s.GetDeadline()),
		Paused:       s.GetPaused(),
		PauseNote:    s.GetPauseNote(),
		StartAt:      c.timestamp("start_at", s.GetStartAt()),
		EndAt:        c.timestamp("end_at", s.GetEndAt()),
		Labels:       s.GetLabels(),
		HistoryLimit: s.GetHistoryLimit(),
	}
	if h := s.GetHttp(); h != nil {
		f.HTTP = &httpFile{
			URL:          h.GetUrl(),
			Method:       h.GetMethod(),
			Headers:      h.GetHeaders(),
			Body:         h.GetBody(),
			Timeout:      c.duration("http.timeout", h.GetTimeout()),
			SuccessCodes: h.GetSuccessCodes(),
			KeepResponse: h.GetKeepResponse(),
		}
	}
	if e := s.GetExec(); e != nil {
		f.Exec = &execFile{
			Command: e.GetCommand(),
			Env:     e.GetEnv(),
			Dir:     e.GetDir(),
			Timeout: c.duration("exec.timeout", e.GetTimeout()),
		}
	}
	if w := s.GetWorker(); w != nil {
		f.Worker = &workerFile{
			Pool:    w.GetPool(),
			Tags:    w.GetTags(),
			Command: w.GetCommand(),
			Handler: w.GetHandler(),
			Payload: w.GetPayload(),
			Env:     w.GetEnv(),
			Dir:     w.GetDir(),
			Timeout: c.duration("worker.timeout", w.GetTimeout()),
		}
	}
	if cu := s.GetCatchup(); cu != nil {
		f.Catchup = &catchupFile{
			Window: c.duration("catchup.window", cu.GetWindow()),
			Policy: enumName(&c, catchupPolicies, "catchup.policy", cu.GetPolicy()),
		}
	}
	if r := s.GetRetry(); r != nil {
		f.Retry = &retryFile{
			MaxAttempts:    r.GetMaxAttempts(),
			InitialBackoff: c.duration("retry.initial_backoff", r.GetInitialBackoff()),
			MaxBackoff:     c.duration("retry.max_backoff", r.GetMaxBackoff()),
		}
	}
	if c.err != nil {
		return nil, c.err
	}
	return f, nil
}

// formatter writes proto values as file strings, keeping the first error.
type formatter struct {
	path string
	err  error
}

func (c *formatter) fail(field, rule string) {
	if c.err == nil {
		c.err = &FieldError{Field: join(c.path, field), Rule: rule}
	}
}

// duration writes time.Duration syntax ("1m0s"); a set zero duration is
// written as "0s" so that it does not turn into an absent one.
func (c *formatter) duration(field string, d *durationpb.Duration) string {
	if d == nil {
		return ""
	}
	// AsDuration saturates outside ±292 years; converting back exposes it.
	if d.CheckValid() != nil || !proto.Equal(durationpb.New(d.AsDuration()), d) {
		c.fail(field, fmt.Sprintf("duration %ds %dns out of range", d.GetSeconds(), d.GetNanos()))
		return ""
	}
	return d.AsDuration().String()
}

// timestamp writes RFC 3339 in UTC with as many fractional digits as needed.
func (c *formatter) timestamp(field string, ts *timestamppb.Timestamp) string {
	if ts == nil {
		return ""
	}
	if err := ts.CheckValid(); err != nil {
		c.fail(field, "invalid timestamp: "+err.Error())
		return ""
	}
	return ts.AsTime().UTC().Format(time.RFC3339Nano)
}

func enumName[E ~int32](c *formatter, t enumNames[E], field string, v E) string {
	name, err := t.format(join(c.path, field), v)
	if err != nil && c.err == nil {
		c.err = err
	}
	return name
}
