package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func newFreezeCmd() *cobra.Command {
	o := &clientOptions{}
	cmd := groupCmd("freeze", "Manage freezes: windows in which the matching jobs' slots do not fire")
	cmd.PersistentPreRunE = o.persistentResolve()
	o.register(cmd.PersistentFlags())
	cmd.AddCommand(newFreezeCreateCmd(o), newFreezeListCmd(o), newFreezeDeleteCmd(o))
	return cmd
}

func freezeCall[T any](cmd *cobra.Command, o *clientOptions, subject string,
	fn func(context.Context, pb.FreezeServiceClient) (T, error)) (T, error) {
	return unaryCall(cmd, o, subject, pb.NewFreezeServiceClient, fn)
}

func freezeSubject(name string) string { return fmt.Sprintf("freeze %q", name) }

func newFreezeCreateCmd(o *clientOptions) *cobra.Command {
	var from, to, selector, note string
	var deferring bool
	cmd := &cobra.Command{
		Use:   "create NAME --from T --to T [--selector k=v,...] [--note TEXT] [--defer]",
		Short: "Freeze the jobs a selector matches (every job without one) from --from to --to",
		Long: "Create a freeze: the slots of the matching jobs inside [--from, --to) are recorded\n" +
			"skipped (reason freeze:NAME). With --defer the last slot of each job inside it fires\n" +
			"once when the freeze lifts, as a catch-up (jobs whose catch-up policy is all or\n" +
			"latest; none skips it too). Times are RFC 3339. A token with a selector may freeze\n" +
			"only jobs it sees: --selector must include its labels.",
		Args: cobra.ExactArgs(1),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			fr, err := freezeRequest(args[0], from, to, selector, note, deferring)
			if err != nil {
				return err
			}
			resp, err := freezeCall(cmd, o, freezeSubject(args[0]), func(ctx context.Context, c pb.FreezeServiceClient) (*pb.CreateFreezeResponse, error) {
				return c.CreateFreeze(ctx, &pb.CreateFreezeRequest{Freeze: fr})
			})
			if err != nil {
				return err
			}
			return writeFreezes(cmd.OutOrStdout(), o.output, []*pb.Freeze{resp.GetFreeze()})
		}),
	}
	cmd.Flags().StringVar(&from, "from", "", "start, RFC 3339 (2026-12-20T00:00:00Z)")
	cmd.Flags().StringVar(&to, "to", "", "end, RFC 3339; not included")
	cmd.Flags().StringVar(&selector, "selector", "", "k=v,...: only jobs with these labels")
	cmd.Flags().StringVar(&note, "note", "", "why")
	cmd.Flags().BoolVar(&deferring, "defer", false, "fire each job's last slot inside the freeze once it lifts")
	return cmd
}

// freezeRequest checks what only the command line can get wrong; the
// server checks the rest (--from after --to among it).
func freezeRequest(name, from, to, selector, note string, deferring bool) (*pb.Freeze, error) {
	sel, err := parseSelector(selector)
	if err != nil {
		return nil, err
	}
	fr := &pb.Freeze{Name: name, Selector: sel, Note: note, Defer: deferring}
	for _, f := range []struct {
		flag, value string
		into        **timestamppb.Timestamp
	}{{"--from", from, &fr.From}, {"--to", to, &fr.To}} {
		if f.value == "" {
			return nil, Usagef("%s: required (an RFC 3339 time such as 2026-12-20T00:00:00Z)", f.flag)
		}
		t, err := time.Parse(time.RFC3339, f.value)
		if err != nil {
			return nil, Usagef("%s: %q is not an RFC 3339 time such as 2026-12-20T00:00:00Z", f.flag, f.value)
		}
		*f.into = timestamppb.New(t)
	}
	return fr, nil
}

func newFreezeListCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the freezes by name",
		Args:  cobra.NoArgs,
		RunE: RunE(func(cmd *cobra.Command, _ []string) error {
			resp, err := freezeCall(cmd, o, "", func(ctx context.Context, c pb.FreezeServiceClient) (*pb.ListFreezesResponse, error) {
				return c.ListFreezes(ctx, &pb.ListFreezesRequest{})
			})
			if err != nil {
				return err
			}
			return writeFreezes(cmd.OutOrStdout(), o.output, resp.GetFreezes())
		}),
	}
}

func newFreezeDeleteCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a freeze, which lifts it at once",
		Args:  cobra.ExactArgs(1),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			if _, err := freezeCall(cmd, o, freezeSubject(args[0]), func(ctx context.Context, c pb.FreezeServiceClient) (*pb.DeleteFreezeResponse, error) {
				return c.DeleteFreeze(ctx, &pb.DeleteFreezeRequest{Name: args[0]})
			}); err != nil {
				return err
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "freeze %s deleted\n", args[0])
			return err
		}),
	}
}

func writeFreezes(w io.Writer, format outputFormat, freezes []*pb.Freeze) error {
	type view struct {
		Name      string            `json:"name"`
		From      string            `json:"from"`
		To        string            `json:"to"`
		Selector  map[string]string `json:"selector,omitempty"`
		Defer     bool              `json:"defer,omitempty"`
		Note      string            `json:"note,omitempty"`
		CreatedBy string            `json:"created_by,omitempty"`
	}
	views := make([]view, len(freezes))
	for i, f := range freezes {
		views[i] = view{Name: f.GetName(), From: rfc3339(f.GetFrom()), To: rfc3339(f.GetTo()), Selector: f.GetSelector(),
			Defer: f.GetDefer(), Note: f.GetNote(), CreatedBy: f.GetCreatedBy()}
	}
	switch format {
	case outputJSON:
		return writeJSON(w, views)
	case outputYAML:
		return writeYAML(w, views)
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "NAME\tFROM\tTO\tSELECTOR\tDEFER\tNOTE")
	for _, v := range views {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\t%s\n", v.Name, v.From, v.To, selectorText(v.Selector), v.Defer, v.Note)
	}
	return tw.Flush()
}

func rfc3339(ts *timestamppb.Timestamp) string {
	if ts == nil {
		return ""
	}
	return ts.AsTime().UTC().Format(time.RFC3339)
}
