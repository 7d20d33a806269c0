package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

var slotTime = time.Date(2026, 6, 1, 2, 0, 0, 0, time.UTC)

// sampleRuns: a run that succeeded after a retry, a range of missed slots,
// and one waiting for its next attempt.
func sampleRuns() []*pb.Run {
	at := slotTime.UnixNano()
	return []*pb.Run{
		{
			Id: "billing-12", Job: "billing", Generation: 3, SlotUnix: slotTime.Unix(), Kind: pb.FireKind_FIRE_KIND_SCHEDULED,
			State: pb.RunState_RUN_STATE_SUCCEEDED, CreatedAtUnixNano: at, FinishedAtUnixNano: at + int64(5*time.Second),
			Attempts: []*pb.Attempt{
				{Number: 1, Token: 12, Kind: pb.FireKind_FIRE_KIND_SCHEDULED, NodeId: "n1", Term: 4, DispatchedAtUnixNano: at,
					State: pb.RunState_RUN_STATE_FAILED, FinishedAtUnixNano: at + int64(time.Second), Detail: "HTTP 503\nService Unavailable"},
				{Number: 2, Token: 15, Kind: pb.FireKind_FIRE_KIND_RETRY, NodeId: "n1", Term: 4, DispatchedAtUnixNano: at + int64(3*time.Second),
					State: pb.RunState_RUN_STATE_SUCCEEDED, FinishedAtUnixNano: at + int64(5*time.Second), Detail: "HTTP 200", Output: []byte(`{"ok":true}`)},
			},
		},
		{
			Id: "billing-m40-0", Job: "billing", SlotUnix: slotTime.Add(-time.Hour).Unix(), LastSlotUnix: slotTime.Add(-time.Minute).Unix(),
			MissedCount: 60, Kind: pb.FireKind_FIRE_KIND_SCHEDULED, State: pb.RunState_RUN_STATE_MISSED, Reason: "catchup_window",
		},
		{
			Id: "report-7", Job: "report", SlotUnix: slotTime.Unix(), Kind: pb.FireKind_FIRE_KIND_MANUAL, RequestId: "deploy-42",
			State: pb.RunState_RUN_STATE_RETRYING, NextAttemptAtUnixNano: at + int64(2*time.Second),
			Attempts: []*pb.Attempt{{Number: 1, Token: 7, Kind: pb.FireKind_FIRE_KIND_MANUAL, State: pb.RunState_RUN_STATE_FAILED, Detail: "exit status 1"}},
		},
		{
			Id: "charge-3", Job: "charge", SlotUnix: slotTime.Unix(), Kind: pb.FireKind_FIRE_KIND_SCHEDULED,
			State: pb.RunState_RUN_STATE_DISPATCHED,
			Attempts: []*pb.Attempt{{Number: 1, Token: 9, Kind: pb.FireKind_FIRE_KIND_SCHEDULED, State: pb.RunState_RUN_STATE_DISPATCHED,
				Progress: &forty, ProgressMessage: "charged 400 of 1000 cards", ProgressAtUnixNano: at}},
		},
	}
}

var forty = uint32(40)

var wideGap = regexp.MustCompile(`\s{3,}`)

func tableRows(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		rows = append(rows, wideGap.Split(strings.TrimSpace(line), -1))
	}
	return rows
}

func TestRunTableColumns(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := writeRuns(&out, outputTable, sampleRuns()); err != nil {
		t.Fatal(err)
	}
	rows := tableRows(out.String())
	want := [][]string{
		{"RUN ID", "JOB", "SCHEDULED AT", "KIND", "STATE", "ATTEMPTS", "TOKEN", "REASON/DETAIL"},
		{"billing-12", "billing", "2026-06-01T02:00:00Z", "scheduled", "succeeded", "2", "15", "HTTP 200"},
		{"billing-m40-0", "billing", "2026-06-01T01:00:00Z", "scheduled", "missed", "0", "-", "catchup_window (60 slots, last 2026-06-01T01:59:00Z)"},
		{"report-7", "report", "2026-06-01T02:00:00Z", "manual", "retrying", "1", "7", "exit status 1 next attempt at 2026-06-01T02:00:02Z"},
		{"charge-3", "charge", "2026-06-01T02:00:00Z", "scheduled", "dispatched", "1", "9", "40% charged 400 of 1000 cards"},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d:\n%s", len(rows), len(want), out.String())
	}
	for i := range want {
		if strings.Join(rows[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("row %d:\n got %q\nwant %q", i, rows[i], want[i])
		}
	}
}

func TestRunGetShowsAttempts(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := writeRun(&out, outputTable, sampleRuns()[0]); err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(out.String(), "\n\n")
	if len(blocks) != 2 {
		t.Fatalf("want the run and its attempts as two blocks:\n%s", out.String())
	}
	rows := tableRows(blocks[1])
	want := [][]string{
		{"ATTEMPT", "TOKEN", "KIND", "NODE", "TERM", "DISPATCHED AT", "STATE", "FINISHED AT", "DETAIL"},
		{"1", "12", "scheduled", "n1", "4", "2026-06-01T02:00:00Z", "failed", "2026-06-01T02:00:01Z", "HTTP 503 Service Unavailable"},
		{"2", "15", "retry", "n1", "4", "2026-06-01T02:00:03Z", "succeeded", "2026-06-01T02:00:05Z", "HTTP 200"},
	}
	for i := range want {
		if i >= len(rows) || strings.Join(rows[i], "|") != strings.Join(want[i], "|") {
			t.Fatalf("attempts block:\n%s\nwant row %d %q", blocks[1], i, want[i])
		}
	}
	out.Reset()
	if err := writeRun(&out, outputTable, sampleRuns()[1]); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "ATTEMPT\t") || strings.Count(out.String(), "\n") != 2 {
		t.Fatalf("a missed run has no attempts block:\n%s", out.String())
	}
}

func TestRunJSONHasReadableTimes(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := writeRun(&out, outputJSON, sampleRuns()[0]); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	attempts := got["attempts"].([]any)
	second := attempts[1].(map[string]any)
	if got["scheduled_at"] != "2026-06-01T02:00:00Z" || got["state"] != "succeeded" || got["kind"] != "scheduled" ||
		got["finished_at"] != "2026-06-01T02:00:05Z" || len(attempts) != 2 ||
		second["token"] != float64(15) || second["kind"] != "retry" || second["output"] != `{"ok":true}` ||
		second["dispatched_at"] != "2026-06-01T02:00:03Z" {
		t.Fatalf("json:\n%s", out.String())
	}
	out.Reset()
	if err := writeRuns(&out, outputYAML, sampleRuns()[1:2]); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"- attempts: []\n", "missed_count: 60\n", "last_scheduled_at: \"2026-06-01T01:59:00Z\"\n", "state: missed\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("yaml lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := writeRun(&out, outputJSON, sampleRuns()[3]); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"progress": 40,`) || !strings.Contains(out.String(), `"progress_message": "charged 400 of 1000 cards"`) ||
		!strings.Contains(out.String(), `"progress_at": "2026-06-01T02:00:00Z"`) {
		t.Fatalf("json of an attempt with progress:\n%s", out.String())
	}
	out.Reset()
	if err := writeRuns(&out, outputJSON, nil); err != nil || strings.TrimSpace(out.String()) != "[]" {
		t.Fatalf("no runs as JSON: %q %v", out.String(), err)
	}
}

func TestRunJSONKeepsBinaryOutput(t *testing.T) {
	t.Parallel()
	r := sampleRuns()[0]
	r.Attempts[1].Output = []byte{0xff, 0x00, 0x01}
	v := runViewOf(r)
	if v.Attempts[1].Output != "" || !bytes.Equal(v.Attempts[1].OutputBase64, []byte{0xff, 0x00, 0x01}) {
		t.Fatalf("binary output: %+v", v.Attempts[1])
	}
}

func TestWatchLines(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	for _, r := range sampleRuns() {
		if err := writeWatched(&out, outputTable, r); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	want := []string{
		`billing-12 job=billing scheduled=2026-06-01T02:00:00Z kind=scheduled state=succeeded attempts=2 token=15 "HTTP 200"`,
		`billing-m40-0 job=billing scheduled=2026-06-01T01:00:00Z kind=scheduled state=missed attempts=0 token=- "catchup_window (60 slots, last 2026-06-01T01:59:00Z)"`,
		`report-7 job=report scheduled=2026-06-01T02:00:00Z kind=manual state=retrying attempts=1 token=7 "exit status 1 next attempt at 2026-06-01T02:00:02Z"`,
		`charge-3 job=charge scheduled=2026-06-01T02:00:00Z kind=scheduled state=dispatched attempts=1 token=9 "40% charged 400 of 1000 cards"`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	out.Reset()
	for _, r := range sampleRuns() {
		if err := writeWatched(&out, outputJSON, r); err != nil {
			t.Fatal(err)
		}
	}
	for i, line := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
		var v runView
		if err := json.Unmarshal([]byte(line), &v); err != nil || v.ID != sampleRuns()[i].GetId() {
			t.Fatalf("JSON line %d %q: %v", i, line, err)
		}
	}
}

func jobWithStatus() *pb.Job {
	job := sampleJob("billing")
	job.Status = &pb.JobStatus{
		CursorUnix: slotTime.Unix(), LatestToken: 15, Succeeded: 4, Failed: 1, Missed: 60,
		LastRunId: "billing-12", LastOutcome: pb.RunState_RUN_STATE_SUCCEEDED,
		LastFinishedAtUnixNano: slotTime.Add(5 * time.Second).UnixNano(),
		OpenRunIds:             []string{"billing-16"},
		NextFireUnix:           slotTime.Add(24 * time.Hour).Unix(),
	}
	return job
}

func TestJobGetTableShowsStatus(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := writeJob(&out, outputTable, jobWithStatus()); err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(out.String(), "\n\n")
	if len(blocks) != 2 || !strings.HasPrefix(blocks[0], "NAME") {
		t.Fatalf("want the spec and the status as two blocks:\n%s", out.String())
	}
	rows := tableRows(blocks[1])
	want := [][]string{
		{"NEXT FIRE", "LAST RUN", "LAST OUTCOME", "OK", "FAILED", "MISSED", "OPEN RUNS", "LATEST TOKEN"},
		{"2026-06-02T02:00:00Z", "billing-12", "succeeded at 2026-06-01T02:00:05Z", "4", "1", "60", "1", "15"},
	}
	for i := range want {
		if i >= len(rows) || strings.Join(rows[i], "|") != strings.Join(want[i], "|") {
			t.Fatalf("status block:\n%s\nwant row %d %q", blocks[1], i, want[i])
		}
	}
	paused := jobWithStatus()
	paused.Spec.Paused = true
	out.Reset()
	if err := writeJob(&out, outputTable, paused); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "- (paused)") {
		t.Fatalf("a paused job shows a next fire:\n%s", out.String())
	}
}

func TestJobGetYAMLHasNoStatus(t *testing.T) {
	t.Parallel()
	for _, format := range []outputFormat{outputYAML, outputJSON} {
		var withStatus, without bytes.Buffer
		plain := jobWithStatus()
		plain.Status = nil
		if err := writeJob(&withStatus, format, jobWithStatus()); err != nil {
			t.Fatal(err)
		}
		if err := writeJob(&without, format, plain); err != nil {
			t.Fatal(err)
		}
		if withStatus.String() != without.String() {
			t.Fatalf("%s output changes with the status:\n%s\nvs\n%s", format, withStatus.String(), without.String())
		}
	}
}

func TestJobStatusOutput(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := writeJobStatus(&out, outputJSON, jobWithStatus()); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got["name"] != "billing" || got["latest_token"] != float64(15) || got["next_fire"] != "2026-06-02T02:00:00Z" ||
		got["last_outcome"] != "succeeded" || got["cursor"] != "2026-06-01T02:00:00Z" || len(got["open_run_ids"].([]any)) != 1 {
		t.Fatalf("json: %s", out.String())
	}
	// A job that never ran still reports its counters and an empty list.
	fresh := sampleJob("fresh")
	fresh.Status = &pb.JobStatus{}
	out.Reset()
	if err := writeJobStatus(&out, outputJSON, fresh); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"latest_token": 0`) || !strings.Contains(out.String(), `"open_run_ids": []`) {
		t.Fatalf("fresh job json: %s", out.String())
	}
	out.Reset()
	if err := writeJobStatus(&out, outputTable, fresh); err != nil {
		t.Fatal(err)
	}
	rows := tableRows(out.String())
	if len(rows) != 2 || strings.Join(rows[1], "|") != "fresh|-|-|-|0|0|0|0|0" {
		t.Fatalf("fresh job table: %q", rows)
	}
}

func TestFireTimesShowTheZone(t *testing.T) {
	t.Parallel()
	times := []*timestamppb.Timestamp{
		timestamppb.New(time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)),
		timestamppb.New(time.Date(2026, 3, 30, 0, 30, 0, 0, time.UTC)),
	}
	var out bytes.Buffer
	if err := writeFireTimes(&out, outputTable, times, nil, "Europe/Berlin"); err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"FIRE TIME (UTC)", "FIRE TIME (Europe/Berlin)"},
		{"2026-03-29T01:00:00Z", "2026-03-29T03:00:00+02:00"},
		{"2026-03-30T00:30:00Z", "2026-03-30T02:30:00+02:00"},
	}
	rows := tableRows(out.String())
	for i := range want {
		if i >= len(rows) || strings.Join(rows[i], "|") != strings.Join(want[i], "|") {
			t.Fatalf("table:\n%s\nwant row %d %q", out.String(), i, want[i])
		}
	}
	out.Reset()
	if err := writeFireTimes(&out, outputTable, times, nil, "UTC"); err != nil || strings.Contains(out.String(), "+") {
		t.Fatalf("UTC job shows one column: %q %v", out.String(), err)
	}
	out.Reset()
	if err := writeFireTimes(&out, outputJSON, times, nil, "Europe/Berlin"); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || strings.Join(got, ",") != "2026-03-29T01:00:00Z,2026-03-30T00:30:00Z" {
		t.Fatalf("json %q: %v", out.String(), err)
	}
}

func TestFireTimesShowWhatSkipsThem(t *testing.T) {
	t.Parallel()
	times := []*timestamppb.Timestamp{
		timestamppb.New(time.Date(2026, 12, 25, 9, 0, 0, 0, time.UTC)),
		timestamppb.New(time.Date(2026, 12, 28, 9, 0, 0, 0, time.UTC)),
	}
	var out bytes.Buffer
	if err := writeFireTimes(&out, outputTable, times, []string{"calendar:us-holidays", ""}, "UTC"); err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"FIRE TIME (UTC)", "SKIPPED BY"},
		{"2026-12-25T09:00:00Z", "calendar:us-holidays"},
		{"2026-12-28T09:00:00Z", "-"},
	}
	rows := tableRows(out.String())
	for i := range want {
		if i >= len(rows) || strings.Join(rows[i], "|") != strings.Join(want[i], "|") {
			t.Fatalf("table:\n%s\nwant row %d %q", out.String(), i, want[i])
		}
	}
}

func TestNextRequestFlags(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		args    []string
		spec    string
		zone    string
		after   string
		count   int
		zoneSet bool
		want    string // error substring; "" means accepted
	}{
		{"job", []string{"a"}, "", "", "", 5, false, ""},
		{"inline", nil, "@daily", "Europe/Berlin", "2026-01-01T00:00:00Z", 100, true, ""},
		{"neither", nil, "", "", "", 5, false, "NAME or --schedule"},
		{"both", []string{"a"}, "@daily", "", "", 5, false, "not both"},
		{"zone with a job", []string{"a"}, "", "UTC", "", 5, true, "--timezone"},
		{"count 0", []string{"a"}, "", "", "", 0, false, "--count"},
		{"count 101", []string{"a"}, "", "", "", 101, false, "--count"},
		{"bad after", []string{"a"}, "", "", "tomorrow", 5, false, "--after"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := nextRequest(tc.args, tc.spec, tc.zone, tc.after, tc.count, tc.zoneSet)
			if tc.want == "" {
				if err != nil || req.GetCount() != uint32(tc.count) {
					t.Fatalf("%v %v", req, err)
				}
				return
			}
			var u *usageError
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &u) {
				t.Fatalf("got %v, want a usage error containing %q", err, tc.want)
			}
		})
	}
}
