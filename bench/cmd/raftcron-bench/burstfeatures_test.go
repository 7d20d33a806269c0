package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raftcron/raftcron/jobfile"
	"github.com/raftcron/raftcron/jobspec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func TestChooseFeaturesNeedsTheFieldOnBothSides(t *testing.T) {
	fs := []jobFeature{
		{name: "labelled", fields: []string{"labels"}},
		{name: "not in this bench", fields: []string{"labels", "no_such_field"}},
		{name: "not in the node", fields: []string{"history_limit"}},
		{name: "no field"},
	}
	var r featureReport
	used := chooseFeatures(fs, map[string]bool{"labels": true, "no_such_field": true}, nil, &r)
	if names := featureNames(used); !slices.Equal(names, []string{"labelled", "no field"}) {
		t.Errorf("used %v", names)
	}
	want := []featureSkip{
		{"not in this bench", "this raftcron-bench's JobSpec has no field no_such_field (build it from a tree that has)"},
		{"not in the node", "the node's JobSpec has no field history_limit"},
	}
	if !slices.Equal(r.NotSet, want) {
		t.Errorf("not set %+v, want %+v", r.NotSet, want)
	}

	var unknown featureReport
	used = chooseFeatures(fs, nil, errors.New("GET /v1/openapi.json: HTTP 404"), &unknown)
	if names := featureNames(used); !slices.Equal(names, []string{"no field"}) {
		t.Errorf("without the node's document: used %v", names)
	}
	if len(unknown.NotSet) != 3 || !strings.Contains(unknown.NotSet[0].Reason, "HTTP 404") {
		t.Errorf("without the node's document: not set %+v", unknown.NotSet)
	}
}

func featureNames(fs []jobFeature) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.name)
	}
	return out
}

func TestFeatureJobsApplyEveryUsedFeature(t *testing.T) {
	secret := jobFeatures[slices.IndexFunc(jobFeatures, func(f jobFeature) bool { return f.name == "secret in a header" })]
	labelled := jobFeature{name: "labels", apply: func(job map[string]any, i int) {
		job["labels"] = map[string]any{"i": fmt.Sprint(i)}
	}}
	chain := jobFeature{name: "chain", chained: func(parent string, i int, url string) map[string]any {
		if i%10 != 0 {
			return nil
		}
		return map[string]any{"name": parent + "-child", "http": map[string]any{"url": url}}
	}}
	specs, after, err := featureJobs(25, "http://127.0.0.1:1/hook", []jobFeature{secret, labelled, chain})
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 25 {
		t.Fatalf("%d specs", len(specs))
	}
	s := specs[7]
	if s.GetName() != "burst-000007" || s.GetHttp().GetUrl() != "http://127.0.0.1:1/hook" || s.GetLabels()["i"] != "7" {
		t.Errorf("job 7: %v", s)
	}
	if got := s.GetHttp().GetHeaders()["Authorization"]; got != "Bearer ${secret:bench-token}" {
		t.Errorf("job 7's header %q", got)
	}
	if len(after) != 3 || after[1].parent != "burst-000010" || after[1].spec.GetName() != "burst-000010-child" {
		t.Errorf("chained jobs %+v", after)
	}
	// A feature the node has and this bench cannot write fails the
	// scenario rather than running a plain burst under its name.
	bad := jobFeature{name: "bad", apply: func(job map[string]any, _ int) { job["no_such_field"] = "x" }}
	if _, _, err := featureJobs(1, "http://127.0.0.1:1/", []jobFeature{bad}); err == nil || !strings.Contains(err.Error(), "no_such_field") {
		t.Errorf("an unknown field: %v", err)
	}
}

func TestJobSpecFieldsReadTheOpenAPIDocument(t *testing.T) {
	doc := `{"components":{"schemas":{"Job":{"properties":{"spec":{}}},"JobSpec":{"properties":{"name":{"type":"string"},"jitter":{"type":"string"}}}}}}`
	got, err := jobSpecFields([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got["name"] || !got["jitter"] {
		t.Errorf("fields %v", got)
	}
	if _, err := jobSpecFields([]byte(`{"components":{"schemas":{}}}`)); err == nil {
		t.Error("a document without JobSpec gave fields")
	}
}

func TestHolidayIsNeverTheSlotsDay(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	ics := string(holidayICS(now))
	for _, line := range []string{"BEGIN:VCALENDAR\r\n", "DTSTART;VALUE=DATE:20261101\r\n", "DTEND;VALUE=DATE:20261102\r\n", "END:VCALENDAR\r\n"} {
		if !strings.Contains(ics, line) {
			t.Errorf("calendar lacks %q:\n%s", line, ics)
		}
	}
}

func TestFeatureReportBrief(t *testing.T) {
	r := featureReport{Set: []string{"jitter 0s"}}
	r.skip("calendar", "the node's JobSpec has no field %s", "calendars")
	if got, want := r.brief(), "features: jitter 0s (not set: calendar)"; got != want {
		t.Errorf("brief %q, want %q", got, want)
	}
	if got := (&featureReport{}).brief(); got != "features: none" {
		t.Errorf("brief of none %q", got)
	}
}

// The channel file burst-features applies is a valid channel of the node's
// channel file format, and every job's expect and notify validate.
func TestBenchChannelAndNotifyAreValid(t *testing.T) {
	chans, err := jobfile.DecodeAs([]byte(benchChannelFile()), "channel", func() *pb.Channel { return &pb.Channel{} })
	if err != nil || len(chans) != 1 || chans[0].GetName() != benchChannel {
		t.Fatalf("channel file: %v, %v", chans, err)
	}
	if err := jobspec.ValidateChannel(chans[0]); err != nil {
		t.Fatal(err)
	}
	var alerts []jobFeature
	for _, f := range jobFeatures {
		if slices.Contains(f.fields, "notify") {
			alerts = append(alerts, f)
		}
	}
	specs, _, err := featureJobs(1, "http://127.0.0.1:9/sink", alerts)
	if err != nil {
		t.Fatal(err)
	}
	specs[0].Schedule = "@every 1m"
	if err := jobspec.Validate(specs[0], time.Now()); err != nil || len(specs[0].GetNotify()) != 1 {
		t.Fatalf("the alerting job %v: %v", specs[0], err)
	}
}
