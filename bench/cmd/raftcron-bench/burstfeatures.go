package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/raftcron/raftcron/jobfile"
	"github.com/raftcron/raftcron/localcluster"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// burstFeaturesName is the scenario: the burst with the job features that
// touch the fire path (calendars, alerts, jitter, secrets, chains) on every
// job, each one the node binary has.
const burstFeaturesName = "burst-features"

// cliTimeout bounds one command of the node binary's CLI.
const cliTimeout = 30 * time.Second

// featureEnv is what a feature's preparation may use: the node binary,
// a directory for its files, and (once the cluster runs) the leader's
// address and the sink's URL.
type featureEnv struct {
	bin, dir  string
	addr, url string
}

// cli runs a client command of the node binary; the error carries its
// output.
func (f featureEnv) cli(ctx context.Context, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, f.bin, args...)
	cmd.Env = withoutRaftcronEnv(os.Environ())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("raftcron %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// withoutRaftcronEnv drops RAFTCRON_* so that this shell's address or
// token does not reach the bench's cluster.
func withoutRaftcronEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "RAFTCRON_") {
			out = append(out, kv)
		}
	}
	return out
}

// jobFeature is a job feature on the fire path. burst-features uses it
// when the node binary has it: every field in the node's OpenAPI JobSpec
// and in this program's, and its binary step (if any) done.
type jobFeature struct {
	name string
	// fields are the JobSpec fields the feature sets (job file names).
	fields []string
	// binary, if set, readies the node binary before the cluster starts
	// and returns serve flags for it; an error means the binary lacks
	// the feature.
	binary func(ctx context.Context, f featureEnv) ([]string, error)
	// setUp, if set, makes what the jobs refer to once the cluster has a
	// leader; an error fails the scenario (the node has the feature).
	setUp func(ctx context.Context, f featureEnv) error
	// apply sets the feature on job i, in the job file's form.
	apply func(job map[string]any, i int)
	// chained, if set, is a job for job i to chain after it, in the job
	// file's form, or nil.
	chained func(parent string, i int, url string) map[string]any
}

// Names the features' jobs refer to.
const (
	benchCalendar = "bench-holidays"
	benchChannel  = "bench-alerts"
	benchSecret   = "bench-token"
)

// jobFeatures are the features burst-features puts on its jobs: every job
// uses a calendar, an expect block with a notify rule, jitter 0s and a
// secret in a header, and one job in ten has a job chained after it.
var jobFeatures = []jobFeature{
	{
		name:   "calendar",
		fields: []string{"calendars"},
		setUp: func(ctx context.Context, f featureEnv) error {
			path := filepath.Join(f.dir, "holidays.ics")
			if err := os.WriteFile(path, holidayICS(time.Now()), 0o644); err != nil {
				return err
			}
			return f.cli(ctx, "calendar", "import", benchCalendar, "--ics", path, "--addr", f.addr)
		},
		apply: func(job map[string]any, _ int) {
			job["calendars"] = map[string]any{"exclude": []any{benchCalendar}}
		},
	},
	{
		name:   "expect and notify",
		fields: []string{"expect", "notify"},
		setUp: func(ctx context.Context, f featureEnv) error {
			path := filepath.Join(f.dir, "channel.yaml")
			if err := os.WriteFile(path, []byte(benchChannelFile()), 0o644); err != nil {
				return err
			}
			return f.cli(ctx, "channel", "apply", "-f", path, "--addr", f.addr)
		},
		apply: func(job map[string]any, _ int) {
			job["expect"] = map[string]any{"start_within": "30s", "max_duration": "1m"}
			job["notify"] = []any{map[string]any{"channel": benchChannel, "on": []any{"failed", "late", "too_long"}}}
		},
	},
	{
		name:   "jitter 0s",
		fields: []string{"jitter"},
		apply:  func(job map[string]any, _ int) { job["jitter"] = "0s" },
	},
	{
		name: "secret in a header",
		binary: func(ctx context.Context, f featureEnv) ([]string, error) {
			key := filepath.Join(f.dir, "secrets.key")
			if err := f.cli(ctx, "secret", "keygen", "--out", key); err != nil {
				return nil, err
			}
			return []string{"--secrets-key-file", key}, nil
		},
		setUp: func(ctx context.Context, f featureEnv) error {
			return f.cli(ctx, "secret", "put", benchSecret, "--from-literal", "bench-secret-value", "--addr", f.addr)
		},
		apply: func(job map[string]any, _ int) {
			target := job["http"].(map[string]any)
			target["headers"] = map[string]any{"Authorization": "Bearer ${secret:" + benchSecret + "}"}
		},
	},
	{
		name:   "chained child on 1 job in 10",
		fields: []string{"after"},
		chained: func(parent string, i int, url string) map[string]any {
			if i%10 != 0 {
				return nil
			}
			return map[string]any{
				"name":  fmt.Sprintf("burst-child-%06d", i),
				"http":  map[string]any{"url": url},
				"after": []any{map[string]any{"job": parent, "on": "success"}},
			}
		},
	},
}

// benchChannelFile is the channel file of burst-features' notify rules.
// Nothing listens there: a rule that fired would show as a failed
// notification, not as a delivery to the sink.
func benchChannelFile() string {
	return fmt.Sprintf("name: %s\nwebhook: {url: \"http://127.0.0.1:9/%s\"}\n", benchChannel, benchChannel)
}

// featureJob is job i of burst-features, in the job file's form: the plain
// burst's job with every used feature applied.
func featureJob(i int, url string, used []jobFeature) map[string]any {
	job := map[string]any{
		"name": fmt.Sprintf("burst-%06d", i),
		"http": map[string]any{"url": url},
	}
	for _, f := range used {
		if f.apply != nil {
			f.apply(job, i)
		}
	}
	return job
}

// featureJobs are burst-features' n jobs (their schedule left for the
// burst to set) and the jobs chained after them.
func featureJobs(n int, url string, used []jobFeature) ([]*pb.JobSpec, []chainedJob, error) {
	specs := make([]*pb.JobSpec, n)
	var after []chainedJob
	for i := range n {
		job := featureJob(i, url, used)
		s, err := jobfile.FromMap(job)
		if err != nil {
			return nil, nil, fmt.Errorf("%s job %d: %w", burstFeaturesName, i, err)
		}
		specs[i] = s
		for _, f := range used {
			if f.chained == nil {
				continue
			}
			if c := f.chained(s.GetName(), i, url); c != nil {
				cs, err := jobfile.FromMap(c)
				if err != nil {
					return nil, nil, fmt.Errorf("%s job chained after %s: %w", burstFeaturesName, s.GetName(), err)
				}
				after = append(after, chainedJob{spec: cs, parent: s.GetName()})
			}
		}
	}
	return specs, after, nil
}

// featureReport says which features burst-features' jobs used.
type featureReport struct {
	Set    []string      `json:"set"`
	NotSet []featureSkip `json:"not_set,omitempty"`
}

type featureSkip struct {
	Feature string `json:"feature"`
	Reason  string `json:"reason"`
}

func (r *featureReport) skip(name, format string, args ...any) {
	r.NotSet = append(r.NotSet, featureSkip{Feature: name, Reason: fmt.Sprintf(format, args...)})
}

// brief is the report's part of a summary line.
func (r *featureReport) brief() string {
	set := "none"
	if len(r.Set) > 0 {
		set = strings.Join(r.Set, ", ")
	}
	s := "features: " + set
	if len(r.NotSet) > 0 {
		names := make([]string, len(r.NotSet))
		for i, k := range r.NotSet {
			names[i] = k.Feature
		}
		s += " (not set: " + strings.Join(names, ", ") + ")"
	}
	return s
}

// chooseFeatures keeps the features whose every field the node's JobSpec
// (nodeFields) and this program's both have, and reports the others.
func chooseFeatures(fs []jobFeature, nodeFields map[string]bool, nodeErr error, r *featureReport) []jobFeature {
	own := (&pb.JobSpec{}).ProtoReflect().Descriptor().Fields()
	var used []jobFeature
next:
	for _, f := range fs {
		for _, field := range f.fields {
			switch {
			case own.ByName(protoreflect.Name(field)) == nil:
				r.skip(f.name, "this raftcron-bench's JobSpec has no field %s (build it from a tree that has)", field)
				continue next
			case nodeErr != nil:
				r.skip(f.name, "the node's JobSpec fields are unknown: %v", nodeErr)
				continue next
			case !nodeFields[field]:
				r.skip(f.name, "the node's JobSpec has no field %s", field)
				continue next
			}
		}
		used = append(used, f)
	}
	return used
}

// nodeJobSpecFields are the JobSpec properties of the node's OpenAPI
// document.
func nodeJobSpecFields(ctx context.Context, n *localcluster.Node) (map[string]bool, error) {
	code, body, err := n.Get(ctx, "/v1/openapi.json")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET /v1/openapi.json: HTTP %d", code)
	}
	return jobSpecFields(body)
}

// jobSpecFields are the properties of an OpenAPI 3 document's JobSpec.
func jobSpecFields(body []byte) (map[string]bool, error) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("/v1/openapi.json: %w", err)
	}
	spec, ok := doc.Components.Schemas["JobSpec"]
	if !ok {
		return nil, fmt.Errorf("/v1/openapi.json has no JobSpec schema")
	}
	out := map[string]bool{}
	for k := range spec.Properties {
		out[k] = true
	}
	return out, nil
}

// holidayICS is an iCalendar file of one all-day holiday half a year
// after now: a calendar the jobs exclude that never holds the slot.
func holidayICS(now time.Time) []byte {
	day := now.UTC().AddDate(0, 6, 0)
	lines := []string{
		"BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//raftcron//bench//EN",
		"BEGIN:VEVENT", "UID:bench-holiday@raftcron.invalid",
		"DTSTAMP:" + now.UTC().Format("20060102T150405Z"),
		"DTSTART;VALUE=DATE:" + day.Format("20060102"),
		"DTEND;VALUE=DATE:" + day.AddDate(0, 0, 1).Format("20060102"),
		"SUMMARY:bench holiday", "END:VEVENT", "END:VCALENDAR",
	}
	return []byte(strings.Join(lines, "\r\n") + "\r\n")
}

// runBurstFeatures is the burst with every job feature of jobFeatures the
// node binary has; the result says which it set (metrics.features).
func runBurstFeatures(ctx context.Context, e *env, res *Result) error {
	fe := featureEnv{bin: e.cfg.Bin, dir: filepath.Join(e.workDir, burstFeaturesName+"-files")}
	if err := os.MkdirAll(fe.dir, 0o755); err != nil {
		return err
	}
	report := &featureReport{Set: []string{}}
	var flags []string
	var ready []jobFeature
	for _, f := range jobFeatures {
		if f.binary != nil {
			fl, err := f.binary(ctx, fe)
			if err != nil {
				report.skip(f.name, "the node binary: %v", err)
				continue
			}
			flags = append(flags, fl...)
		}
		ready = append(ready, f)
	}
	var specs []*pb.JobSpec
	v := burstVariant{name: burstFeaturesName, flags: flags}
	v.setUp = func(ctx context.Context, _ *localcluster.Cluster, leader *localcluster.Node, url string, m *burstMetrics) ([]chainedJob, error) {
		m.Features = report
		nodeFields, nodeErr := nodeJobSpecFields(ctx, leader)
		used := chooseFeatures(ready, nodeFields, nodeErr, report)
		fe.addr, fe.url = leader.Addr, url
		for _, f := range used {
			if f.setUp != nil {
				if err := f.setUp(ctx, fe); err != nil {
					return nil, fmt.Errorf("%s: %w", f.name, err)
				}
			}
			report.Set = append(report.Set, f.name)
		}
		e.logf("%s: %s", burstFeaturesName, report.brief())
		var after []chainedJob
		var err error
		specs, after, err = featureJobs(e.cfg.BurstJobs, url, used)
		return after, err
	}
	v.job = func(i int, schedule, _ string) *pb.JobSpec {
		specs[i].Schedule = schedule
		return specs[i]
	}
	return runBurstVariant(ctx, e, res, v)
}
