package jobspec

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

var now = time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)

func dur(d time.Duration) *durationpb.Duration { return durationpb.New(d) }

func ts(s string) *timestamppb.Timestamp {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return timestamppb.New(t)
}

// fullJob sets every field of the job file to a valid value.
func fullJob() *pb.JobSpec {
	return &pb.JobSpec{
		Name:     "nightly-billing",
		Schedule: "0 2 * * *",
		Timezone: "Europe/Berlin",
		Http: &pb.HttpTarget{
			Url:          "http://billing.internal/run",
			Method:       "POST",
			Headers:      map[string]string{"X-Team": "billing"},
			Body:         `{"mode":"full"}`,
			Timeout:      dur(30 * time.Second),
			SuccessCodes: []uint32{200, 204},
		},
		Catchup:      &pb.Catchup{Window: dur(10 * time.Minute), Policy: pb.CatchupPolicy_CATCHUP_POLICY_ALL},
		Overlap:      pb.Overlap_OVERLAP_SKIP,
		Delivery:     pb.Delivery_DELIVERY_AT_LEAST_ONCE,
		Retry:        &pb.Retry{MaxAttempts: 3, InitialBackoff: dur(time.Second), MaxBackoff: dur(time.Minute)},
		Deadline:     dur(30 * time.Minute),
		StartAt:      ts("2026-12-01T00:00:00Z"),
		EndAt:        ts("2027-12-01T00:00:00Z"),
		Labels:       map[string]string{"team": "billing", "example.com/tier": "gold"},
		HistoryLimit: 10,
	}
}

func execJob() *pb.JobSpec {
	return &pb.JobSpec{
		Name:     "prune",
		Schedule: "@every 30s",
		Exec: &pb.ExecTarget{
			Command: []string{"/usr/local/bin/prune", "--days", "30"},
			Env:     map[string]string{"A": "b"},
			Dir:     "/var/lib/prune",
			Timeout: dur(10 * time.Minute),
		},
	}
}

func workerJob() *pb.JobSpec {
	return &pb.JobSpec{
		Name:     "prune",
		Schedule: "@every 30s",
		Worker: &pb.WorkerTarget{
			Pool:    "batch",
			Tags:    map[string]string{"region": "eu"},
			Command: []string{"/usr/local/bin/prune", "--days", "30"},
			Env:     map[string]string{"A": "b"},
			Dir:     "/var/lib/prune",
			Timeout: dur(10 * time.Minute),
		},
	}
}

func handlerJob() *pb.JobSpec {
	return &pb.JobSpec{
		Name:     "charge",
		Schedule: "@every 30s",
		Worker:   &pb.WorkerTarget{Pool: "billing", Handler: "charge-cards", Payload: `{"mode":"full"}`},
	}
}

func violationsOf(t *testing.T, err error) []Violation {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v (%T) is not a *ValidationError", err, err)
	}
	return ve.Violations
}

func TestValidateAcceptsValidJobs(t *testing.T) {
	t.Parallel()
	minimal := &pb.JobSpec{Name: "a", Schedule: "@hourly", Http: &pb.HttpTarget{Url: "https://example.com"}}
	rules := fullJob()
	rules.Schedule, rules.Schedules = "", []string{" 0 9 * * mon-fri", "0 12 * * sat", "@every 90m offset 15m"}
	rules.Jitter, rules.MaxRuns, rules.PauseAfterFailures = dur(30*time.Second), 12, 3
	once := fullJob()
	once.Schedule, once.StartAt, once.EndAt = "@at 2026-12-24T18:00:00Z", nil, nil
	for name, spec := range map[string]*pb.JobSpec{"full": fullJob(), "exec": execJob(), "minimal": minimal,
		"worker command": workerJob(), "worker handler": handlerJob(), "schedule rules": rules, "one shot": once} {
		t.Run(name, func(t *testing.T) {
			if err := Validate(spec, now); err != nil {
				t.Fatalf("raw: %v", err)
			}
			Normalize(spec)
			if err := Validate(spec, now); err != nil {
				t.Fatalf("normalized: %v", err)
			}
		})
	}
}

func TestValidateRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		mutate    func(*pb.JobSpec)
		wantField string
		wantRule  string
	}{
		{"minute out of range", func(s *pb.JobSpec) { s.Schedule = "61 * * * *" },
			"schedule", "minute field: 61 is above 59"},
		{"garbage schedule", func(s *pb.JobSpec) { s.Schedule = "every day" }, "schedule", "want 5 fields"},
		{"missing schedule", func(s *pb.JobSpec) { s.Schedule = "" }, "schedule", "required"},
		{"TZ= prefix", func(s *pb.JobSpec) { s.Schedule = "TZ=Europe/Berlin 0 2 * * *" },
			"schedule", "the zone is the timezone field, not a TZ= prefix"},
		{"bare CRON_TZ=", func(s *pb.JobSpec) { s.Schedule = "CRON_TZ=" }, "schedule", "TZ= prefix"},
		{"never fires", func(s *pb.JobSpec) { s.Schedule = "0 0 30 2 *" }, "schedule", "never fires within 5 years"},
		{"sub-second @every", func(s *pb.JobSpec) { s.Schedule = "@every 100ms" }, "schedule", "at least 1s"},
		{"L in the seconds field", func(s *pb.JobSpec) { s.Schedule = "L 0 9 * * *" },
			"schedule", `seconds field: "L" is only allowed in the day-of-month and day-of-week fields`},
		{"sixth Friday", func(s *pb.JobSpec) { s.Schedule = "0 9 * * fri#6" },
			"schedule", `day-of-week field: "fri#6": occurrence 6 is above 5`},
		{"offset past the interval", func(s *pb.JobSpec) { s.Schedule = "@every 1h offset 2h" },
			"schedule", "@every offset: 2h is not less than the interval 1h"},
		{"@at not a time", func(s *pb.JobSpec) { s.Schedule = "@at yesterday" }, "schedule", `@at: "yesterday" is not an RFC 3339 time`},
		{"@at beyond five years", func(s *pb.JobSpec) { s.Schedule = "@at 2040-01-01T00:00:00Z" }, "schedule", "never fires within 5 years"},
		{"unknown timezone", func(s *pb.JobSpec) { s.Timezone = "Mars/Olympus_Mons" }, "timezone", "unknown time zone"},
		{"host zone", func(s *pb.JobSpec) { s.Timezone = "Local" }, "timezone", "IANA"},
		{"path as timezone", func(s *pb.JobSpec) { s.Timezone = "../../etc/passwd" }, "timezone", "IANA"},
		{"name with spaces", func(s *pb.JobSpec) { s.Name = "nightly billing" }, "name", "must match [a-z0-9][a-z0-9._-]{0,62}"},
		{"name with capitals", func(s *pb.JobSpec) { s.Name = "NightlyBilling" }, "name", "must match"},
		{"name too long", func(s *pb.JobSpec) { s.Name = strings.Repeat("a", 64) }, "name", "must match"},
		{"name starting with a dot", func(s *pb.JobSpec) { s.Name = ".hidden" }, "name", "must match"},
		{"missing name", func(s *pb.JobSpec) { s.Name = "" }, "name", "required"},
		{"both http and exec", func(s *pb.JobSpec) { s.Exec = execJob().Exec }, "http", "exactly one of http, exec, worker or checkin must be set"},
		{"both http and worker", func(s *pb.JobSpec) { s.Worker = workerJob().Worker }, "http", "exactly one of http, exec, worker or checkin must be set"},
		{"no target", func(s *pb.JobSpec) { s.Http = nil }, "http", "exactly one of http, exec, worker or checkin must be set"},
		{"relative URL", func(s *pb.JobSpec) { s.Http.Url = "/run" }, "http.url", "absolute http or https URL"},
		{"URL without scheme", func(s *pb.JobSpec) { s.Http.Url = "billing.internal/run" }, "http.url", "absolute"},
		{"ftp URL", func(s *pb.JobSpec) { s.Http.Url = "ftp://billing.internal/run" }, "http.url", "http or https"},
		{"URL without host", func(s *pb.JobSpec) { s.Http.Url = "http:///run" }, "http.url", "with a host"},
		{"missing URL", func(s *pb.JobSpec) { s.Http.Url = "" }, "http.url", "required"},
		{"unknown method", func(s *pb.JobSpec) { s.Http.Method = "FETCH" }, "http.method", "GET, POST, PUT, PATCH, DELETE"},
		{"header name with space", func(s *pb.JobSpec) { s.Http.Headers = map[string]string{"X Team": "a"} }, "http.headers", "valid HTTP token"},
		{"reserved header", func(s *pb.JobSpec) { s.Http.Headers = map[string]string{"X-Raftcron-Fencing-Token": "1"} }, "http.headers", "set by raftcron"},
		{"header value with newline", func(s *pb.JobSpec) { s.Http.Headers = map[string]string{"X-A": "a\r\nB: c"} }, "http.headers", "control characters"},
		{"status code out of range", func(s *pb.JobSpec) { s.Http.SuccessCodes = []uint32{200, 700} }, "http.success_codes[1]", "100..599"},
		{"negative http timeout", func(s *pb.JobSpec) { s.Http.Timeout = dur(-time.Second) }, "http.timeout", "must be a positive duration"},
		{"zero http timeout", func(s *pb.JobSpec) { s.Http.Timeout = dur(0) }, "http.timeout", "must be a positive duration"},
		{"negative deadline", func(s *pb.JobSpec) { s.Deadline = dur(-5 * time.Second) }, "deadline", "must be a positive duration"},
		{"malformed duration", func(s *pb.JobSpec) { s.Deadline = &durationpb.Duration{Seconds: 1, Nanos: -1} }, "deadline", "must be a valid duration"},
		{"negative catch-up window", func(s *pb.JobSpec) { s.Catchup.Window = dur(-time.Minute) }, "catchup.window", "must not be negative"},
		{"unknown catch-up policy", func(s *pb.JobSpec) { s.Catchup.Policy = 99 }, "catchup.policy", "all, latest, none"},
		{"unknown overlap", func(s *pb.JobSpec) { s.Overlap = 42 }, "overlap", "skip, allow, buffer_one, cancel_other"},
		{"negative delivery", func(s *pb.JobSpec) { s.Delivery = -1 }, "delivery", "at_least_once, at_most_once"},
		{"zero attempts", func(s *pb.JobSpec) { s.Retry.MaxAttempts = 0 }, "retry.max_attempts", "between 1 and 100"},
		{"too many attempts", func(s *pb.JobSpec) { s.Retry.MaxAttempts = 101 }, "retry.max_attempts", "between 1 and 100"},
		{"negative backoff", func(s *pb.JobSpec) { s.Retry.InitialBackoff = dur(-time.Second) }, "retry.initial_backoff", "positive"},
		{"initial above max backoff", func(s *pb.JobSpec) { s.Retry.InitialBackoff = dur(time.Hour) }, "retry.initial_backoff", "must not exceed retry.max_backoff"},
		{"start after end", func(s *pb.JobSpec) { s.StartAt = ts("2028-01-01T00:00:00Z") }, "end_at", "must be after start_at"},
		{"end in the past", func(s *pb.JobSpec) { s.StartAt = nil; s.EndAt = ts("2026-04-30T00:00:00Z") }, "end_at", "in the past"},
		{"timestamp out of range", func(s *pb.JobSpec) { s.StartAt = &timestamppb.Timestamp{Seconds: -1 << 40} }, "start_at", "valid time"},
		{"bad label key", func(s *pb.JobSpec) { s.Labels = map[string]string{"-team": "x"} }, "labels", `key "-team"`},
		{"long label value", func(s *pb.JobSpec) { s.Labels = map[string]string{"team": strings.Repeat("é", 257)} }, "labels", "at most 256 characters"},
		{"history limit", func(s *pb.JobSpec) { s.HistoryLimit = 1001 }, "history_limit", "at most 1000"},
		{"long pause note", func(s *pb.JobSpec) { s.PauseNote = strings.Repeat("x", 1025) }, "pause_note", "at most 1024 characters"},
		{"schedule and schedules", func(s *pb.JobSpec) { s.Schedules = []string{"@daily"} }, "schedules", "either schedule or schedules"},
		{"a bad member", func(s *pb.JobSpec) { s.Schedule, s.Schedules = "", []string{"@daily", "0 9 * * fri#6"} },
			"schedules[1]", `day-of-week field: "fri#6": occurrence 6 is above 5`},
		{"a member that never fires", func(s *pb.JobSpec) { s.Schedule, s.Schedules = "", []string{"0 0 30 2 *", "@daily"} },
			"schedules[0]", "never fires within 5 years"},
		{"an empty member", func(s *pb.JobSpec) { s.Schedule, s.Schedules = "", []string{"@daily", " "} }, "schedules[1]", "required"},
		{"a repeated member", func(s *pb.JobSpec) { s.Schedule, s.Schedules = "", []string{"@daily", "@hourly", " @daily"} },
			"schedules[2]", "repeats schedules[0]"},
		{"too many schedules", func(s *pb.JobSpec) {
			s.Schedule, s.Schedules = "", nil
			for i := range MaxSchedules + 1 {
				s.Schedules = append(s.Schedules, fmt.Sprintf("%d 9 * * *", i))
			}
		}, "schedules", "at most 16"},
		{"negative jitter", func(s *pb.JobSpec) { s.Jitter = dur(-time.Second) }, "jitter", "at least 0s"},
		{"jitter as long as the window", func(s *pb.JobSpec) { s.Jitter = dur(10 * time.Minute) }, "jitter", "less than catchup.window (10m0s)"},
		{"jitter past the default window", func(s *pb.JobSpec) { s.Catchup = nil; s.Jitter = dur(time.Minute) }, "jitter", "less than catchup.window (1m0s)"},
		{"jitter past an @every", func(s *pb.JobSpec) {
			s.Schedule, s.Schedules = "", []string{"@daily", "@every 30s"}
			s.Jitter = dur(30 * time.Second)
		},
			"jitter", "less than the interval of the schedule's @every (30s)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := fullJob()
			tc.mutate(spec)
			vs := violationsOf(t, Validate(spec, now))
			if len(vs) != 1 || vs[0].Field != tc.wantField || !strings.Contains(vs[0].Rule, tc.wantRule) {
				t.Fatalf("violations %+v; want exactly one on %q mentioning %q", vs, tc.wantField, tc.wantRule)
			}
		})
	}
}

func TestValidateRejectsExecTargets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		mutate    func(*pb.ExecTarget)
		wantField string
	}{
		{"empty command", func(e *pb.ExecTarget) { e.Command = nil }, "exec.command"},
		{"empty program", func(e *pb.ExecTarget) { e.Command = []string{"", "x"} }, "exec.command[0]"},
		{"relative program", func(e *pb.ExecTarget) { e.Command = []string{"prune", "x"} }, "exec.command[0]"},
		{"program climbing out", func(e *pb.ExecTarget) { e.Command = []string{"/usr/local/bin/../../../bin/sh"} }, "exec.command[0]"},
		{"NUL in argument", func(e *pb.ExecTarget) { e.Command = []string{"/bin/echo", "a\x00b"} }, "exec.command[1]"},
		{"env key with =", func(e *pb.ExecTarget) { e.Env = map[string]string{"A=B": "c"} }, "exec.env"},
		{"empty env key", func(e *pb.ExecTarget) { e.Env = map[string]string{"": "c"} }, "exec.env"},
		{"relative dir", func(e *pb.ExecTarget) { e.Dir = "work" }, "exec.dir"},
		{"negative timeout", func(e *pb.ExecTarget) { e.Timeout = dur(-time.Minute) }, "exec.timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := execJob()
			tc.mutate(spec.Exec)
			vs := violationsOf(t, Validate(spec, now))
			if len(vs) != 1 || vs[0].Field != tc.wantField {
				t.Fatalf("violations %+v; want exactly one on %q", vs, tc.wantField)
			}
		})
	}
}

func TestValidateRejectsWorkerTargets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		spec      func() *pb.JobSpec
		mutate    func(*pb.WorkerTarget)
		wantField string
		wantRule  string
	}{
		{"no pool", workerJob, func(w *pb.WorkerTarget) { w.Pool = "" }, "worker.pool", "required"},
		{"pool with capitals", workerJob, func(w *pb.WorkerTarget) { w.Pool = "Batch" }, "worker.pool", "must match"},
		{"bad tag key", workerJob, func(w *pb.WorkerTarget) { w.Tags = map[string]string{"a b": "c"} }, "worker.tags", "key \"a b\" must match"},
		{"neither command nor handler", workerJob, func(w *pb.WorkerTarget) { w.Command = nil }, "worker.command", "must not be empty"},
		{"both command and handler", workerJob, func(w *pb.WorkerTarget) { w.Handler = "x" }, "worker.command", "exactly one of command or handler"},
		{"empty program", workerJob, func(w *pb.WorkerTarget) { w.Command = []string{""} }, "worker.command[0]", "program"},
		{"relative dir", workerJob, func(w *pb.WorkerTarget) { w.Dir = "work" }, "worker.dir", "absolute"},
		{"payload for a command", workerJob, func(w *pb.WorkerTarget) { w.Payload = "x" }, "worker.payload", "for a handler"},
		{"zero timeout", workerJob, func(w *pb.WorkerTarget) { w.Timeout = dur(0) }, "worker.timeout", "positive"},
		{"negative lease", handlerJob, func(w *pb.WorkerTarget) { w.Lease = dur(-time.Second) }, "worker.lease", "positive"},
		{"lease below a second", handlerJob, func(w *pb.WorkerTarget) { w.Lease = dur(500 * time.Millisecond) }, "worker.lease", "between 1s and 1h0m0s"},
		{"lease above an hour", handlerJob, func(w *pb.WorkerTarget) { w.Lease = dur(2 * time.Hour) }, "worker.lease", "between 1s and 1h0m0s"},
		{"handler name with space", handlerJob, func(w *pb.WorkerTarget) { w.Handler = "charge cards" }, "worker.handler", "must match"},
		{"payload too large", handlerJob, func(w *pb.WorkerTarget) { w.Payload = strings.Repeat("x", MaxPayloadLen+1) }, "worker.payload", "at most 65536 bytes"},
		{"payload not UTF-8", handlerJob, func(w *pb.WorkerTarget) { w.Payload = "\xff" }, "worker.payload", "UTF-8"},
		{"env for a handler", handlerJob, func(w *pb.WorkerTarget) { w.Env = map[string]string{"A": "b"} }, "worker.env", "for a command"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec()
			tc.mutate(spec.Worker)
			vs := violationsOf(t, Validate(spec, now))
			if len(vs) != 1 || vs[0].Field != tc.wantField || !strings.Contains(vs[0].Rule, tc.wantRule) {
				t.Fatalf("violations %+v; want exactly one on %q saying %q", vs, tc.wantField, tc.wantRule)
			}
		})
	}
}

func TestValidateReportsEveryViolation(t *testing.T) {
	t.Parallel()
	spec := fullJob()
	spec.Name = "Nightly Billing"
	spec.Schedule = "61 * * * *"
	spec.Timezone = "Nowhere/Special"
	spec.Http.Url = "/run"
	spec.Deadline = dur(-time.Second)
	err := Validate(spec, now)
	vs := violationsOf(t, err)
	var fields []string
	for _, v := range vs {
		fields = append(fields, v.Field)
	}
	if got, want := strings.Join(fields, ","), "name,timezone,schedule,http.url,deadline"; got != want {
		t.Fatalf("fields %s, want %s (%v)", got, want, err)
	}
	msg := err.Error()
	wantPrefix := `invalid job "Nightly Billing": name: must match [a-z0-9][a-z0-9._-]{0,62}; timezone: unknown time zone`
	if !strings.HasPrefix(msg, wantPrefix) || !strings.Contains(msg, "; schedule: minute field: 61 is above 59; http.url: ") {
		t.Fatalf("message %q", msg)
	}
}

func TestValidationErrorIsOneLine(t *testing.T) {
	t.Parallel()
	spec := fullJob()
	spec.Name = "bad\nname"
	spec.Schedule = "@every 5\nminutes"
	msg := Validate(spec, now).Error()
	if strings.ContainsAny(msg, "\r\n") {
		t.Fatalf("message spans lines: %q", msg)
	}
	if !strings.Contains(msg, `invalid job "bad\nname": name: `) {
		t.Fatalf("message does not quote the name: %q", msg)
	}
}

func TestValidateNil(t *testing.T) {
	t.Parallel()
	vs := violationsOf(t, Validate(nil, now))
	if len(vs) != 1 || vs[0].Field != "spec" {
		t.Fatalf("violations %+v", vs)
	}
}

func TestValidateDoesNotModifySpec(t *testing.T) {
	t.Parallel()
	spec := &pb.JobSpec{Name: "x", Schedule: " 61 * * * * ", Http: &pb.HttpTarget{Url: "/r", Method: "post"}}
	before := proto.Clone(spec)
	_ = Validate(spec, now)
	if !proto.Equal(before, spec) {
		t.Fatalf("Validate changed the spec: %v -> %v", before, spec)
	}
}

func TestValidateChecksScheduleInJobZone(t *testing.T) {
	t.Parallel()
	// An @every that lands within five years is accepted in any zone; an
	// impossible date is refused in any zone, including a bad one.
	spec := fullJob()
	spec.Timezone = "Pacific/Chatham"
	if err := Validate(spec, now); err != nil {
		t.Fatalf("valid zone: %v", err)
	}
	spec.Timezone = "Local"
	spec.Schedule = "0 0 30 2 *"
	vs := violationsOf(t, Validate(spec, now))
	if len(vs) != 2 || vs[0].Field != "timezone" || vs[1].Field != "schedule" {
		t.Fatalf("violations %+v", vs)
	}
}

// Quartz day items, @every with an offset and @at are schedules like any
// other; an @at whose time has passed stays valid (its job has no next
// slot), so a job file applied again after it fired is not refused.
func TestValidateAcceptsScheduleExtensions(t *testing.T) {
	t.Parallel()
	for _, sched := range []string{"0 9 LW * *", "0 9 L-2 * *", "0 9 15W * *", "0 9 * * fri#3", "0 9 ? * 5L",
		"@every 90m offset 15m", "@at 2026-12-24T18:00:00Z", "@at 2026-04-30T18:00:00+02:00"} {
		spec := fullJob()
		spec.Schedule = sched
		if err := Validate(spec, now); err != nil {
			t.Errorf("%q: %v", sched, err)
		}
	}
}

func TestValidateName(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"a", "0", "nightly-billing", "a.b_c-d", strings.Repeat("a", 63)} {
		if err := ValidateName(ok); err != nil {
			t.Errorf("ValidateName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "A", "has space", "-lead", "_lead", strings.Repeat("a", 64), "ü", "a/b"} {
		vs := violationsOf(t, ValidateName(bad))
		if len(vs) != 1 || vs[0].Field != "name" {
			t.Errorf("ValidateName(%q): %+v", bad, vs)
		}
	}
}

func TestValidateParsedReturnsTheSchedule(t *testing.T) {
	t.Parallel()
	spec := fullJob()
	Normalize(spec)
	sched, err := ValidateParsed(spec, now)
	if err != nil {
		t.Fatal(err)
	}
	// 02:00 in Berlin is 00:00 UTC in May (CEST).
	if got, want := sched.Next(now), time.Date(2026, 5, 2, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("Next(%v) = %v, want %v", now, got, want)
	}
	spec.Schedule = "61 * * * *"
	if sched, err := ValidateParsed(spec, now); err == nil || sched != nil {
		t.Fatalf("invalid schedule: got %v, %v; want nil and an error", sched, err)
	}
}
