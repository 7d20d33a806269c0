package cli

import (
	"github.com/spf13/cobra"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func newJobStatusCmd(o *clientOptions) *cobra.Command {
	var stale bool
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "Show what the scheduler has done with a job (next fire, last run, counters, latest token)",
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
			return writeJobStatus(cmd.OutOrStdout(), o.output, resp.GetJob())
		}),
	}
	cmd.Flags().BoolVar(&stale, "stale", false, "read this node's state, which may lag the leader")
	return cmd
}
