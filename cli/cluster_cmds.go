package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func newClusterCmd() *cobra.Command {
	o := &clientOptions{}
	cmd := groupCmd("cluster", "Inspect and change cluster membership")
	cmd.PersistentPreRunE = o.persistentResolve()
	o.register(cmd.PersistentFlags())
	cmd.AddCommand(newClusterStatusCmd(o), newClusterJoinCmd(o), newClusterRemoveCmd(o), newClusterTransferCmd(o))
	return cmd
}

// clusterCall runs one ClusterService call with --timeout.
func clusterCall[T any](cmd *cobra.Command, o *clientOptions, subject string,
	fn func(context.Context, pb.ClusterServiceClient) (T, error)) (T, error) {
	return unaryCall(cmd, o, subject, pb.NewClusterServiceClient, fn)
}

func newClusterStatusCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the answering node's view: its Raft state and the servers",
		Args:  cobra.NoArgs,
		RunE: RunE(func(cmd *cobra.Command, _ []string) error {
			resp, err := clusterCall(cmd, o, "", func(ctx context.Context, c pb.ClusterServiceClient) (*pb.GetStatusResponse, error) {
				return c.GetStatus(ctx, &pb.GetStatusRequest{})
			})
			if err != nil {
				return err
			}
			return writeStatus(cmd.OutOrStdout(), o.output, resp.GetStatus())
		}),
	}
}

func newClusterJoinCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "join ID ADDR",
		Short: "Add the node ID at ADDR as a voter",
		Args:  cobra.ExactArgs(2),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			_, err := clusterCall(cmd, o, fmt.Sprintf("server %q", args[0]), func(ctx context.Context, c pb.ClusterServiceClient) (*pb.AddNodeResponse, error) {
				return c.AddNode(ctx, &pb.AddNodeRequest{Id: args[0], Address: args[1]})
			})
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "server %s at %s added as a voter\n", args[0], args[1])
			return err
		}),
	}
}

func newClusterRemoveCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "remove ID",
		Short: "Remove the node ID from the cluster",
		Args:  cobra.ExactArgs(1),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			_, err := clusterCall(cmd, o, fmt.Sprintf("server %q", args[0]), func(ctx context.Context, c pb.ClusterServiceClient) (*pb.RemoveNodeResponse, error) {
				return c.RemoveNode(ctx, &pb.RemoveNodeRequest{Id: args[0]})
			})
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "server %s removed\n", args[0])
			return err
		}),
	}
}

func newClusterTransferCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "transfer [ID]",
		Short: "Hand leadership to ID, or to the most up-to-date follower",
		Args:  cobra.MaximumNArgs(1),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			id, subject := "", ""
			if len(args) == 1 {
				id, subject = args[0], fmt.Sprintf("server %q", args[0])
			}
			resp, err := clusterCall(cmd, o, subject, func(ctx context.Context, c pb.ClusterServiceClient) (*pb.TransferLeadershipResponse, error) {
				return c.TransferLeadership(ctx, &pb.TransferLeadershipRequest{Id: id})
			})
			if err != nil {
				return err
			}
			l := resp.GetLeader()
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "leadership transferred to %s (%s)\n", l.GetId(), l.GetAddress())
			return err
		}),
	}
}
