package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/raftcron/raftcron/jobfile"
	"github.com/raftcron/raftcron/jobspec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func newChannelCmd() *cobra.Command {
	o := &clientOptions{}
	cmd := groupCmd("channel", "Manage the channels alert notifications go to (webhook, slack, pagerduty, email)")
	cmd.PersistentPreRunE = o.persistentResolve()
	o.register(cmd.PersistentFlags())
	cmd.AddCommand(newChannelApplyCmd(o), newChannelListCmd(o), newChannelGetCmd(o), newChannelDeleteCmd(o), newChannelTestCmd(o))
	return cmd
}

func channelCall[T any](cmd *cobra.Command, o *clientOptions, subject string,
	fn func(context.Context, pb.ChannelServiceClient) (T, error)) (T, error) {
	return unaryCall(cmd, o, subject, pb.NewChannelServiceClient, fn)
}

func alertCall[T any](cmd *cobra.Command, o *clientOptions, subject string,
	fn func(context.Context, pb.AlertServiceClient) (T, error)) (T, error) {
	return unaryCall(cmd, o, subject, pb.NewAlertServiceClient, fn)
}

// readObjects decodes -f as a file of noun objects, each checked by
// validate before anything is sent.
func readObjects[T proto.Message](cmd *cobra.Command, file, noun string, newMsg func() T, validate func(T) error) ([]T, error) {
	if file == "" {
		return nil, Usagef("-f: required (a %s file, or - for stdin)", noun)
	}
	data, name, err := readInput(cmd.InOrStdin(), file)
	if err != nil {
		return nil, err
	}
	msgs, err := jobfile.DecodeAs(data, noun, newMsg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for _, m := range msgs {
		if err := validate(m); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return msgs, nil
}

// applied says what a write did.
func applied(w io.Writer, noun, name string, created, changed bool) error {
	what := "unchanged"
	switch {
	case created:
		what = "created"
	case changed:
		what = "updated"
	}
	_, err := fmt.Fprintf(w, "%s %s %s\n", noun, name, what)
	return err
}

func newChannelApplyCmd(o *clientOptions) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Create or update the channels of a file (one or a list; - for stdin)",
		Args:  cobra.NoArgs,
		RunE: RunE(func(cmd *cobra.Command, _ []string) error {
			chans, err := readObjects(cmd, file, "channel", func() *pb.Channel { return &pb.Channel{} }, func(c *pb.Channel) error { return jobspec.ValidateChannel(c) })
			if err != nil {
				return err
			}
			for _, ch := range chans {
				resp, err := channelCall(cmd, o, fmt.Sprintf("channel %q", ch.GetName()), func(ctx context.Context, c pb.ChannelServiceClient) (*pb.ApplyChannelResponse, error) {
					return c.ApplyChannel(ctx, &pb.ApplyChannelRequest{Channel: ch})
				})
				if err != nil {
					return err
				}
				if err := applied(cmd.OutOrStdout(), "channel", ch.GetName(), resp.GetCreated(), resp.GetChanged()); err != nil {
					return err
				}
			}
			return nil
		}),
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "channel file (YAML or JSON; - for stdin)")
	return cmd
}

func newChannelListCmd(o *clientOptions) *cobra.Command {
	var stale bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the channels by name",
		Args:  cobra.NoArgs,
		RunE: RunE(func(cmd *cobra.Command, _ []string) error {
			resp, err := channelCall(cmd, o, "", func(ctx context.Context, c pb.ChannelServiceClient) (*pb.ListChannelsResponse, error) {
				return c.ListChannels(ctx, &pb.ListChannelsRequest{Stale: stale})
			})
			if err != nil {
				return err
			}
			if o.output != outputTable {
				return writeFileForm(cmd.OutOrStdout(), o.output, resp.GetChannels()...)
			}
			tw := newTable(cmd.OutOrStdout())
			fmt.Fprintln(tw, "NAME\tTYPE\tLABELS\tVERSION\tUPDATED_BY")
			for _, ch := range resp.GetChannels() {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", ch.GetName(), channelType(ch), selectorText(ch.GetLabels()), ch.GetVersion(), ch.GetUpdatedBy())
			}
			return tw.Flush()
		}),
	}
	cmd.Flags().BoolVar(&stale, "stale", false, "read this node's state without the leader's read barrier")
	return cmd
}

func channelType(ch *pb.Channel) string {
	switch {
	case ch.GetWebhook() != nil:
		return "webhook"
	case ch.GetSlack() != nil:
		return "slack"
	case ch.GetPagerduty() != nil:
		return "pagerduty"
	case ch.GetEmail() != nil:
		return "email"
	}
	return ""
}

func newChannelGetCmd(o *clientOptions) *cobra.Command {
	var stale bool
	cmd := &cobra.Command{
		Use:   "get NAME",
		Short: "Show a channel in the channel file's form (it applies back unchanged)",
		Args:  cobra.ExactArgs(1),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			resp, err := channelCall(cmd, o, fmt.Sprintf("channel %q", args[0]), func(ctx context.Context, c pb.ChannelServiceClient) (*pb.GetChannelResponse, error) {
				return c.GetChannel(ctx, &pb.GetChannelRequest{Name: args[0], Stale: stale})
			})
			if err != nil {
				return err
			}
			return writeFileForm(cmd.OutOrStdout(), o.output, resp.GetChannel())
		}),
	}
	cmd.Flags().BoolVar(&stale, "stale", false, "read this node's state without the leader's read barrier")
	return cmd
}

// writeFileForm prints messages in the file's YAML form (table and yaml)
// or as proto JSON, one object for one, a list for more.
func writeFileForm[T proto.Message](w io.Writer, format outputFormat, msgs ...T) error {
	if format == outputJSON {
		items := make([]string, len(msgs))
		for i, m := range msgs {
			b, err := protojson.MarshalOptions{UseProtoNames: true, Indent: "  "}.Marshal(m)
			if err != nil {
				return err
			}
			items[i] = string(b)
		}
		out := "[" + strings.Join(items, ",\n") + "]"
		if len(msgs) == 1 {
			out = items[0]
		}
		_, err := fmt.Fprintln(w, out)
		return err
	}
	if len(msgs) == 0 {
		return nil
	}
	b, err := jobfile.EncodeYAMLAs(msgs...)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func newChannelDeleteCmd(o *clientOptions) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a channel; refused while jobs or notify rules name it, unless --force",
		Args:  cobra.ExactArgs(1),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			resp, err := channelCall(cmd, o, fmt.Sprintf("channel %q", args[0]), func(ctx context.Context, c pb.ChannelServiceClient) (*pb.DeleteChannelResponse, error) {
				return c.DeleteChannel(ctx, &pb.DeleteChannelRequest{Name: args[0], Force: force})
			})
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(cmd.OutOrStdout(), "channel %s deleted\n", args[0]); err != nil {
				return err
			}
			if users := resp.GetReferencedBy(); len(users) > 0 {
				_, err = fmt.Fprintf(cmd.ErrOrStderr(), "%s name it: their notifications to it fail until they change\n", strings.Join(users, ", "))
			}
			return err
		}),
	}
	cmd.Flags().BoolVar(&force, "force", false, "delete even if jobs or notify rules name it")
	return cmd
}

func newChannelTestCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "test NAME",
		Short: "Have the leader send a test notification and show the receiver's answer (exit 1 if it refused)",
		Args:  cobra.ExactArgs(1),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			resp, err := channelCall(cmd, o, fmt.Sprintf("channel %q", args[0]), func(ctx context.Context, c pb.ChannelServiceClient) (*pb.TestChannelResponse, error) {
				return c.TestChannel(ctx, &pb.TestChannelRequest{Name: args[0]})
			})
			if err != nil {
				return err
			}
			if o.output != outputTable {
				return writeFileForm(cmd.OutOrStdout(), o.output, resp)
			}
			if !resp.GetOk() {
				return fmt.Errorf("channel %s refused the test notification %s: %s", args[0], resp.GetId(), resp.GetAnswer())
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "channel %s took test notification %s: %s\n", args[0], resp.GetId(), resp.GetAnswer())
			return err
		}),
	}
}

func newNotifyCmd() *cobra.Command {
	o := &clientOptions{}
	cmd := groupCmd("notify", "Manage cluster-wide notify rules")
	rule := groupCmd("rule", "Notify rules: a job file's notify entry for every job a selector matches")
	cmd.PersistentPreRunE = o.persistentResolve()
	o.register(cmd.PersistentFlags())
	rule.AddCommand(newRuleApplyCmd(o), newRuleListCmd(o), newRuleDeleteCmd(o))
	cmd.AddCommand(rule)
	return cmd
}

func newRuleApplyCmd(o *clientOptions) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Create or update the notify rules of a file (one or a list; - for stdin)",
		Args:  cobra.NoArgs,
		RunE: RunE(func(cmd *cobra.Command, _ []string) error {
			rules, err := readObjects(cmd, file, "notify rule", func() *pb.NotifyRule { return &pb.NotifyRule{} }, func(r *pb.NotifyRule) error { return jobspec.ValidateNotifyRule(r) })
			if err != nil {
				return err
			}
			for _, r := range rules {
				resp, err := alertCall(cmd, o, fmt.Sprintf("notify rule %q", r.GetName()), func(ctx context.Context, c pb.AlertServiceClient) (*pb.ApplyNotifyRuleResponse, error) {
					return c.ApplyNotifyRule(ctx, &pb.ApplyNotifyRuleRequest{Rule: r})
				})
				if err != nil {
					return err
				}
				if err := applied(cmd.OutOrStdout(), "notify rule", r.GetName(), resp.GetCreated(), resp.GetChanged()); err != nil {
					return err
				}
			}
			return nil
		}),
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "notify rule file (YAML or JSON; - for stdin)")
	return cmd
}

func newRuleListCmd(o *clientOptions) *cobra.Command {
	var stale bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the notify rules by name",
		Args:  cobra.NoArgs,
		RunE: RunE(func(cmd *cobra.Command, _ []string) error {
			resp, err := alertCall(cmd, o, "", func(ctx context.Context, c pb.AlertServiceClient) (*pb.ListNotifyRulesResponse, error) {
				return c.ListNotifyRules(ctx, &pb.ListNotifyRulesRequest{Stale: stale})
			})
			if err != nil {
				return err
			}
			if o.output != outputTable {
				return writeFileForm(cmd.OutOrStdout(), o.output, resp.GetRules()...)
			}
			tw := newTable(cmd.OutOrStdout())
			fmt.Fprintln(tw, "NAME\tSELECTOR\tCHANNEL\tON\tAFTER_FAILURES\tREPEAT")
			for _, r := range resp.GetRules() {
				repeat := "-"
				if r.GetRepeat() != nil {
					repeat = r.GetRepeat().AsDuration().String()
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", r.GetName(), selectorText(r.GetSelector()), r.GetChannel(),
					strings.Join(r.GetOn(), ","), r.GetAfterFailures(), repeat)
			}
			return tw.Flush()
		}),
	}
	cmd.Flags().BoolVar(&stale, "stale", false, "read this node's state without the leader's read barrier")
	return cmd
}

func newRuleDeleteCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a notify rule",
		Args:  cobra.ExactArgs(1),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			if _, err := alertCall(cmd, o, fmt.Sprintf("notify rule %q", args[0]), func(ctx context.Context, c pb.AlertServiceClient) (*pb.DeleteNotifyRuleResponse, error) {
				return c.DeleteNotifyRule(ctx, &pb.DeleteNotifyRuleRequest{Name: args[0]})
			}); err != nil {
				return err
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "notify rule %s deleted\n", args[0])
			return err
		}),
	}
}

func newAlertCmd() *cobra.Command {
	o := &clientOptions{}
	cmd := groupCmd("alert", "Show the alert notifications the cluster committed")
	cmd.PersistentPreRunE = o.persistentResolve()
	o.register(cmd.PersistentFlags())
	cmd.AddCommand(newAlertListCmd(o))
	return cmd
}

func newAlertListCmd(o *clientOptions) *cobra.Command {
	var job string
	var open, stale bool
	var limit uint32
	cmd := &cobra.Command{
		Use:   "list [--job NAME] [--open]",
		Short: "List alert notifications, newest first, with their delivery and the receiver's last answer",
		Args:  cobra.NoArgs,
		RunE: RunE(func(cmd *cobra.Command, _ []string) error {
			resp, err := alertCall(cmd, o, "", func(ctx context.Context, c pb.AlertServiceClient) (*pb.ListAlertsResponse, error) {
				return c.ListAlerts(ctx, &pb.ListAlertsRequest{Job: job, Open: open, Limit: limit, Stale: stale})
			})
			if err != nil {
				return err
			}
			return writeAlerts(cmd.OutOrStdout(), o.output, resp)
		}),
	}
	cmd.Flags().StringVar(&job, "job", "", "only this job's")
	cmd.Flags().BoolVar(&open, "open", false, "only the alerts of episodes still open")
	cmd.Flags().Uint32Var(&limit, "limit", 0, "at most this many (0: 100, at most 1000)")
	cmd.Flags().BoolVar(&stale, "stale", false, "read this node's state without the leader's read barrier")
	return cmd
}

func writeAlerts(w io.Writer, format outputFormat, resp *pb.ListAlertsResponse) error {
	if format != outputTable {
		b, err := protojson.MarshalOptions{UseProtoNames: true, Indent: "  "}.Marshal(resp)
		if err != nil {
			return err
		}
		if format == outputYAML {
			y, err := yaml.JSONToYAML(b)
			if err != nil {
				return err
			}
			_, err = w.Write(y)
			return err
		}
		_, err = fmt.Fprintln(w, string(b))
		return err
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "TIME\tJOB\tEVENT\tCHANNEL\tDELIVERY\tATTEMPTS\tEPISODE\tID\tANSWER")
	for _, a := range resp.GetAlerts() {
		ev := a.GetEvent()
		if a.GetReminder() > 0 {
			ev += fmt.Sprintf(" (reminder %d)", a.GetReminder())
		}
		answer := ""
		if n := len(a.GetAttempts()); n > 0 {
			answer = a.GetAttempts()[n-1].GetAnswer()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", time.Unix(0, a.GetAtUnixNano()).UTC().Format(time.RFC3339),
			a.GetJob(), ev, a.GetChannel(), strings.ToLower(strings.TrimPrefix(a.GetDelivery().String(), "DELIVERY_STATE_")),
			a.GetAttemptCount(), a.GetEpisode(), a.GetId(), answer)
	}
	return tw.Flush()
}
