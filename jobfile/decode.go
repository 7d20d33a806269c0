package jobfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v2"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	k8syaml "sigs.k8s.io/yaml"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Decode reads a job file: YAML or JSON (JSON is read as YAML), holding one
// job object, a list of job objects, or a stream of "---"-separated documents
// each holding either. Jobs come back in file order. Any problem is an error
// naming the field and the rule, and no spec is returned; an unknown field is
// an error, as is a file with no job, and so is a duplicated key (which
// also means a "<<" merge key cannot override a merged field; plain anchors
// and aliases work). Decode does not validate the jobs (that
// is jobspec's work): it only checks the format.
func Decode(data []byte) ([]*pb.JobSpec, error) {
	items, listed, err := readJobs(data)
	if err != nil {
		return nil, err
	}
	specs := make([]*pb.JobSpec, 0, len(items))
	for i, item := range items {
		path := ""
		if listed {
			path = fmt.Sprintf("jobs[%d]", i)
		}
		spec, err := decodeJob(item, path)
		if err != nil {
			return nil, err
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

// readJobs parses the YAML stream and returns the raw job values in order.
// listed tells whether the file was written as a list (or as several
// documents), in which case errors name jobs by index.
func readJobs(data []byte) (items []any, listed bool, err error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	// Strict: a duplicated key is an error instead of last-one-wins.
	dec.SetStrict(true)
	docs := 0
	for {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, false, fmt.Errorf("%w: %s", ErrInvalidYAML, strings.TrimPrefix(err.Error(), "yaml: "))
		}
		if doc == nil { // an empty document, e.g. after a trailing "---"
			continue
		}
		docs++
		switch v := doc.(type) {
		case map[any]any:
			items = append(items, v)
		case []any:
			listed = true
			items = append(items, v...)
		default:
			return nil, false, &FieldError{Rule: "want a job object or a list of jobs, got " + describe(v)}
		}
	}
	if len(items) == 0 {
		return nil, false, ErrEmpty
	}
	return items, listed || docs > 1, nil
}

// decodeJob turns one raw job value into a spec. path prefixes error fields.
func decodeJob(item any, path string) (*pb.JobSpec, error) {
	m, ok := item.(map[any]any)
	if !ok {
		return nil, &FieldError{Field: path, Rule: "want a job object, got " + describe(item)}
	}
	if err := checkFields(m, reflect.TypeFor[jobFile](), path); err != nil {
		return nil, err
	}
	// Back to YAML for sigs.k8s.io/yaml, which converts to JSON guided by
	// the target struct: a YAML number or bool given for a string field
	// (name: 123, labels: {tier: 2}) becomes that string instead of an error.
	doc, err := yaml.Marshal(m)
	if err != nil {
		return nil, &FieldError{Field: path, Rule: err.Error()}
	}
	var f jobFile
	if err := k8syaml.Unmarshal(doc, &f, k8syaml.DisallowUnknownFields); err != nil {
		return nil, typeError(err, path)
	}
	return f.spec(path)
}

// checkFields rejects any key that is not a field of the format, spelled
// exactly (encoding/json alone would accept "Name" for "name"), and walks
// into nested objects. Type mismatches are left to the JSON decoder.
func checkFields(m map[any]any, t reflect.Type, path string) error {
	fields := fieldTypes(t)
	keys := make([]string, 0, len(m))
	byKey := make(map[string]any, len(m))
	for k, v := range m {
		ks := fmt.Sprint(k)
		keys = append(keys, ks)
		byKey[ks] = v
		if _, isString := k.(string); !isString {
			byKey[ks] = unknownKey{}
		}
	}
	sort.Strings(keys) // one deterministic error when there are several
	for _, k := range keys {
		v := byKey[k]
		ft, known := fields[k]
		if _, bad := v.(unknownKey); bad || !known {
			return &FieldError{Field: path, Rule: unknownFieldRule(k, fields)}
		}
		nested, isMap := v.(map[any]any)
		if ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct && isMap {
			if err := checkFields(nested, ft.Elem(), join(path, k)); err != nil {
				return err
			}
		}
	}
	return nil
}

// unknownKey marks a non-string key, which is never a field name.
type unknownKey struct{}

// fieldTypes maps the format's field names of struct t to their types.
func fieldTypes(t reflect.Type) map[string]reflect.Type {
	fields := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		fields[name] = f.Type
	}
	return fields
}

func unknownFieldRule(key string, fields map[string]reflect.Type) string {
	rule := fmt.Sprintf("unknown field %q", key)
	if guess := closest(key, fields); guess != "" {
		rule += fmt.Sprintf(" (did you mean %q?)", guess)
	}
	return rule
}

// closest is the known field name nearest to key, if it is a likely typo.
func closest(key string, fields map[string]reflect.Type) string {
	best, bestDist := "", 3 // suggest only within two edits
	lower := strings.ToLower(key)
	for name := range fields {
		if d := editDistance(lower, name); d < bestDist || (d == bestDist && name < best) {
			best, bestDist = name, d
		}
	}
	return best
}

// editDistance is the Damerau-Levenshtein distance (with adjacent
// transpositions), enough to catch "scheduel" and "Name".
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64 // never a typo of a field name; keeps the work bounded
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// typeError turns a decoding error into a FieldError naming the field.
func typeError(err error, path string) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &FieldError{Field: join(path, te.Field), Rule: fmt.Sprintf("want %s, got %s", kindName(te.Type), te.Value)}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &FieldError{Field: path, Rule: "invalid value: " + se.Error()}
	}
	return &FieldError{Field: path, Rule: err.Error()}
}

// kindName says what a field of type t accepts, in the file's words.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Uint32, reflect.Uint64, reflect.Uint, reflect.Uint8, reflect.Uint16:
		return "a non-negative integer"
	case reflect.Struct, reflect.Pointer:
		return "an object"
	case reflect.Map:
		return "a map of strings"
	case reflect.Slice:
		return "a list"
	default:
		return t.String()
	}
}

// describe names the YAML type of a raw value for error messages.
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int64, uint64, float64:
		return "a number"
	case []any:
		return "a list"
	case map[any]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// spec converts the file struct to the proto, checking durations,
// timestamps and enum names.
func (f *jobFile) spec(path string) (*pb.JobSpec, error) {
	c := converter{path: path}
	s := &pb.JobSpec{
		Name:         f.Name,
		Schedule:     f.Schedule,
		Timezone:     f.Timezone,
		Deadline:     c.duration("deadline", f.Deadline),
		Paused:       f.Paused,
		PauseNote:    f.PauseNote,
		StartAt:      c.timestamp("start_at", f.StartAt),
		EndAt:        c.timestamp("end_at", f.EndAt),
		Labels:       f.Labels,
		HistoryLimit: f.HistoryLimit,
	}
	s.Overlap = enumValue(&c, overlaps, "overlap", f.Overlap)
	s.Delivery = enumValue(&c, deliveries, "delivery", f.Delivery)
	if h := f.HTTP; h != nil {
		s.Http = &pb.HttpTarget{
			Url:          h.URL,
			Method:       h.Method,
			Headers:      h.Headers,
			Body:         h.Body,
			Timeout:      c.duration("http.timeout", h.Timeout),
			SuccessCodes: h.SuccessCodes,
			KeepResponse: h.KeepResponse,
		}
	}
	if e := f.Exec; e != nil {
		s.Exec = &pb.ExecTarget{
			Command: e.Command,
			Env:     e.Env,
			Dir:     e.Dir,
			Timeout: c.duration("exec.timeout", e.Timeout),
		}
	}
	if w := f.Worker; w != nil {
		s.Worker = &pb.WorkerTarget{
			Pool:    w.Pool,
			Tags:    w.Tags,
			Command: w.Command,
			Handler: w.Handler,
			Payload: w.Payload,
			Env:     w.Env,
			Dir:     w.Dir,
			Timeout: c.duration("worker.timeout", w.Timeout),
		}
	}
	if cu := f.Catchup; cu != nil {
		s.Catchup = &pb.Catchup{
			Window: c.duration("catchup.window", cu.Window),
			Policy: enumValue(&c, catchupPolicies, "catchup.policy", cu.Policy),
		}
	}
	if r := f.Retry; r != nil {
		s.Retry = &pb.Retry{
			MaxAttempts:    r.MaxAttempts,
			InitialBackoff: c.duration("retry.initial_backoff", r.InitialBackoff),
			MaxBackoff:     c.duration("retry.max_backoff", r.MaxBackoff),
		}
	}
	if c.err != nil {
		return nil, c.err
	}
	return s, nil
}

// converter parses string fields, keeping the first error so that spec
// reads as a plain field list.
type converter struct {
	path string
	err  error
}

func (c *converter) fail(field, rule string) {
	if c.err == nil {
		c.err = &FieldError{Field: join(c.path, field), Rule: rule}
	}
}

// duration parses Go duration syntax; "" is an absent field.
func (c *converter) duration(field, s string) *durationpb.Duration {
	if s == "" {
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		c.fail(field, fmt.Sprintf("invalid duration %q (use Go syntax like 90s, 5m, 1h30m)", s))
		return nil
	}
	return durationpb.New(d)
}

// timestamp parses RFC 3339; "" is an absent field.
func (c *converter) timestamp(field, s string) *timestamppb.Timestamp {
	if s == "" {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	ts := timestamppb.New(t)
	if err != nil || ts.CheckValid() != nil {
		c.fail(field, fmt.Sprintf("invalid timestamp %q (use RFC 3339 like 2026-12-01T00:00:00Z)", s))
		return nil
	}
	return ts
}

func enumValue[E ~int32](c *converter, t enumNames[E], field, s string) E {
	v, err := t.parse(join(c.path, field), s)
	if err != nil && c.err == nil {
		c.err = err
	}
	return v
}
