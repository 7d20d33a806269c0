package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/raftcron/raftcron/fsm"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Times in tables are RFC 3339 in UTC to the second; "-" means none.
func unixTime(sec int64) string {
	if sec == 0 {
		return "-"
	}
	return time.Unix(sec, 0).UTC().Format(time.RFC3339)
}

func nanoTime(ns int64) string {
	if ns == 0 {
		return "-"
	}
	return time.Unix(0, ns).UTC().Format(time.RFC3339)
}

// Times in JSON and YAML keep their precision; empty means none.
func unixStamp(sec int64) string {
	if sec == 0 {
		return ""
	}
	return time.Unix(sec, 0).UTC().Format(time.RFC3339)
}

func nanoStamp(ns int64) string {
	if ns == 0 {
		return ""
	}
	return time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
}

// stateName is "succeeded" for RUN_STATE_SUCCEEDED.
func stateName(s pb.RunState) string {
	return enumName(s.String(), "RUN_STATE_")
}

// kindName is "manual" for FIRE_KIND_MANUAL.
func kindName(k pb.FireKind) string {
	return enumName(k.String(), "FIRE_KIND_")
}

func enumName(s, prefix string) string {
	s = strings.ToLower(strings.TrimPrefix(s, prefix))
	if s == "unspecified" {
		return ""
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func tokenOf(r *pb.Run) string {
	if a := fsm.CurrentAttempt(r); a != nil {
		return strconv.FormatUint(a.GetToken(), 10)
	}
	return "-"
}

// maxNoteWidth keeps a long detail from wrapping a table row.
const maxNoteWidth = 60

// runNote is the REASON/DETAIL column: why the run stands where it does.
func runNote(r *pb.Run) string {
	note := r.GetReason()
	if r.GetMissedCount() > 1 {
		note += fmt.Sprintf(" (%d slots, last %s)", r.GetMissedCount(), unixTime(r.GetLastSlotUnix()))
	}
	if note == "" {
		note = fsm.CurrentAttempt(r).GetDetail()
	}
	if note == "" && r.GetState() == pb.RunState_RUN_STATE_DISPATCHED {
		note = progressNote(fsm.CurrentAttempt(r))
	}
	if r.GetState() == pb.RunState_RUN_STATE_RETRYING {
		note = strings.TrimSpace(note + " next attempt at " + nanoTime(r.GetNextAttemptAtUnixNano()))
	}
	if r.GetOffSchedule() {
		note = strings.TrimSpace("off schedule " + note)
	}
	return clip(note, maxNoteWidth)
}

// progressNote is a remote worker's last report of its attempt: "40%
// charged 400 of 1000 cards".
func progressNote(a *pb.Attempt) string {
	var parts []string
	if a.Progress != nil {
		parts = append(parts, fmt.Sprintf("%d%%", a.GetProgress()))
	}
	if m := a.GetProgressMessage(); m != "" {
		parts = append(parts, m)
	}
	return strings.Join(parts, " ")
}

// clip makes s one line of at most n runes.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}

const runHeader = "RUN ID\tJOB\tSCHEDULED AT\tKIND\tSTATE\tATTEMPTS\tTOKEN\tREASON/DETAIL"

func runRow(r *pb.Run) string {
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s", r.GetId(), runJob(r), unixTime(r.GetSlotUnix()),
		orDash(kindName(r.GetKind())), orDash(stateName(r.GetState())), len(r.GetAttempts()), tokenOf(r), orDash(runNote(r)))
}

// runJob is the JOB column: the name, and "(deleted)" for a run of a
// deleted job, which a job now registered under the name does not own.
func runJob(r *pb.Run) string {
	if r.GetJobDeleted() {
		return r.GetJob() + " (deleted)"
	}
	return r.GetJob()
}

func writeRunTable(w io.Writer, runs []*pb.Run) error {
	tw := newTable(w)
	fmt.Fprintln(tw, runHeader)
	for _, r := range runs {
		fmt.Fprintln(tw, runRow(r))
	}
	return tw.Flush()
}

// writeRuns prints runs: a table, a JSON array or a YAML list.
func writeRuns(w io.Writer, format outputFormat, runs []*pb.Run) error {
	switch format {
	case outputJSON:
		return writeJSON(w, runViews(runs))
	case outputYAML:
		return writeYAML(w, runViews(runs))
	default:
		return writeRunTable(w, runs)
	}
}

// writeRun prints one run with its attempts.
func writeRun(w io.Writer, format outputFormat, r *pb.Run) error {
	switch format {
	case outputJSON:
		return writeJSON(w, runViewOf(r))
	case outputYAML:
		return writeYAML(w, runViewOf(r))
	}
	if err := writeRunTable(w, []*pb.Run{r}); err != nil {
		return err
	}
	if len(r.GetAttempts()) > 0 {
		fmt.Fprintln(w)
		tw := newTable(w)
		fmt.Fprintln(tw, "ATTEMPT\tTOKEN\tKIND\tNODE\tTERM\tDISPATCHED AT\tSTATE\tFINISHED AT\tDETAIL")
		for _, a := range r.GetAttempts() {
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", a.GetNumber(), a.GetToken(), orDash(kindName(a.GetKind())),
				orDash(a.GetNodeId()), a.GetTerm(), nanoTime(a.GetDispatchedAtUnixNano()), orDash(stateName(a.GetState())),
				nanoTime(a.GetFinishedAtUnixNano()), orDash(clip(a.GetDetail(), maxNoteWidth)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if err := writeRunRefs(w, "UPSTREAM (PARENT RUNS)", r.GetParents()); err != nil {
		return err
	}
	return writeRunRefs(w, "DOWNSTREAM (RUNS IT FIRED)", r.GetChildren())
}

// writeRunRefs prints a run's lineage one way, under title; nothing when
// it has none.
func writeRunRefs(w io.Writer, title string, refs []*pb.RunRef) error {
	if len(refs) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := newTable(w)
	fmt.Fprintf(tw, "%s\tJOB\tTOKEN\tSTATE\n", title)
	for _, ref := range refs {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", ref.GetRunId(), ref.GetJob(), ref.GetToken(), orDash(stateName(ref.GetState())))
	}
	return tw.Flush()
}

// watchLine is one run change of `run watch` in table format: the columns
// of `run list` on one line, labelled, since a stream cannot be aligned.
func watchLine(r *pb.Run) string {
	line := fmt.Sprintf("%s job=%s scheduled=%s kind=%s state=%s attempts=%d token=%s", r.GetId(), r.GetJob(),
		unixTime(r.GetSlotUnix()), orDash(kindName(r.GetKind())), orDash(stateName(r.GetState())), len(r.GetAttempts()), tokenOf(r))
	if r.GetJobDeleted() {
		line += " job_deleted=true"
	}
	if note := runNote(r); note != "" {
		line += " " + strconv.Quote(note)
	}
	return line
}

// writeWatched prints one change of a watch: a line, a JSON line, or a
// YAML document.
func writeWatched(w io.Writer, format outputFormat, r *pb.Run) error {
	switch format {
	case outputJSON:
		b, err := json.Marshal(runViewOf(r))
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case outputYAML:
		if _, err := io.WriteString(w, "---\n"); err != nil {
			return err
		}
		return writeYAML(w, runViewOf(r))
	default:
		_, err := fmt.Fprintln(w, watchLine(r))
		return err
	}
}

// runView is the JSON/YAML face of a run: enum names in lower case and
// times in RFC 3339 instead of Unix numbers.
type runView struct {
	ID              string `json:"id"`
	Job             string `json:"job"`
	JobDeleted      bool   `json:"job_deleted,omitempty"`
	Generation      uint64 `json:"generation"`
	ScheduledAt     string `json:"scheduled_at"`
	LastScheduledAt string `json:"last_scheduled_at,omitempty"`
	MissedCount     uint64 `json:"missed_count,omitempty"`
	Kind            string `json:"kind,omitempty"`
	OffSchedule     bool   `json:"off_schedule,omitempty"`
	State           string `json:"state"`
	Reason          string `json:"reason,omitempty"`
	RequestID       string `json:"request_id,omitempty"`
	CreatedAt       string `json:"created_at,omitempty"`
	FinishedAt      string `json:"finished_at,omitempty"`
	NextAttemptAt   string `json:"next_attempt_at,omitempty"`
	// Jitter is the slot's dispatch delay; Payload a manual run's;
	// Concurrent: its attempts may run beside the job's other runs.
	Jitter     string        `json:"jitter,omitempty"`
	Payload    string        `json:"payload,omitempty"`
	Concurrent bool          `json:"concurrent,omitempty"`
	Attempts   []attemptView `json:"attempts"`
	// Parents are the runs whose outcome fired a chained run; children
	// the runs a run's outcome fired (run get only).
	Parents  []runRefView `json:"parents,omitempty"`
	Children []runRefView `json:"children,omitempty"`
}

type runRefView struct {
	Job   string `json:"job"`
	RunID string `json:"run_id"`
	Token uint64 `json:"token,omitempty"`
	State string `json:"state,omitempty"`
}

func runRefViews(refs []*pb.RunRef) []runRefView {
	var out []runRefView
	for _, r := range refs {
		out = append(out, runRefView{Job: r.GetJob(), RunID: r.GetRunId(), Token: r.GetToken(), State: stateName(r.GetState())})
	}
	return out
}

type attemptView struct {
	Number       uint32 `json:"number"`
	Token        uint64 `json:"token"`
	Kind         string `json:"kind,omitempty"`
	NodeID       string `json:"node_id,omitempty"`
	Term         uint64 `json:"term,omitempty"`
	DispatchedAt string `json:"dispatched_at,omitempty"`
	State        string `json:"state"`
	StartedAt    string `json:"started_at,omitempty"`
	FinishedAt   string `json:"finished_at,omitempty"`
	Detail       string `json:"detail,omitempty"`
	ExitCode     *int32 `json:"exit_code,omitempty"`
	PingedBy     string `json:"pinged_by,omitempty"`
	// Output is the text the target returned; output_base64 holds it
	// instead when it is not UTF-8.
	Output       string `json:"output,omitempty"`
	OutputBase64 []byte `json:"output_base64,omitempty"`
	// A remote worker's last progress report.
	Progress        *uint32 `json:"progress,omitempty"`
	ProgressMessage string  `json:"progress_message,omitempty"`
	ProgressAt      string  `json:"progress_at,omitempty"`
}

func runViewOf(r *pb.Run) runView {
	v := runView{
		ID: r.GetId(), Job: r.GetJob(), JobDeleted: r.GetJobDeleted(), Generation: r.GetGeneration(),
		ScheduledAt:     unixStamp(r.GetSlotUnix()),
		LastScheduledAt: unixStamp(r.GetLastSlotUnix()),
		MissedCount:     r.GetMissedCount(),
		Kind:            kindName(r.GetKind()),
		OffSchedule:     r.GetOffSchedule(),
		State:           stateName(r.GetState()),
		Reason:          r.GetReason(),
		RequestID:       r.GetRequestId(),
		CreatedAt:       nanoStamp(r.GetCreatedAtUnixNano()),
		FinishedAt:      nanoStamp(r.GetFinishedAtUnixNano()),
		NextAttemptAt:   nanoStamp(r.GetNextAttemptAtUnixNano()),
		Payload:         r.GetPayload(),
		Concurrent:      r.GetConcurrent(),
		Attempts:        []attemptView{},
		Parents:         runRefViews(r.GetParents()),
		Children:        runRefViews(r.GetChildren()),
	}
	if ms := r.GetJitterMs(); ms > 0 {
		v.Jitter = (time.Duration(ms) * time.Millisecond).String()
	}
	for _, a := range r.GetAttempts() {
		av := attemptView{
			Number: a.GetNumber(), Token: a.GetToken(), Kind: kindName(a.GetKind()),
			NodeID: a.GetNodeId(), Term: a.GetTerm(),
			DispatchedAt: nanoStamp(a.GetDispatchedAtUnixNano()),
			State:        stateName(a.GetState()),
			StartedAt:    nanoStamp(a.GetStartedAtUnixNano()),
			FinishedAt:   nanoStamp(a.GetFinishedAtUnixNano()),
			Detail:       a.GetDetail(),

			Progress:        a.Progress,
			ProgressMessage: a.GetProgressMessage(),
			ProgressAt:      nanoStamp(a.GetProgressAtUnixNano()),
			ExitCode:        a.ExitCode,
			PingedBy:        a.GetPingedBy(),
		}
		if out := a.GetOutput(); utf8.Valid(out) {
			av.Output = string(out)
		} else {
			av.OutputBase64 = out
		}
		v.Attempts = append(v.Attempts, av)
	}
	return v
}

func runViews(runs []*pb.Run) []runView {
	out := make([]runView, 0, len(runs))
	for _, r := range runs {
		out = append(out, runViewOf(r))
	}
	return out
}
