package jobfile

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// designExample is the job file of the design's external contract.
const designExample = `
name: nightly-billing          # [a-z0-9][a-z0-9._-]{0,62}
schedule: "0 2 * * *"          # or "*/10 * * * * *", "@hourly", "@every 30s"
timezone: Europe/Berlin        # IANA, default UTC
http:                          # exactly one of http / exec
  url: http://billing.internal/run
  method: POST
  headers: {X-Team: billing}
  body: '{"mode":"full"}'
  timeout: 30s
# exec: {command: [/usr/local/bin/prune, --days, "30"], timeout: 10m, env: {A: b}}
catchup: {window: 10m, policy: all}        # all | latest | none
overlap: skip                              # skip | allow | buffer_one | cancel_other
delivery: at_least_once                    # at_least_once | at_most_once
retry: {max_attempts: 3, initial_backoff: 1s, max_backoff: 1m}
deadline: 30m
paused: false
start_at: 2026-12-01T00:00:00Z
end_at: 2027-12-01T00:00:00Z
labels: {team: billing}
history_limit: 10
`

func designSpec() *pb.JobSpec {
	return &pb.JobSpec{
		Name:     "nightly-billing",
		Schedule: "0 2 * * *",
		Timezone: "Europe/Berlin",
		Http: &pb.HttpTarget{
			Url:     "http://billing.internal/run",
			Method:  "POST",
			Headers: map[string]string{"X-Team": "billing"},
			Body:    `{"mode":"full"}`,
			Timeout: durationpb.New(30 * time.Second),
		},
		Catchup:  &pb.Catchup{Window: durationpb.New(10 * time.Minute), Policy: pb.CatchupPolicy_CATCHUP_POLICY_ALL},
		Overlap:  pb.Overlap_OVERLAP_SKIP,
		Delivery: pb.Delivery_DELIVERY_AT_LEAST_ONCE,
		Retry: &pb.Retry{
			MaxAttempts:    3,
			InitialBackoff: durationpb.New(time.Second),
			MaxBackoff:     durationpb.New(time.Minute),
		},
		Deadline:     durationpb.New(30 * time.Minute),
		StartAt:      timestamppb.New(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)),
		EndAt:        timestamppb.New(time.Date(2027, 12, 1, 0, 0, 0, 0, time.UTC)),
		Labels:       map[string]string{"team": "billing"},
		HistoryLimit: 10,
	}
}

func decodeOne(t *testing.T, data string) *pb.JobSpec {
	t.Helper()
	specs, err := Decode([]byte(data))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if len(specs) != 1 {
		t.Fatalf("Decode returned %d specs, want 1", len(specs))
	}
	return specs[0]
}

func assertSpecs(t *testing.T, got []*pb.JobSpec, want ...*pb.JobSpec) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d specs, want %d", len(got), len(want))
	}
	for i := range want {
		if !proto.Equal(got[i], want[i]) {
			t.Errorf("spec %d:\n got  %v\n want %v", i, got[i], want[i])
		}
	}
}

func TestDecodeDesignExample(t *testing.T) {
	assertSpecs(t, []*pb.JobSpec{decodeOne(t, designExample)}, designSpec())
}

func TestDecodeExecTargetAndOtherEnums(t *testing.T) {
	got := decodeOne(t, `
name: prune
schedule: "@every 30s"
exec: {command: [/usr/local/bin/prune, --days, "30"], timeout: 10m, env: {A: b}, dir: /var/tmp}
catchup: {policy: latest}
overlap: buffer_one
delivery: at_most_once
paused: true
pause_note: maintenance
`)
	want := &pb.JobSpec{
		Name:     "prune",
		Schedule: "@every 30s",
		Exec: &pb.ExecTarget{
			Command: []string{"/usr/local/bin/prune", "--days", "30"},
			Env:     map[string]string{"A": "b"},
			Dir:     "/var/tmp",
			Timeout: durationpb.New(10 * time.Minute),
		},
		Catchup:   &pb.Catchup{Policy: pb.CatchupPolicy_CATCHUP_POLICY_LATEST},
		Overlap:   pb.Overlap_OVERLAP_BUFFER_ONE,
		Delivery:  pb.Delivery_DELIVERY_AT_MOST_ONCE,
		Paused:    true,
		PauseNote: "maintenance",
	}
	assertSpecs(t, []*pb.JobSpec{got}, want)
}

func TestDecodeWorkerTargets(t *testing.T) {
	got, err := Decode([]byte(`
- name: render
  schedule: "@hourly"
  worker: {pool: batch, tags: {region: eu}, command: [/usr/local/bin/render, --all], env: {A: b}, dir: /srv, timeout: 5m}
- name: charge
  schedule: "@daily"
  worker:
    pool: billing
    handler: charge-cards
    payload: '{"mode":"full"}'
`))
	if err != nil {
		t.Fatal(err)
	}
	assertSpecs(t, got,
		&pb.JobSpec{Name: "render", Schedule: "@hourly", Worker: &pb.WorkerTarget{
			Pool: "batch", Tags: map[string]string{"region": "eu"}, Command: []string{"/usr/local/bin/render", "--all"},
			Env: map[string]string{"A": "b"}, Dir: "/srv", Timeout: durationpb.New(5 * time.Minute),
		}},
		&pb.JobSpec{Name: "charge", Schedule: "@daily", Worker: &pb.WorkerTarget{
			Pool: "billing", Handler: "charge-cards", Payload: `{"mode":"full"}`,
		}})
	if _, err := Decode([]byte("name: a\nworker: {pool: b, hanlder: c}\n")); err == nil ||
		!strings.Contains(err.Error(), `worker: unknown field "hanlder" (did you mean "handler"?)`) {
		t.Fatalf("misspelled worker field: %v", err)
	}
	if _, err := Decode([]byte("name: a\nworker: {pool: b, timeout: soon}\n")); err == nil ||
		!strings.Contains(err.Error(), "worker.timeout") {
		t.Fatalf("bad worker timeout: %v", err)
	}
}

// The warehouse example of the README: YAML 1.1 reads a bare on as true,
// which as a key of a dependency is its field on.
func TestDecodeDependencies(t *testing.T) {
	got, err := Decode([]byte(`
name: load-warehouse
after:
  - {job: export-orders, on: success}
  - job: export-customers
    on: any
after_mode: all
after_within: 1h
after_missing: wait
http: {url: "http://warehouse.internal/load"}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := &pb.JobSpec{
		Name: "load-warehouse",
		After: []*pb.Dependency{
			{Job: "export-orders", On: pb.DependencyOn_DEPENDENCY_ON_SUCCESS},
			{Job: "export-customers", On: pb.DependencyOn_DEPENDENCY_ON_ANY},
		},
		AfterMode:    pb.AfterMode_AFTER_MODE_ALL,
		AfterWithin:  durationpb.New(time.Hour),
		AfterMissing: pb.AfterMissing_AFTER_MISSING_WAIT,
		Http:         &pb.HttpTarget{Url: "http://warehouse.internal/load"},
	}
	assertSpecs(t, got, want)
	out, err := EncodeYAML(want)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Decode(out)
	if err != nil {
		t.Fatalf("decoding %s: %v", out, err)
	}
	assertSpecs(t, again, want)
	for file, msg := range map[string]string{
		"name: a\nafter: [{job: b, on: success, \"on\": any}]\n": `after[0].on: given twice`,
		"name: a\nafter: [{job: b, true: success}]\n":            "", // the same key as a bare on
		"name: a\nhttp: {on: x}\n":                               `http: unknown field "true"`,
		"name: a\nafter: [{job: b, on: sometimes}]\n":            `after[0].on: unknown value "sometimes"`,
	} {
		_, err := Decode([]byte(file))
		if msg == "" && err != nil || msg != "" && (err == nil || !strings.Contains(err.Error(), msg)) {
			t.Errorf("%q: %v, want %q", file, err, msg)
		}
	}
}

func TestDecodeJSONObjectWithTabs(t *testing.T) {
	got := decodeOne(t, "{\n\t\"name\": \"a\",\n\t\"schedule\": \"@hourly\",\n\t\"http\": {\"url\": \"http://x/\", \"success_codes\": [200, 204], \"keep_response\": true},\n\t\"catchup\": {\"window\": \"1h30m\", \"policy\": \"none\"},\n\t\"overlap\": \"cancel_other\",\n\t\"start_at\": \"2026-12-01T01:00:00.5+01:00\"\n}\n")
	want := &pb.JobSpec{
		Name:     "a",
		Schedule: "@hourly",
		Http:     &pb.HttpTarget{Url: "http://x/", SuccessCodes: []uint32{200, 204}, KeepResponse: true},
		Catchup:  &pb.Catchup{Window: durationpb.New(90 * time.Minute), Policy: pb.CatchupPolicy_CATCHUP_POLICY_NONE},
		Overlap:  pb.Overlap_OVERLAP_CANCEL_OTHER,
		StartAt:  timestamppb.New(time.Date(2026, 12, 1, 0, 0, 0, 5e8, time.UTC)),
	}
	assertSpecs(t, []*pb.JobSpec{got}, want)
}

func TestDecodeListsAndStreams(t *testing.T) {
	a := &pb.JobSpec{Name: "a", Schedule: "@hourly"}
	b := &pb.JobSpec{Name: "b", Schedule: "@daily", Overlap: pb.Overlap_OVERLAP_ALLOW}
	c := &pb.JobSpec{Name: "c", Schedule: "@weekly"}
	cases := map[string]struct {
		in   string
		want []*pb.JobSpec
	}{
		"yaml sequence":    {"- name: a\n  schedule: '@hourly'\n- name: b\n  schedule: '@daily'\n  overlap: allow\n", []*pb.JobSpec{a, b}},
		"json array":       {`[{"name":"a","schedule":"@hourly"},{"name":"b","schedule":"@daily","overlap":"allow"}]`, []*pb.JobSpec{a, b}},
		"list of one":      {"- {name: a, schedule: '@hourly'}\n", []*pb.JobSpec{a}},
		"document stream":  {"name: a\nschedule: '@hourly'\n---\nname: b\nschedule: '@daily'\noverlap: allow\n", []*pb.JobSpec{a, b}},
		"stream with list": {"---\nname: a\nschedule: '@hourly'\n---\n- {name: b, schedule: '@daily', overlap: allow}\n- {name: c, schedule: '@weekly'}\n---\n", []*pb.JobSpec{a, b, c}},
		"anchors":          {"- {name: a, schedule: &s '@hourly'}\n- {name: c, schedule: *s}\n", []*pb.JobSpec{a, {Name: "c", Schedule: "@hourly"}}},
		"empty documents":  {"---\n---\nname: a\nschedule: '@hourly'\n---\n", []*pb.JobSpec{a}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Decode([]byte(tc.in))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			assertSpecs(t, got, tc.want...)
		})
	}
}

// A YAML scalar given for a string field is that string, as Kubernetes
// manifests behave; quoting is not required for labels like tier: 2.
func TestDecodeScalarsIntoStringFields(t *testing.T) {
	got := decodeOne(t, "name: 123\nschedule: '@hourly'\nlabels: {tier: 2, canary: true}\n")
	want := &pb.JobSpec{Name: "123", Schedule: "@hourly", Labels: map[string]string{"tier": "2", "canary": "true"}}
	assertSpecs(t, []*pb.JobSpec{got}, want)
}

func TestDecodeErrors(t *testing.T) {
	cases := map[string]struct {
		in   string
		want string // the whole error message
	}{
		"unknown field":               {"name: a\nscheduel: '@hourly'\n", `unknown field "scheduel" (did you mean "schedule"?)`},
		"unknown field far from any":  {"name: a\nflavour: mint\n", `unknown field "flavour"`},
		"field in wrong case":         {"Name: a\n", `unknown field "Name" (did you mean "name"?)`},
		"non-string key":              {"name: a\n1: x\n", `unknown field "1"`},
		"unknown nested field":        {"name: a\nhttp: {urll: x}\n", `http: unknown field "urll" (did you mean "url"?)`},
		"unknown field in list":       {"- name: a\n- name: b\n  scheduel: x\n", `jobs[1]: unknown field "scheduel" (did you mean "schedule"?)`},
		"bad duration in list":        {"- name: a\n- name: b\n  catchup: {window: 5 minutes}\n", `jobs[1].catchup.window: invalid duration "5 minutes" (use Go syntax like 90s, 5m, 1h30m)`},
		"bare number duration":        {"http: {timeout: 30}\n", `http.timeout: invalid duration "30" (use Go syntax like 90s, 5m, 1h30m)`},
		"bad deadline":                {"deadline: soon\n", `deadline: invalid duration "soon" (use Go syntax like 90s, 5m, 1h30m)`},
		"bad retry backoff":           {"retry: {max_backoff: 1 m}\n", `retry.max_backoff: invalid duration "1 m" (use Go syntax like 90s, 5m, 1h30m)`},
		"bad overlap":                 {"overlap: sometimes\n", `overlap: unknown value "sometimes" (want skip, allow, buffer_one or cancel_other)`},
		"enum in upper case":          {"overlap: SKIP\n", `overlap: unknown value "SKIP" (want skip, allow, buffer_one or cancel_other)`},
		"bad delivery":                {"delivery: exactly_once\n", `delivery: unknown value "exactly_once" (want at_least_once or at_most_once)`},
		"bad catchup policy":          {"catchup: {policy: some}\n", `catchup.policy: unknown value "some" (want all, latest or none)`},
		"date without time":           {"start_at: 2026-12-01\n", `start_at: invalid timestamp "2026-12-01" (use RFC 3339 like 2026-12-01T00:00:00Z)`},
		"bad end_at":                  {`{"end_at": "tomorrow"}`, `end_at: invalid timestamp "tomorrow" (use RFC 3339 like 2026-12-01T00:00:00Z)`},
		"negative history limit":      {"history_limit: -1\n", `history_limit: want a non-negative integer, got number -1`},
		"history limit too large":     {"history_limit: 99999999999\n", `history_limit: want a non-negative integer, got number 99999999999`},
		"object for string":           {"name: {a: b}\n", `name: want a string, got object`},
		"string for object":           {"http: foo\n", `http: want an object, got string`},
		"string for bool":             {"paused: maybe\n", `paused: want true or false, got string`},
		"string in success codes":     {"http: {success_codes: [200, ok]}\n", `http.success_codes: want a non-negative integer, got string`},
		"string for list":             {"exec: {command: /bin/true}\n", `exec.command: want a list, got string`},
		"type error in list":          {"- name: a\n- history_limit: x\n", `jobs[1].history_limit: want a non-negative integer, got string`},
		"scalar file":                 {"hello\n", `want a job object or a list of jobs, got a string`},
		"scalar in list":              {"- name: a\n- 42\n", `jobs[1]: want a job object, got a number`},
		"null in list":                {"- name: a\n- ~\n", `jobs[1]: want a job object, got null`},
		"duplicate key":               {"name: a\nname: b\n", `invalid YAML: unmarshal errors:` + "\n" + `  line 2: key "name" already set in map`},
		"second document bad":         {"name: a\n---\nname: b\n  bad: indent\n", `invalid YAML: line 4: mapping values are not allowed in this context`},
		"broken JSON":                 {"{\"name\": \"a\",\n\"schedule\": \"@daily\"\n", `invalid YAML: line 2: did not find expected ',' or '}'`},
		"tab indentation":             {"name: a\n\tschedule: x\n", `invalid YAML: line 2: found a tab character that violates indentation`},
		"empty":                       {"", ErrEmpty.Error()},
		"only whitespace and comment": {"  \n# nothing\n", ErrEmpty.Error()},
		"empty list":                  {"[]", ErrEmpty.Error()},
		"only separators":             {"---\n---\n", ErrEmpty.Error()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			specs, err := Decode([]byte(tc.in))
			if err == nil {
				t.Fatalf("Decode(%q) = %v, want error %q", tc.in, specs, tc.want)
			}
			if specs != nil {
				t.Errorf("Decode returned specs with an error: %v", specs)
			}
			if err.Error() != tc.want {
				t.Errorf("Decode(%q) error\n got  %q\n want %q", tc.in, err.Error(), tc.want)
			}
		})
	}
}

func TestDecodeErrorKinds(t *testing.T) {
	if _, err := Decode(nil); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty input: got %v, want ErrEmpty", err)
	}
	if _, err := Decode([]byte("a: [")); !errors.Is(err, ErrInvalidYAML) {
		t.Errorf("broken YAML: got %v, want ErrInvalidYAML", err)
	}
	_, err := Decode([]byte("- name: a\n- catchup: {window: x}\n"))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "jobs[1].catchup.window" {
		t.Errorf("bad field: got %#v, want a *FieldError for jobs[1].catchup.window", err)
	}
}

func TestEditDistance(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"schedule", "schedule", 0},
		{"scheduel", "schedule", 1},
		{"name", "nmae", 1},
		{"urll", "url", 1},
		{"", "abc", 3},
		{"kitten", "sitting", 3},
	}
	for _, tc := range cases {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
