package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// maxRunLimit is the server's cap on listed runs.
const maxRunLimit = 1000

func newRunCmd() *cobra.Command {
	o := &clientOptions{}
	cmd := groupCmd("run", "Inspect the run ledger and cancel runs")
	cmd.PersistentPreRunE = o.persistentResolve()
	o.register(cmd.PersistentFlags())
	cmd.AddCommand(newRunListCmd(o), newRunGetCmd(o), newRunWatchCmd(o), newRunCancelCmd(o))
	return cmd
}

// runClient opens a RunService client for one command.
func (o *clientOptions) runClient() (pb.RunServiceClient, func(), error) {
	conn, err := o.dial()
	if err != nil {
		return nil, nil, err
	}
	return pb.NewRunServiceClient(conn), func() { _ = conn.Close() }, nil
}

func newRunListCmd(o *clientOptions) *cobra.Command {
	var (
		job   string
		kind  string
		limit int
		stale bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first",
		Args:  cobra.NoArgs,
		RunE: RunE(func(cmd *cobra.Command, _ []string) error {
			if limit < 0 || limit > maxRunLimit {
				return Usagef("--limit: must be between 0 and %d (0: the server's default, 20)", maxRunLimit)
			}
			k, err := fireKind(kind)
			if err != nil {
				return err
			}
			runs, err := listRuns(cmd, o, &pb.ListRunsRequest{Job: job, Kind: k, Limit: uint32(limit), Stale: stale})
			if err != nil {
				subject := ""
				if job != "" {
					subject = jobSubject(job)
				}
				return o.call(subject).describe(err)
			}
			return writeRuns(cmd.OutOrStdout(), o.output, runs)
		}),
	}
	cmd.Flags().StringVar(&job, "job", "", "only the runs of this job")
	cmd.Flags().StringVar(&kind, "kind", "", "only the runs of this kind: scheduled, catchup, manual, backfill, ...")
	cmd.Flags().IntVar(&limit, "limit", 0, fmt.Sprintf("at most this many runs (0: 20; at most %d)", maxRunLimit))
	cmd.Flags().BoolVar(&stale, "stale", false, "read this node's state, which may lag the leader")
	return cmd
}

// fireKind reads --kind: a kind's name as runs show it ("backfill").
func fireKind(name string) (pb.FireKind, error) {
	if name == "" {
		return pb.FireKind_FIRE_KIND_UNSPECIFIED, nil
	}
	k, ok := pb.FireKind_value["FIRE_KIND_"+strings.ToUpper(name)]
	if !ok || k == 0 {
		var names []string
		for _, v := range slices.Sorted(maps.Keys(pb.FireKind_name)) {
			if n := kindName(pb.FireKind(v)); n != "" {
				names = append(names, n)
			}
		}
		return 0, Usagef("--kind: %q is not a run kind (%s)", name, strings.Join(names, ", "))
	}
	return pb.FireKind(k), nil
}

// runListPages bounds the pages one run list follows: a token scoped to
// few jobs of a large ledger gets short pages, each the server's bounded
// look at it, and a list should still end.
const runListPages = 100

// listRuns reads pages until it has the request's limit of runs (the
// server's default, 20, when 0) or no page follows.
func listRuns(cmd *cobra.Command, o *clientOptions, req *pb.ListRunsRequest) ([]*pb.Run, error) {
	client, done, err := o.runClient()
	if err != nil {
		return nil, err
	}
	defer done()
	want := int(req.GetLimit())
	if want == 0 {
		want = 20
	}
	runs := []*pb.Run{}
	for range runListPages {
		ctx, cancel := o.callContext(cmd.Context())
		resp, err := client.ListRuns(ctx, req)
		cancel()
		if err != nil {
			return nil, err
		}
		runs = append(runs, resp.GetRuns()...)
		next := resp.GetNextPageToken()
		if next == "" || len(runs) >= want {
			break
		}
		if next == req.GetPageToken() {
			return nil, fmt.Errorf("run list: the server returned page token %q again", next)
		}
		req.PageToken = next
		req.Limit = uint32(want - len(runs))
	}
	return runs[:min(len(runs), want)], nil
}

func newRunGetCmd(o *clientOptions) *cobra.Command {
	var stale bool
	cmd := &cobra.Command{
		Use:   "get ID",
		Short: "Show a run and its attempts",
		Args:  cobra.ExactArgs(1),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			client, done, err := o.runClient()
			if err != nil {
				return err
			}
			defer done()
			ctx, cancel := o.callContext(cmd.Context())
			defer cancel()
			resp, err := client.GetRun(ctx, &pb.GetRunRequest{Id: args[0], Stale: stale})
			if err != nil {
				return o.call(fmt.Sprintf("run %q", args[0])).describe(err)
			}
			return writeRun(cmd.OutOrStdout(), o.output, resp.GetRun())
		}),
	}
	cmd.Flags().BoolVar(&stale, "stale", false, "read this node's state, which may lag the leader")
	return cmd
}

func newRunCancelCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a run in flight through the log and stop its attempt",
		Long: "Cancel an open run: the cancel is committed through Raft, so the run ends as\n" +
			"cancelled on every node and is never re-dispatched or retried, even after a\n" +
			"leader change; the leader stops its attempt (the webhook request is cancelled,\n" +
			"the exec process group killed). A finished run cannot be cancelled.\n" +
			"With ACLs on, it needs a token with the write role.",
		Args: cobra.ExactArgs(1),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			client, done, err := o.runClient()
			if err != nil {
				return err
			}
			defer done()
			ctx, cancel := o.callContext(cmd.Context())
			defer cancel()
			resp, err := client.CancelRun(ctx, &pb.CancelRunRequest{Id: args[0]})
			if st, ok := status.FromError(err); ok && st.Code() == codes.FailedPrecondition {
				return errors.New(st.Message()) // finished, or a voter too old: it says which
			}
			if err != nil {
				return o.call(fmt.Sprintf("run %q", args[0])).describe(err)
			}
			return writeRun(cmd.OutOrStdout(), o.output, resp.GetRun())
		}),
	}
}

func newRunWatchCmd(o *clientOptions) *cobra.Command {
	var job string
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Print runs as the answering node applies their changes, until Ctrl-C",
		Long: "Print one line per run change as the answering node applies it (with -o json,\n" +
			"one JSON object per line), until Ctrl-C. --timeout applies only when given on\n" +
			"the command line; the watch then ends after it with status 0. A watch that falls\n" +
			"behind is ended by the node: list the runs again and start a new watch.",
		Args: cobra.NoArgs,
		RunE: RunE(func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if cmd.Flags().Changed(flagTimeout) {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, o.timeout)
				defer cancel()
			}
			return watchRuns(ctx, o, job, cmd.OutOrStdout())
		}),
	}
	cmd.Flags().StringVar(&job, "job", "", "only the runs of this job")
	return cmd
}

// watchRuns prints changes until ctx ends, which is a normal end.
func watchRuns(ctx context.Context, o *clientOptions, job string, w io.Writer) error {
	client, done, err := o.runClient()
	if err != nil {
		return err
	}
	defer done()
	c := o.call("")
	if job != "" {
		c = o.call(jobSubject(job))
	}
	stream, err := client.WatchRuns(ctx, &pb.WatchRunsRequest{Job: job})
	if err != nil {
		return watchEnd(ctx, c, err)
	}
	for {
		resp, err := stream.Recv()
		if err != nil {
			return watchEnd(ctx, c, err)
		}
		if err := writeWatched(w, o.output, resp.GetRun()); err != nil {
			return err
		}
	}
}

// watchEnd is nil when the watch ended because we ended it. Our deadline
// travels with the stream, and the node's end of it can arrive before our
// own timer has cancelled ctx: a deadline that has passed is ours too.
func watchEnd(ctx context.Context, c call, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return nil
	}
	if errors.Is(err, io.EOF) {
		return errors.New("the node ended the watch")
	}
	if st, ok := status.FromError(err); ok && st.Code() == codes.ResourceExhausted {
		return errors.New(st.Message())
	}
	return c.describe(err)
}
