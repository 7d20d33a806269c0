package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"

	"github.com/raftcron/raftcron/jobfile"
	"github.com/raftcron/raftcron/ops"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// outputFormat is the value of -o; as a pflag.Value a bad value is a usage error.
type outputFormat string

const (
	outputTable outputFormat = "table"
	outputJSON  outputFormat = "json"
	outputYAML  outputFormat = "yaml"
)

func (o *outputFormat) String() string { return string(*o) }
func (o *outputFormat) Type() string   { return "format" }

func (o *outputFormat) Set(s string) error {
	switch f := outputFormat(strings.ToLower(s)); f {
	case outputTable, outputJSON, outputYAML:
		*o = f
		return nil
	default:
		return fmt.Errorf("%q is not table, json or yaml", s)
	}
}

// writeJob prints one job. JSON and YAML are the job file format, so that
// `job get NAME -o yaml | raftcron job apply -f -` changes nothing; the
// table adds the job's status below its spec (`job status` has it as
// JSON/YAML).
func writeJob(w io.Writer, format outputFormat, job *pb.Job) error {
	switch format {
	case outputJSON:
		return writeEncoded(w, jobfile.EncodeJSON, job.GetSpec())
	case outputYAML:
		return writeEncoded(w, jobfile.EncodeYAML, job.GetSpec())
	}
	if err := writeJobTable(w, []*pb.Job{job}); err != nil {
		return err
	}
	if job.GetStatus() == nil {
		return nil
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	return writeJobStatusBlock(w, job)
}

// writeJobList prints jobs. JSON is always an array; YAML is a stream of
// one document per job. Both apply back with `job apply -f`.
func writeJobList(w io.Writer, format outputFormat, jobs []*pb.Job) error {
	switch format {
	case outputJSON:
		return writeJSONList(w, jobs)
	case outputYAML:
		return writeYAMLStream(w, jobs)
	default:
		return writeJobTable(w, jobs)
	}
}

func writeEncoded(w io.Writer, encode func(...*pb.JobSpec) ([]byte, error), spec *pb.JobSpec) error {
	b, err := encode(spec)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func writeJSONList(w io.Writer, jobs []*pb.Job) error {
	items := make([]json.RawMessage, 0, len(jobs))
	for _, j := range jobs {
		b, err := jobfile.EncodeJSON(j.GetSpec())
		if err != nil {
			return err
		}
		items = append(items, b)
	}
	return writeJSON(w, items)
}

func writeYAMLStream(w io.Writer, jobs []*pb.Job) error {
	if len(jobs) == 0 {
		_, err := io.WriteString(w, "[]\n")
		return err
	}
	var buf bytes.Buffer
	for i, j := range jobs {
		b, err := jobfile.EncodeYAML(j.GetSpec())
		if err != nil {
			return err
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func writeJobTable(w io.Writer, jobs []*pb.Job) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "NAME\tSCHEDULE\tTIMEZONE\tTARGET\tPAUSED\tGENERATION\tVERSION")
	for _, j := range jobs {
		s := j.GetSpec()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\n",
			s.GetName(), scheduleText(s), s.GetTimezone(), target(s), paused(s), j.GetGeneration(), j.GetVersion())
	}
	return tw.Flush()
}

// scheduleText is a job's schedule, or its schedules one after another.
func scheduleText(s *pb.JobSpec) string {
	if specs := s.GetSchedules(); len(specs) > 0 {
		return strings.Join(specs, " | ")
	}
	return s.GetSchedule()
}

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
}

// maxTargetWidth keeps a long URL or command line from wrapping the table.
const maxTargetWidth = 60

func target(s *pb.JobSpec) string {
	var t string
	switch {
	case s.GetHttp() != nil:
		t = "http " + s.GetHttp().GetMethod() + " " + s.GetHttp().GetUrl()
	case s.GetExec() != nil:
		t = "exec " + strings.Join(quoteArgs(s.GetExec().GetCommand()), " ")
	case s.GetWorker().GetHandler() != "":
		t = "worker " + s.GetWorker().GetPool() + " handler " + s.GetWorker().GetHandler()
	case s.GetWorker() != nil:
		t = "worker " + s.GetWorker().GetPool() + " " + strings.Join(quoteArgs(s.GetWorker().GetCommand()), " ")
	case s.GetCheckin() != nil:
		t = "checkin within " + s.GetExpect().GetStartWithin().AsDuration().String()
	default:
		t = "-"
	}
	if r := []rune(t); len(r) > maxTargetWidth {
		t = string(r[:maxTargetWidth-1]) + "…"
	}
	return t
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"'") {
			a = strconv.Quote(a)
		}
		out[i] = a
	}
	return out
}

func paused(s *pb.JobSpec) string {
	switch {
	case !s.GetPaused():
		return "no"
	case s.GetPauseNote() != "":
		return "yes: " + s.GetPauseNote()
	default:
		return "yes"
	}
}

// change is what a write command did to one job.
type change struct {
	// Kind is what changed, "job" when empty.
	Kind       string `json:"-"`
	Name       string `json:"name"`
	Result     string `json:"result"`
	Version    uint64 `json:"version,omitempty"`
	Generation uint64 `json:"generation,omitempty"`
}

func changeOf(job *pb.Job, result string) change {
	return change{Name: job.GetSpec().GetName(), Result: result, Version: job.GetVersion(), Generation: job.GetGeneration()}
}

// writeChanges prints one line per job in table format, else an array.
func writeChanges(w io.Writer, format outputFormat, changes []change) error {
	switch format {
	case outputJSON:
		return writeJSON(w, changes)
	case outputYAML:
		return writeYAML(w, changes)
	}
	for _, c := range changes {
		kind := c.Kind
		if kind == "" {
			kind = "job"
		}
		line := fmt.Sprintf("%s %s %s", kind, c.Name, c.Result)
		if c.Version != 0 {
			line += fmt.Sprintf(" (version %d)", c.Version)
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func writeYAML(w io.Writer, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// writeStatus prints `cluster status`; as JSON or YAML it is the ops
// port's /status document.
func writeStatus(w io.Writer, format outputFormat, s *pb.NodeStatus) error {
	st := ops.StatusOf(s)
	switch format {
	case outputJSON:
		return writeJSON(w, st)
	case outputYAML:
		return writeYAML(w, st)
	}
	leader := "none"
	if st.Leader.ID != "" || st.Leader.Address != "" {
		leader = st.Leader.ID + " (" + st.Leader.Address + ")"
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "NODE\tSTATE\tLEADER\tTERM\tCOMMIT\tAPPLIED\tLAST-LOG\tFENCING-TOKEN\tCLUSTER-VERSION\tCOMMAND-VERSION")
	fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n",
		st.ID, st.State, leader, st.Term, st.CommitIndex, st.AppliedIndex, st.LastLogIndex, st.FencingToken,
		st.ClusterVersion, st.CommandVersion)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = newTable(w)
	fmt.Fprintln(tw, "SERVER\tADDRESS\tSUFFRAGE\tLEADER\tCONTACT")
	for _, sv := range st.Servers {
		mark := ""
		if sv.Leader {
			mark = "*"
		}
		contact := orDash(sv.Contact)
		if sv.LastContact != "" {
			contact += " (last contact " + sv.LastContact + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", sv.ID, sv.Address, sv.Suffrage, mark, contact)
	}
	return tw.Flush()
}
