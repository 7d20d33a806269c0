package cli

import (
	"fmt"
	"io"
	"strings"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// maxChangesWidth keeps a long diff from wrapping a table row; -o yaml
// shows all of it.
const maxChangesWidth = 80

// changeLine is one changed field as the trail shows it:
// schedule: "0 * * * *" → "*/5 * * * *". An empty side was unset.
func changeLine(c *pb.AuditChange) string {
	return fmt.Sprintf("%s: %s → %s", c.GetField(), orUnset(c.GetBefore()), orUnset(c.GetAfter()))
}

func orUnset(v string) string {
	if v == "" {
		return "(unset)"
	}
	return v
}

func versionChange(r *pb.AuditRecord) string {
	if r.GetVersionBefore() == 0 && r.GetVersionAfter() == 0 {
		return "-"
	}
	return fmt.Sprintf("%d→%d", r.GetVersionBefore(), r.GetVersionAfter())
}

func auditNote(r *pb.AuditRecord) string {
	parts := make([]string, 0, len(r.GetChanges())+1)
	if r.GetRunId() != "" {
		parts = append(parts, "run "+r.GetRunId())
	}
	for _, c := range r.GetChanges() {
		parts = append(parts, changeLine(c))
	}
	return orDash(clip(strings.Join(parts, "; "), maxChangesWidth))
}

// writeAudit prints audit records: a table, a JSON array or a YAML list.
func writeAudit(w io.Writer, format outputFormat, recs []*pb.AuditRecord) error {
	switch format {
	case outputJSON:
		return writeJSON(w, auditViews(recs))
	case outputYAML:
		return writeYAML(w, auditViews(recs))
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "SEQ\tTIME\tPRINCIPAL\tACTION\tJOB\tVERSION\tCHANGES")
	for _, r := range recs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.GetSeq(), nanoTime(r.GetAtUnixNano()), orDash(r.GetPrincipal()),
			r.GetAction(), orDash(r.GetJob()), versionChange(r), auditNote(r))
	}
	return tw.Flush()
}

// auditView is the JSON/YAML face of an audit record: times in RFC 3339.
type auditView struct {
	Seq           uint64       `json:"seq"`
	Time          string       `json:"time"`
	Principal     string       `json:"principal"`
	Action        string       `json:"action"`
	Job           string       `json:"job,omitempty"`
	RunID         string       `json:"run_id,omitempty"`
	VersionBefore uint64       `json:"version_before"`
	VersionAfter  uint64       `json:"version_after"`
	Changes       []changeView `json:"changes,omitempty"`
	Index         uint64       `json:"index"`
}

type changeView struct {
	Field  string `json:"field"`
	Before string `json:"before"`
	After  string `json:"after"`
}

func auditViews(recs []*pb.AuditRecord) []auditView {
	out := make([]auditView, 0, len(recs))
	for _, r := range recs {
		v := auditView{
			Seq: r.GetSeq(), Time: nanoStamp(r.GetAtUnixNano()), Principal: r.GetPrincipal(), Action: r.GetAction(),
			Job: r.GetJob(), RunID: r.GetRunId(), VersionBefore: r.GetVersionBefore(), VersionAfter: r.GetVersionAfter(),
			Index: r.GetIndex(),
		}
		for _, c := range r.GetChanges() {
			v.Changes = append(v.Changes, changeView{Field: c.GetField(), Before: c.GetBefore(), After: c.GetAfter()})
		}
		out = append(out, v)
	}
	return out
}
