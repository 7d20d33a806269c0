package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/raftcron/raftcron/api"
	"github.com/raftcron/raftcron/jobfile"
	"github.com/raftcron/raftcron/jobspec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func newJobCmd() *cobra.Command {
	o := &clientOptions{}
	cmd := groupCmd("job", "Create, change and inspect jobs")
	cmd.PersistentPreRunE = o.persistentResolve()
	o.register(cmd.PersistentFlags())
	cmd.AddCommand(
		newJobApplyCmd(o), newJobCreateCmd(o), newJobGetCmd(o), newJobListCmd(o),
		newJobDeleteCmd(o), newJobPauseCmd(o), newJobResumeCmd(o),
		newJobTriggerCmd(o), newJobNextCmd(o), newJobStatusCmd(o), newJobBackfillCmd(o), newJobGraphCmd(o),
	)
	return cmd
}

// jobClient opens a JobService client for one command.
func (o *clientOptions) jobClient() (pb.JobServiceClient, func(), error) {
	conn, err := o.dial()
	if err != nil {
		return nil, nil, err
	}
	return pb.NewJobServiceClient(conn), func() { _ = conn.Close() }, nil
}

// jobCall dials a JobService client and bounds one call by --timeout; done
// releases both.
func (o *clientOptions) jobCall(parent context.Context) (pb.JobServiceClient, context.Context, func(), error) {
	client, closeConn, err := o.jobClient()
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := o.callContext(parent)
	return client, ctx, func() { cancel(); closeConn() }, nil
}

func jobSubject(name string) string { return fmt.Sprintf("job %q", name) }

func newJobApplyCmd(o *clientOptions) *cobra.Command {
	var file string
	var version uint64
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Create or update the jobs of a file (- reads stdin)",
		Long: "Create or update every job of a YAML or JSON job file; a job whose spec is\n" +
			"unchanged stays as it is. With --version the file must hold one job, which must\n" +
			"exist at that version (optimistic concurrency).",
		Args: cobra.NoArgs,
		RunE: RunE(func(cmd *cobra.Command, _ []string) error {
			specs, err := readJobFile(cmd, file)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("version") {
				if len(specs) != 1 {
					return fmt.Errorf("--version: the file must hold exactly one job, it holds %d", len(specs))
				}
				return updateJob(cmd, o, specs[0], version)
			}
			return applyJobs(cmd, o, specs)
		}),
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "job file (YAML or JSON; - for stdin)")
	cmd.Flags().Uint64Var(&version, "version", 0, "update only if the job is at this version")
	return cmd
}

// applyJobs applies a file's jobs and prints what changed, in file order.
// Several jobs go in ApplyJobs calls of up to api.MaxApplyJobs; a server
// without ApplyJobs gets one ApplyJob per job. On the first failure the
// changes made so far are printed and nothing more is sent.
func applyJobs(cmd *cobra.Command, o *clientOptions, specs []*pb.JobSpec) error {
	client, done, err := o.jobClient()
	if err != nil {
		return err
	}
	defer done()
	var changes []change
	if len(specs) > 1 {
		changes, specs, err = applyInBulk(cmd.Context(), o, client, specs)
		if err != nil {
			_ = writeChanges(cmd.OutOrStdout(), o.output, changes)
			return err
		}
	}
	for _, spec := range specs {
		ctx, cancel := o.callContext(cmd.Context())
		resp, err := client.ApplyJob(ctx, &pb.ApplyJobRequest{Spec: spec})
		cancel()
		if err != nil {
			_ = writeChanges(cmd.OutOrStdout(), o.output, changes)
			return o.call(jobSubject(spec.GetName())).describe(err)
		}
		changes = append(changes, changeOf(resp.GetJob(), applyResult(resp.GetCreated(), resp.GetChanged())))
	}
	return writeChanges(cmd.OutOrStdout(), o.output, changes)
}

// applyInBulk sends specs in ApplyJobs calls. It returns the changes made
// and, when the server has no ApplyJobs, the specs still to apply one by
// one. A spec that failed stops the apply after its call; every spec of
// that call that was applied is among the changes.
func applyInBulk(parent context.Context, o *clientOptions, client pb.JobServiceClient, specs []*pb.JobSpec) ([]change, []*pb.JobSpec, error) {
	var changes []change
	for off := 0; off < len(specs); off += api.MaxApplyJobs {
		part := specs[off:min(off+api.MaxApplyJobs, len(specs))]
		ctx, cancel := o.callContext(parent)
		resp, err := client.ApplyJobs(ctx, &pb.ApplyJobsRequest{Specs: part})
		cancel()
		if status.Code(err) == codes.Unimplemented && off == 0 {
			return nil, specs, nil
		}
		if err != nil {
			return changes, nil, o.call(partSubject(off, len(part), len(specs))).describe(err)
		}
		if len(resp.GetResults()) != len(part) {
			return changes, nil, fmt.Errorf("the server answered %d results for %d jobs", len(resp.GetResults()), len(part))
		}
		var failed []int
		for i, r := range resp.GetResults() {
			if r.GetCode() != int32(codes.OK) {
				failed = append(failed, i)
				continue
			}
			changes = append(changes, changeOf(r.GetJob(), applyResult(r.GetCreated(), r.GetChanged())))
		}
		if len(failed) > 0 {
			return changes, nil, bulkFailure(o, part, resp.GetResults(), failed)
		}
	}
	return changes, nil, nil
}

// partSubject names the jobs of one ApplyJobs call in an error; the
// server's messages number them from 0 within the call (specs[i]).
func partSubject(off, n, total int) string {
	if n == total {
		return "jobs"
	}
	return fmt.Sprintf("jobs %d-%d of the file (numbered from 0 as specs[i] below)", off+1, off+n)
}

// bulkFailure describes the first spec of a call that failed, as a
// failed ApplyJob of it would be, and counts the others.
func bulkFailure(o *clientOptions, part []*pb.JobSpec, results []*pb.ApplyJobsResult, failed []int) error {
	first := results[failed[0]]
	err := o.call(jobSubject(part[failed[0]].GetName())).describe(status.Error(codes.Code(first.GetCode()), first.GetMessage()))
	if len(failed) > 1 {
		return fmt.Errorf("%w (and %d more jobs failed)", err, len(failed)-1)
	}
	return err
}

func applyResult(created, changed bool) string {
	switch {
	case created:
		return "created"
	case changed:
		return "updated"
	}
	return "unchanged"
}

func updateJob(cmd *cobra.Command, o *clientOptions, spec *pb.JobSpec, version uint64) error {
	client, done, err := o.jobClient()
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := o.callContext(cmd.Context())
	defer cancel()
	resp, err := client.UpdateJob(ctx, &pb.UpdateJobRequest{Spec: spec, ExpectedVersion: version})
	if err != nil {
		c := o.call(jobSubject(spec.GetName()))
		c.expectedVersion = version
		return c.describe(err)
	}
	result := "updated"
	if resp.GetJob().GetVersion() == version {
		result = "unchanged"
	}
	return writeChanges(cmd.OutOrStdout(), o.output, []change{changeOf(resp.GetJob(), result)})
}

func newJobCreateCmd(o *clientOptions) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "create -f FILE",
		Short: "Create the jobs of a file; fails if a name is taken",
		Args:  cobra.NoArgs,
		RunE: RunE(func(cmd *cobra.Command, _ []string) error {
			specs, err := readJobFile(cmd, file)
			if err != nil {
				return err
			}
			client, done, err := o.jobClient()
			if err != nil {
				return err
			}
			defer done()
			var changes []change
			for _, spec := range specs {
				ctx, cancel := o.callContext(cmd.Context())
				resp, err := client.CreateJob(ctx, &pb.CreateJobRequest{Spec: spec})
				cancel()
				if err != nil {
					_ = writeChanges(cmd.OutOrStdout(), o.output, changes)
					return o.call(jobSubject(spec.GetName())).describe(err)
				}
				changes = append(changes, changeOf(resp.GetJob(), "created"))
			}
			return writeChanges(cmd.OutOrStdout(), o.output, changes)
		}),
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "job file (YAML or JSON; - for stdin)")
	return cmd
}

// readJobFile decodes -f. A file of several jobs is validated whole before
// anything is sent, so that one bad job leaves the others untouched too.
func readJobFile(cmd *cobra.Command, file string) ([]*pb.JobSpec, error) {
	if file == "" {
		return nil, Usagef("-f: required (a job file, or - for stdin)")
	}
	data, name, err := readInput(cmd.InOrStdin(), file)
	if err != nil {
		return nil, err
	}
	specs, err := jobfile.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(specs) > 1 {
		if err := precheck(specs, time.Now()); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return specs, nil
}

// maxJobFileSize bounds what we read from a file or stdin.
const maxJobFileSize = 16 << 20

func readInput(stdin io.Reader, file string) (data []byte, name string, err error) {
	if file == "-" {
		data, err = io.ReadAll(io.LimitReader(stdin, maxJobFileSize+1))
		name = "stdin"
	} else {
		name = file
		var f *os.File
		if f, err = os.Open(file); err == nil {
			data, err = io.ReadAll(io.LimitReader(f, maxJobFileSize+1))
			_ = f.Close()
		}
	}
	if err != nil {
		return nil, name, fmt.Errorf("-f: %w", err)
	}
	if len(data) > maxJobFileSize {
		return nil, name, fmt.Errorf("-f %s: larger than %d MiB", name, maxJobFileSize>>20)
	}
	return data, name, nil
}

// precheck runs the server's own validation over every job of a file and
// refuses duplicate names, before any of them is sent.
func precheck(specs []*pb.JobSpec, now time.Time) error {
	seen := make(map[string]bool, len(specs))
	for i, spec := range specs {
		if seen[spec.GetName()] {
			return fmt.Errorf("jobs[%d].name: %q appears more than once in the file", i, spec.GetName())
		}
		seen[spec.GetName()] = true
		clone := proto.Clone(spec).(*pb.JobSpec)
		jobspec.Normalize(clone)
		if err := jobspec.Validate(clone, now); err != nil {
			return describeValidation(spec.GetName(), err)
		}
	}
	return nil
}

func describeValidation(name string, err error) error {
	var ve *jobspec.ValidationError
	if !errors.As(err, &ve) || len(ve.Violations) == 0 {
		return fmt.Errorf("invalid %s: %w", jobSubject(name), err)
	}
	rules := make([]string, len(ve.Violations))
	for i, v := range ve.Violations {
		rules[i] = formatViolation(v.Field, v.Rule)
	}
	return fmt.Errorf("invalid %s: %s", jobSubject(name), strings.Join(rules, "; "))
}

func newJobGetCmd(o *clientOptions) *cobra.Command {
	var stale bool
	cmd := &cobra.Command{
		Use:   "get NAME",
		Short: "Show a job (-o yaml prints a job file that applies back unchanged)",
		Args:  cobra.ExactArgs(1),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			client, ctx, done, err := o.jobCall(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			resp, err := client.GetJob(ctx, &pb.GetJobRequest{Name: args[0], Stale: stale})
			if err != nil {
				return o.call(jobSubject(args[0])).describe(err)
			}
			return writeJob(cmd.OutOrStdout(), o.output, resp.GetJob())
		}),
	}
	cmd.Flags().BoolVar(&stale, "stale", false, "read this node's state, which may lag the leader")
	return cmd
}

func newJobListCmd(o *clientOptions) *cobra.Command {
	var (
		labels []string
		limit  int
		stale  bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List jobs, sorted by name",
		Args:  cobra.NoArgs,
		RunE: RunE(func(cmd *cobra.Command, _ []string) error {
			selector, err := parseLabels(labels)
			if err != nil {
				return err
			}
			if limit < 0 {
				return Usagef("--limit: must not be negative")
			}
			jobs, err := listJobs(cmd, o, selector, limit, stale)
			if err != nil {
				return err
			}
			return writeJobList(cmd.OutOrStdout(), o.output, jobs)
		}),
	}
	cmd.Flags().StringArrayVarP(&labels, "label", "l", nil, "only jobs with this label (k=v, repeatable)")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many jobs (0: all)")
	cmd.Flags().BoolVar(&stale, "stale", false, "read this node's state, which may lag the leader")
	return cmd
}

func parseLabels(labels []string) (map[string]string, error) {
	if len(labels) == 0 {
		return nil, nil
	}
	selector := make(map[string]string, len(labels))
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, Usagef("--label: %q is not key=value", l)
		}
		selector[k] = v
	}
	return selector, nil
}

// listPageSize is the page we ask for; the server caps pages at 1000.
const listPageSize = 500

func listJobs(cmd *cobra.Command, o *clientOptions, selector map[string]string, limit int, stale bool) ([]*pb.Job, error) {
	client, done, err := o.jobClient()
	if err != nil {
		return nil, err
	}
	defer done()
	jobs := []*pb.Job{}
	token := ""
	for {
		size := listPageSize
		if limit > 0 {
			size = min(size, limit-len(jobs))
		}
		ctx, cancel := o.callContext(cmd.Context())
		resp, err := client.ListJobs(ctx, &pb.ListJobsRequest{
			PageSize: uint32(size), PageToken: token, LabelSelector: selector, Stale: stale,
		})
		cancel()
		if err != nil {
			return nil, o.call("").describe(err)
		}
		jobs = append(jobs, resp.GetJobs()...)
		next := resp.GetNextPageToken()
		if next == "" || (limit > 0 && len(jobs) >= limit) {
			break
		}
		// A token that does not advance would loop forever. A page may be
		// short, even empty, and still carry a token: the server looks at
		// a bounded part of the registry per call.
		if next == token {
			return nil, fmt.Errorf("list: the server returned page token %q again", next)
		}
		token = next
	}
	if limit > 0 && len(jobs) > limit {
		jobs = jobs[:limit]
	}
	return jobs, nil
}

func newJobDeleteCmd(o *clientOptions) *cobra.Command {
	var (
		version uint64
		force   bool
	)
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a job",
		Long: "Delete a job. A job other jobs run after (after) is deleted only with --force:\n" +
			"their dependency on it then reads as never met, until a job of that name runs.",
		Args: cobra.ExactArgs(1),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			client, ctx, done, err := o.jobCall(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			if _, err := client.DeleteJob(ctx, &pb.DeleteJobRequest{Name: args[0], ExpectedVersion: version, Force: force}); err != nil {
				c := o.call(jobSubject(args[0]))
				c.expectedVersion = version
				return c.describe(err)
			}
			return writeChanges(cmd.OutOrStdout(), o.output, []change{{Name: args[0], Result: "deleted"}})
		}),
	}
	cmd.Flags().Uint64Var(&version, "version", 0, "delete only if the job is at this version")
	cmd.Flags().BoolVar(&force, "force", false, "delete even if other jobs run after it")
	return cmd
}

func newJobPauseCmd(o *clientOptions) *cobra.Command {
	var note, until string
	cmd := &cobra.Command{
		Use:   "pause NAME [--until TIME]",
		Short: "Pause a job: it fires no more until resumed, or until TIME",
		Long: "Pause a job: its slots while paused are recorded missed (paused) and not caught up.\n" +
			"With --until (RFC 3339, or a duration from now such as 2h) the cluster resumes it\n" +
			"then by itself, and the job's catch-up policy decides the slots inside the pause,\n" +
			"as after an outage: those still inside the catch-up window fire.",
		Args: cobra.ExactArgs(1),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			req := &pb.PauseJobRequest{Name: args[0], Note: note}
			if until != "" {
				t, err := timeFlag("until", until, time.Now())
				if err != nil {
					return err
				}
				req.Until = timestamppb.New(t)
			}
			client, ctx, done, err := o.jobCall(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			resp, err := client.PauseJob(ctx, req)
			if err != nil {
				return o.call(jobSubject(args[0])).describe(err)
			}
			return writeChanges(cmd.OutOrStdout(), o.output, []change{changeOf(resp.GetJob(), "paused")})
		}),
	}
	cmd.Flags().StringVar(&note, "note", "", "why the job is paused (shown by get)")
	cmd.Flags().StringVar(&until, "until", "", "resume by itself at this RFC 3339 time, or after this duration (2h)")
	return cmd
}

// timeFlag reads a time flag: RFC 3339, or a Go duration counted from now.
func timeFlag(flag, v string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return now.Add(d), nil
	}
	return time.Time{}, Usagef("--%s: %q is neither an RFC 3339 time (2026-12-24T18:00:00Z) nor a duration from now (2h)", flag, v)
}

func newJobResumeCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "resume NAME",
		Short: "Resume a paused job",
		Args:  cobra.ExactArgs(1),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			client, ctx, done, err := o.jobCall(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			resp, err := client.ResumeJob(ctx, &pb.ResumeJobRequest{Name: args[0]})
			if err != nil {
				return o.call(jobSubject(args[0])).describe(err)
			}
			return writeChanges(cmd.OutOrStdout(), o.output, []change{changeOf(resp.GetJob(), "resumed")})
		}),
	}
}
