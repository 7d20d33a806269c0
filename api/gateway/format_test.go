package gateway_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/raftcron/raftcron/jobfile"
)

// A job in the job file's JSON form, every enum and duration spelled as
// `job get -o json` prints them.
const fileForm = `{
  "name": "report",
  "schedule": "*/5 * * * *",
  "http": {"url": "http://report.internal/", "timeout": "1m30s", "success_codes": [200, 204]},
  "catchup": {"window": "1m", "policy": "latest"},
  "overlap": "skip",
  "delivery": "at_most_once",
  "retry": {"max_attempts": 3, "initial_backoff": "1.5s", "max_backoff": "1m"},
  "deadline": "10m",
  "start_at": "2026-01-01T00:00:00Z",
  "labels": {"team": "ops"}
}`

func TestJobSpecsTravelInTheJobFileForm(t *testing.T) {
	e := start(t)
	put := e.ok("PUT", "/v1/jobs/report", fileForm)
	got := e.ok("GET", "/v1/jobs/report", "")
	for _, doc := range []map[string]any{put, got} {
		spec := dig(doc, "job", "spec")
		for path, want := range map[string]any{
			"overlap": "skip", "delivery": "at_most_once", "deadline": "10m0s",
			"catchup.policy": "latest", "catchup.window": "1m0s",
			"retry.initial_backoff": "1.5s", "retry.max_attempts": float64(3), "http.timeout": "1m30s",
			"start_at": "2026-01-01T00:00:00Z",
		} {
			if v := dig(spec.(map[string]any), strings.Split(path, ".")...); v != want {
				t.Errorf("spec.%s = %#v, want %#v (the job file's form)", path, v, want)
			}
		}
	}
	// Exactly what `job get -o json` prints of the stored spec.
	job, err := e.node.state.Job("report")
	if err != nil {
		t.Fatal(err)
	}
	b, err := jobfile.EncodeJSON(job.GetSpec())
	if err != nil {
		t.Fatal(err)
	}
	var want any
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if spec := dig(got, "job", "spec"); !reflect.DeepEqual(spec, want) {
		t.Errorf("GET's spec:\n%v\nwant job get -o json's:\n%v", spec, want)
	}
	// Everything else stays proto JSON: 64-bit numbers as strings, enums
	// by their proto names.
	if dig(got, "job", "version") != "1" {
		t.Errorf("job.version = %#v, want proto JSON's \"1\"", dig(got, "job", "version"))
	}
	run := e.ok("POST", "/v1/jobs/report:trigger", `{"request_id": "r-1"}`)
	if dig(run, "run", "kind") != "FIRE_KIND_MANUAL" {
		t.Errorf("run.kind = %v, want FIRE_KIND_MANUAL", dig(run, "run", "kind"))
	}
	list := e.ok("GET", "/v1/jobs", "")
	if jobs, _ := list["jobs"].([]any); len(jobs) != 1 || dig(jobs[0].(map[string]any), "spec", "overlap") != "skip" {
		t.Errorf("ListJobs: %v, want the job's spec in the file form", list)
	}
}

func TestProtoSpellingsOfASpecAreStillRead(t *testing.T) {
	e := start(t)
	e.ok("PUT", "/v1/jobs/legacy", `{"schedule": "@hourly", "http": {"url": "http://legacy.internal/", "timeout": "90s"},
	  "catchup": {"window": "120s", "policy": "CATCHUP_POLICY_NONE"}, "overlap": "OVERLAP_ALLOW", "delivery": "DELIVERY_AT_LEAST_ONCE"}`)
	spec := dig(e.ok("GET", "/v1/jobs/legacy", ""), "job", "spec").(map[string]any)
	for path, want := range map[string]string{
		"overlap": "allow", "catchup.policy": "none", "catchup.window": "2m0s", "http.timeout": "1m30s", "delivery": "at_least_once",
	} {
		if v := dig(spec, strings.Split(path, ".")...); v != want {
			t.Errorf("spec.%s = %#v, want %q", path, v, want)
		}
	}
}

func TestABadSpecValueNamesItsField(t *testing.T) {
	e := start(t)
	for body, field := range map[string]string{
		`{"schedule": "@daily", "http": {"url": "http://x/"}, "overlap": "sometimes"}`:              "overlap",
		`{"schedule": "@daily", "http": {"url": "http://x/"}, "catchup": {"window": "a while"}}`:    "catchup.window",
		`{"schedule": "@daily", "http": {"url": "http://x/"}, "catchup": {"windows": "1m"}}`:        "catchup",
		`{"schedule": "@daily", "http": {"url": "http://x/", "timeout": 30}}`:                       "http.timeout",
		`{"schedule": "@daily", "http": {"url": "http://x/"}, "overlap": "skip"`:                    "spec",
		`{"schedule": "@daily", "http": {"url": "http://x/"}, "overlap": "skip"} {"name": "other"}`: "spec",
	} {
		doc := e.fails("PUT", "/v1/jobs/bad", body, http.StatusBadRequest, codes.InvalidArgument)
		details, _ := doc["details"].([]any)
		if len(details) != 1 || !strings.Contains(string(mustJSON(t, details[0])), `"field":"`+field+`"`) {
			t.Errorf("PUT %s: %v, want a BadRequest naming %s", body, doc, field)
		}
	}
	e.fails("GET", "/v1/jobs/bad", "", http.StatusNotFound, codes.NotFound)
}

func TestAuditDiffsReadInTheJobFileForm(t *testing.T) {
	e := start(t)
	e.ok("PUT", "/v1/jobs/report", fileForm)
	e.ok("PUT", "/v1/jobs/report", strings.Replace(fileForm, `"overlap": "skip"`, `"overlap": "buffer_one"`, 1))
	recs := e.ok("GET", "/v1/audit?job=report&limit=1", "")["records"].([]any)
	changes := dig(recs[0].(map[string]any), "changes").([]any)
	if len(changes) != 1 || dig(changes[0].(map[string]any), "field") != "overlap" ||
		dig(changes[0].(map[string]any), "before") != `"skip"` || dig(changes[0].(map[string]any), "after") != `"buffer_one"` {
		t.Fatalf("the update's changes: %v, want overlap \"skip\" → \"buffer_one\"", changes)
	}
}
