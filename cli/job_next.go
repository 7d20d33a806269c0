package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/raftcron/raftcron/jobspec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/schedule"
)

// maxNextCount is the server's cap on previewed fire times.
const maxNextCount = 100

func newJobNextCmd(o *clientOptions) *cobra.Command {
	var (
		count    int
		spec     string
		timezone string
		after    string
	)
	cmd := &cobra.Command{
		Use:   "next (NAME | --schedule SPEC [--timezone TZ])",
		Short: "Show the next fire times of a job, or of a schedule before registering it",
		Long: "Show the next fire times of a registered job (after its cursor, within its\n" +
			"start_at/end_at; a pause is not taken into account), each with the calendar or\n" +
			"freeze that stops it as things stand (table output), or of an inline --schedule\n" +
			"in --timezone, checked by the rules a job file's schedule must pass.",
		Args: cobra.MaximumNArgs(1),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			req, err := nextRequest(args, spec, timezone, after, count, cmd.Flags().Changed("timezone"))
			if err != nil {
				return err
			}
			client, done, err := o.jobClient()
			if err != nil {
				return err
			}
			defer done()
			subject := fmt.Sprintf("schedule %q", spec)
			var job *pb.JobSpec
			if req.GetName() != "" {
				subject = jobSubject(req.GetName())
				ctx, cancel := o.callContext(cmd.Context())
				resp, err := client.GetJob(ctx, &pb.GetJobRequest{Name: req.GetName()})
				cancel()
				if err != nil {
					return o.call(subject).describe(err)
				}
				job = resp.GetJob().GetSpec()
				timezone = job.GetTimezone()
			}
			preview := &pb.PreviewScheduleResponse{}
			if job == nil || jobspec.HasSchedule(job) {
				ctx, cancel := o.callContext(cmd.Context())
				defer cancel()
				if preview, err = client.PreviewSchedule(ctx, req); err != nil {
					return o.call(subject).describe(err)
				}
			}
			if o.output == outputTable && len(job.GetAfter()) > 0 {
				return writeDependentNext(cmd.OutOrStdout(), job, preview)
			}
			return writeFireTimes(cmd.OutOrStdout(), o.output, preview.GetTimes(), skips(preview), timezone)
		}),
	}
	cmd.Flags().IntVar(&count, "count", 5, fmt.Sprintf("how many fire times (1-%d)", maxNextCount))
	cmd.Flags().StringVar(&spec, "schedule", "", "an inline schedule instead of a job name")
	cmd.Flags().StringVar(&timezone, "timezone", "", "IANA zone of --schedule (default UTC)")
	cmd.Flags().StringVar(&after, "after", "", "list fire times after this RFC 3339 time (default now)")
	return cmd
}

// nextRequest checks the flags of `job next`: usage errors, before any call.
func nextRequest(args []string, spec, timezone, after string, count int, zoneSet bool) (*pb.PreviewScheduleRequest, error) {
	if count < 1 || count > maxNextCount {
		return nil, Usagef("--count: must be between 1 and %d, got %d", maxNextCount, count)
	}
	req := &pb.PreviewScheduleRequest{Count: uint32(count), Schedule: spec, Timezone: timezone}
	switch {
	case len(args) == 1 && spec != "":
		return nil, Usagef("give a job NAME or --schedule, not both")
	case len(args) == 1:
		if zoneSet {
			return nil, Usagef("--timezone: only with --schedule (a registered job has its own)")
		}
		req.Name = args[0]
	case strings.TrimSpace(spec) == "":
		return nil, Usagef("give a job NAME or --schedule SPEC")
	}
	if after != "" {
		t, err := time.Parse(time.RFC3339, after)
		if err != nil {
			return nil, Usagef("--after: %q is not an RFC 3339 time like 2026-12-01T00:00:00Z", after)
		}
		req.After = timestamppb.New(t)
	}
	return req, nil
}

// skips is what stops each previewed time ("" where nothing does), or nil
// when nothing stops any.
func skips(resp *pb.PreviewScheduleResponse) []string {
	out := make([]string, len(resp.GetTimes()))
	any := false
	for i, s := range resp.GetSlots() {
		if i < len(out) && s.GetSkipped() != "" {
			out[i], any = s.GetSkipped(), true
		}
	}
	if !any {
		return nil
	}
	return out
}

// writeDependentNext is `job next` of a job that runs after others: what
// it waits for ("after export-orders, export-customers"), and, with a
// schedule of its own, the slots that fire if it is met by then.
func writeDependentNext(w io.Writer, spec *pb.JobSpec, preview *pb.PreviewScheduleResponse) error {
	words := "after " + dependencyWords(specEdges(spec), enumName(spec.GetAfterMode().String(), "AFTER_MODE_"))
	if !jobspec.HasSchedule(spec) {
		_, err := fmt.Fprintln(w, words)
		return err
	}
	if d := spec.GetAfterWithin(); d != nil && d.AsDuration() > 0 {
		words += " within " + d.AsDuration().String()
	}
	if err := writeFireTimes(w, outputTable, preview.GetTimes(), skips(preview), spec.GetTimezone()); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "each fires only %s; else it is skipped (dependency_not_met)\n", words)
	return err
}

// writeFireTimes prints fire times: UTC, and in the job's zone when that is
// another one, and what skips each when something does (skipped, nil or
// one per time). JSON and YAML list RFC 3339 times in UTC (the JSON API's
// preview has the skips as well).
func writeFireTimes(w io.Writer, format outputFormat, times []*timestamppb.Timestamp, skipped []string, zone string) error {
	utc := make([]string, len(times))
	for i, ts := range times {
		utc[i] = ts.AsTime().UTC().Format(time.RFC3339)
	}
	switch format {
	case outputJSON:
		return writeJSON(w, utc)
	case outputYAML:
		return writeYAML(w, utc)
	}
	loc, err := schedule.LoadLocation(strings.TrimSpace(zone))
	if err != nil || loc == time.UTC {
		loc = nil
	}
	tw := newTable(w)
	header := "FIRE TIME (UTC)"
	if loc != nil {
		header += fmt.Sprintf("\tFIRE TIME (%s)", loc)
	}
	if skipped != nil {
		header += "\tSKIPPED BY"
	}
	fmt.Fprintln(tw, header)
	for i, ts := range times {
		line := utc[i]
		if loc != nil {
			line += "\t" + ts.AsTime().In(loc).Format(time.RFC3339)
		}
		if skipped != nil {
			line += "\t" + orDash(skipped[i])
		}
		fmt.Fprintln(tw, line)
	}
	if len(times) == 0 {
		fmt.Fprintln(tw, "(never: no fire time ahead)")
	}
	return tw.Flush()
}
