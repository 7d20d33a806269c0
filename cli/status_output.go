package cli

import (
	"fmt"
	"io"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

const jobStatusHeader = "NEXT FIRE\tLAST RUN\tLAST OUTCOME\tOK\tFAILED\tMISSED\tOPEN RUNS\tLATEST TOKEN"

func jobStatusRow(job *pb.Job) string {
	st := job.GetStatus()
	next := unixTime(st.GetNextFireUnix())
	if job.GetSpec().GetPaused() {
		next = "- (paused)"
	}
	outcome := orDash(stateName(st.GetLastOutcome()))
	if st.GetLastFinishedAtUnixNano() != 0 {
		outcome += " at " + nanoTime(st.GetLastFinishedAtUnixNano())
	}
	return fmt.Sprintf("%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d", next, orDash(st.GetLastRunId()), outcome,
		st.GetSucceeded(), st.GetFailed(), st.GetMissed(), len(st.GetOpenRunIds()), st.GetLatestToken())
}

// writeJobStatusBlock prints what the scheduler has done with the job,
// below its spec in `job get`.
func writeJobStatusBlock(w io.Writer, job *pb.Job) error {
	tw := newTable(w)
	fmt.Fprintln(tw, jobStatusHeader)
	fmt.Fprintln(tw, jobStatusRow(job))
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeJobStatusNotes(w, job)
}

// writeJobStatusNotes prints, below the status row, what only some jobs
// have: a pause's end or cause, and a backfill.
func writeJobStatusNotes(w io.Writer, job *pb.Job) error {
	st := job.GetStatus()
	if p := st.GetPause(); job.GetSpec().GetPaused() && p != nil {
		line := "paused"
		if p.GetUntilUnix() != 0 {
			line += " until " + unixTime(p.GetUntilUnix())
		}
		if p.GetReason() != "" {
			line += " by the job itself (" + p.GetReason() + ")"
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	if bf := st.GetBackfill(); bf != nil {
		if _, err := fmt.Fprintln(w, backfillLine(bf)); err != nil {
			return err
		}
	}
	return nil
}

// jobStatusView is the JSON/YAML face of `job status`.
type jobStatusView struct {
	Name           string   `json:"name"`
	Generation     uint64   `json:"generation"`
	Paused         bool     `json:"paused"`
	NextFire       string   `json:"next_fire,omitempty"`
	Cursor         string   `json:"cursor,omitempty"`
	LatestToken    uint64   `json:"latest_token"`
	Succeeded      uint64   `json:"succeeded"`
	Failed         uint64   `json:"failed"`
	Missed         uint64   `json:"missed"`
	LastRunID      string   `json:"last_run_id,omitempty"`
	LastOutcome    string   `json:"last_outcome,omitempty"`
	LastFinishedAt string   `json:"last_finished_at,omitempty"`
	OpenRunIDs     []string `json:"open_run_ids"`
	BufferedSlot   string   `json:"buffered_slot,omitempty"`
	UpdatedBy      string   `json:"updated_by,omitempty"`
	PausedUntil    string   `json:"paused_until,omitempty"`
	PauseReason    string   `json:"pause_reason,omitempty"`
	FailuresInARow uint32   `json:"failures_in_a_row,omitempty"`
	SlotsFired     uint64   `json:"slots_fired,omitempty"`
	// Backfill is the job's running or last backfill.
	Backfill *backfillView `json:"backfill,omitempty"`
}

func jobStatusViewOf(job *pb.Job) jobStatusView {
	st := job.GetStatus()
	open := append([]string{}, st.GetOpenRunIds()...)
	return jobStatusView{
		Name:           job.GetSpec().GetName(),
		Generation:     job.GetGeneration(),
		Paused:         job.GetSpec().GetPaused(),
		NextFire:       unixStamp(st.GetNextFireUnix()),
		Cursor:         unixStamp(st.GetCursorUnix()),
		LatestToken:    st.GetLatestToken(),
		Succeeded:      st.GetSucceeded(),
		Failed:         st.GetFailed(),
		Missed:         st.GetMissed(),
		LastRunID:      st.GetLastRunId(),
		LastOutcome:    stateName(st.GetLastOutcome()),
		LastFinishedAt: nanoStamp(st.GetLastFinishedAtUnixNano()),
		OpenRunIDs:     open,
		BufferedSlot:   unixStamp(st.GetBufferedSlotUnix()),
		UpdatedBy:      job.GetUpdatedBy(),
		PausedUntil:    unixStamp(st.GetPause().GetUntilUnix()),
		PauseReason:    st.GetPause().GetReason(),
		FailuresInARow: st.GetFailuresInARow(),
		SlotsFired:     st.GetSlotsFired(),
		Backfill:       backfillViewOf(st.GetBackfill()),
	}
}

// writeJobStatus prints `job status`: a one-row table (with the name) or
// the status as JSON/YAML.
func writeJobStatus(w io.Writer, format outputFormat, job *pb.Job) error {
	switch format {
	case outputJSON:
		return writeJSON(w, jobStatusViewOf(job))
	case outputYAML:
		return writeYAML(w, jobStatusViewOf(job))
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "NAME\t"+jobStatusHeader)
	fmt.Fprintln(tw, job.GetSpec().GetName()+"\t"+jobStatusRow(job))
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeJobStatusNotes(w, job)
}
