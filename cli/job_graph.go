package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// graphFormat is -o of `job graph`.
type graphFormat string

const (
	graphText graphFormat = "text"
	graphDOT  graphFormat = "dot"
	graphJSON graphFormat = "json"
	graphYAML graphFormat = "yaml"
)

func (g *graphFormat) String() string { return string(*g) }
func (g *graphFormat) Type() string   { return "format" }

// Set takes table as text, so that RAFTCRON_OUTPUT=table, which every
// other command reads, suits this one too.
func (g *graphFormat) Set(s string) error {
	switch f := graphFormat(strings.ToLower(s)); f {
	case graphText, graphDOT, graphJSON, graphYAML:
		*g = f
	case graphFormat(outputTable):
		*g = graphText
	default:
		return fmt.Errorf("%q is not text, dot, json or yaml", s)
	}
	return nil
}

func newJobGraphCmd(o *clientOptions) *cobra.Command {
	format := graphText
	cmd := &cobra.Command{
		Use:   "graph [NAME]",
		Short: "Show which jobs run after which (after): one job's chain, or every chain",
		Long: "Show the dependency graph of the jobs (after): NAME with every job above and\n" +
			"below it, or without NAME every job that has dependencies or dependents. -o dot\n" +
			"writes it for Graphviz (raftcron job graph -o dot | dot -Tsvg > graph.svg), an\n" +
			"arrow from each parent to the job that runs after it. A parent that is not\n" +
			"registered (or outside the token's scope) is shown as missing.",
		Args: cobra.MaximumNArgs(1),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			req := &pb.GetJobGraphRequest{}
			subject := "the job graph"
			if len(args) == 1 {
				req.Name, subject = args[0], jobSubject(args[0])
			}
			conn, err := o.dial()
			if err != nil {
				return err
			}
			defer func() { _ = conn.Close() }()
			ctx, cancel := o.callContext(cmd.Context())
			defer cancel()
			resp, err := pb.NewChainServiceClient(conn).GetJobGraph(ctx, req)
			if err != nil {
				return o.call(subject).describe(err)
			}
			return writeGraph(cmd.OutOrStdout(), format, resp.GetJobs())
		}),
	}
	cmd.Flags().VarP(&format, flagOutput, "o", "output format: text, dot (Graphviz), json or yaml (env RAFTCRON_OUTPUT)")
	return cmd
}

// graphJob is one job of the graph as json and yaml write it.
type graphJob struct {
	Name     string      `json:"name"`
	Missing  bool        `json:"missing,omitempty"`
	Schedule string      `json:"schedule,omitempty"`
	After    []graphEdge `json:"after,omitempty"`
	Mode     string      `json:"after_mode,omitempty"`
	Children []string    `json:"children,omitempty"`
	Paused   bool        `json:"paused,omitempty"`
	LastRun  string      `json:"last_run_id,omitempty"`
	Last     string      `json:"last_outcome,omitempty"`
}

type graphEdge struct {
	Job string `json:"job"`
	On  string `json:"on"`
}

func writeGraph(w io.Writer, format graphFormat, nodes []*pb.JobGraphNode) error {
	switch format {
	case graphDOT:
		return writeDOT(w, nodes)
	case graphJSON, graphYAML:
		jobs := make([]graphJob, len(nodes))
		for i, n := range nodes {
			jobs[i] = graphJob{Name: n.GetName(), Missing: n.GetMissing(), Schedule: n.GetSchedule(),
				After: graphEdges(n), Mode: n.GetAfterMode(), Children: n.GetChildren(), Paused: n.GetPaused(),
				LastRun: n.GetLastRunId(), Last: stateName(n.GetLastOutcome())}
		}
		if format == graphJSON {
			return writeJSON(w, jobs)
		}
		return writeYAML(w, jobs)
	}
	return writeGraphText(w, nodes)
}

// writeGraphText lists the jobs, each with what it runs after.
func writeGraphText(w io.Writer, nodes []*pb.JobGraphNode) error {
	if len(nodes) == 0 {
		_, err := fmt.Fprintln(w, "no job runs after another")
		return err
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "JOB\tRUNS AFTER\tSCHEDULE\tLAST OUTCOME")
	for _, n := range nodes {
		if n.GetMissing() {
			fmt.Fprintf(tw, "%s\t(missing: not registered)\t-\t-\n", n.GetName())
			continue
		}
		after := orDash(dependencyWords(graphEdges(n), n.GetAfterMode()))
		sched := orDash(n.GetSchedule())
		last := orDash(stateName(n.GetLastOutcome()))
		if n.GetPaused() {
			last += " (paused)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", n.GetName(), after, sched, last)
	}
	return tw.Flush()
}

func graphEdges(n *pb.JobGraphNode) []graphEdge {
	out := make([]graphEdge, len(n.GetAfter()))
	for i, e := range n.GetAfter() {
		out[i] = graphEdge{Job: e.GetJob(), On: e.GetOn()}
	}
	return out
}

// specEdges are a spec's dependencies in the job file's words.
func specEdges(spec *pb.JobSpec) []graphEdge {
	out := make([]graphEdge, len(spec.GetAfter()))
	for i, d := range spec.GetAfter() {
		out[i] = graphEdge{Job: d.GetJob(), On: enumName(d.GetOn().String(), "DEPENDENCY_ON_")}
	}
	return out
}

// dependencyWords says what a job runs after: "a, b", "any of a, b", each
// parent with its outcome unless success.
func dependencyWords(edges []graphEdge, mode string) string {
	parts := make([]string, len(edges))
	for i, e := range edges {
		parts[i] = e.Job
		if e.On != "success" {
			parts[i] += " (" + e.On + ")"
		}
	}
	s := strings.Join(parts, ", ")
	if mode == "any" && len(parts) > 1 {
		s = "any of " + s
	}
	return s
}

// writeDOT writes the graph for Graphviz: a box per job (dashed when
// missing), an arrow from each parent to its child labelled with the
// outcome it waits for.
func writeDOT(w io.Writer, nodes []*pb.JobGraphNode) error {
	var b strings.Builder
	b.WriteString("digraph raftcron {\n\trankdir=LR;\n\tnode [shape=box, fontname=\"Helvetica\"];\n")
	for _, n := range nodes {
		label := n.GetName()
		attrs := ""
		switch {
		case n.GetMissing():
			label += `\n(missing)`
			attrs = ", style=dashed"
		default:
			if n.GetSchedule() != "" {
				label += `\n` + dotEscape(n.GetSchedule())
			}
			if n.GetAfterMode() == "any" && len(n.GetAfter()) > 1 {
				label += `\n(after any)`
			}
			if n.GetPaused() {
				attrs = ", style=filled, fillcolor=lightgrey"
			}
		}
		fmt.Fprintf(&b, "\t%q [label=\"%s\"%s];\n", n.GetName(), label, attrs)
	}
	for _, n := range nodes {
		for _, e := range n.GetAfter() {
			fmt.Fprintf(&b, "\t%q -> %q [label=%q];\n", e.GetJob(), n.GetName(), e.GetOn())
		}
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// dotEscape makes s safe inside a double-quoted DOT string.
func dotEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", " ").Replace(s)
}
