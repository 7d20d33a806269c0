package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/secret"
)

func newSecretCmd() *cobra.Command {
	o := &clientOptions{}
	cmd := groupCmd("secret", "Manage the secrets job specs reference as ${secret:NAME}")
	cmd.PersistentPreRunE = o.persistentResolve()
	o.register(cmd.PersistentFlags())
	cmd.AddCommand(newSecretPutCmd(o), newSecretListCmd(o), newSecretDeleteCmd(o), newSecretRotateCmd(o), newSecretKeygenCmd())
	return cmd
}

// secretCall runs one SecretService call with --timeout.
func secretCall[T any](cmd *cobra.Command, o *clientOptions, subject string,
	fn func(context.Context, pb.SecretServiceClient) (T, error)) (T, error) {
	return unaryCall(cmd, o, subject, pb.NewSecretServiceClient, fn)
}

func newSecretPutCmd(o *clientOptions) *cobra.Command {
	var fromFile, fromLiteral string
	var labels []string
	cmd := &cobra.Command{
		Use:   "put NAME (--from-file FILE | --from-literal VALUE | -)",
		Short: "Store a secret's value (a new version if it exists); the value is never shown again",
		Long: "Store a secret's value, encrypted by the node that receives it before it enters the Raft log.\n" +
			"The value is taken byte for byte (a file's or stdin's final newline included). --from-literal\n" +
			"shows the value in the process list and shell history: prefer a file or stdin.",
		Args: cobra.RangeArgs(1, 2),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			value, err := secretValue(cmd.InOrStdin(), args[1:], fromFile, fromLiteral, cmd.Flags().Changed("from-literal"))
			if err != nil {
				return err
			}
			lbls, err := parseLabels(labels)
			if err != nil {
				return err
			}
			resp, err := secretCall(cmd, o, fmt.Sprintf("secret %q", args[0]), func(ctx context.Context, c pb.SecretServiceClient) (*pb.PutSecretResponse, error) {
				return c.PutSecret(ctx, &pb.PutSecretRequest{Name: args[0], Value: value, Labels: lbls})
			})
			clear(value)
			if err != nil {
				return err
			}
			return writeSecrets(cmd.OutOrStdout(), o.output, []*pb.Secret{resp.GetSecret()}, true)
		}),
	}
	cmd.Flags().StringVar(&fromFile, "from-file", "", "read the value from FILE")
	cmd.Flags().StringVar(&fromLiteral, "from-literal", "", "the value itself (visible in ps and shell history)")
	cmd.Flags().StringArrayVar(&labels, "label", nil, "k=v, repeatable: the secret's scope (a scoped token must give its selector's labels)")
	return cmd
}

// secretValue reads the value from exactly one source: --from-file,
// --from-literal, or "-" (stdin).
func secretValue(stdin io.Reader, rest []string, file, literal string, literalSet bool) ([]byte, error) {
	stdinSet := len(rest) == 1
	if stdinSet && rest[0] != "-" {
		return nil, Usagef("unexpected argument %q: give the value with --from-file FILE, --from-literal VALUE or - (stdin)", rest[0])
	}
	n := 0
	for _, set := range []bool{file != "", literalSet, stdinSet} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, Usagef("give the value exactly one way: --from-file FILE, --from-literal VALUE or - (stdin)")
	}
	var r io.Reader
	switch {
	case literalSet:
		return []byte(literal), nil
	case file != "":
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("--from-file: %w", err)
		}
		defer func() { _ = f.Close() }()
		r = f
	default:
		r = stdin
	}
	b, err := io.ReadAll(io.LimitReader(r, secret.MaxValue+1))
	if err != nil {
		return nil, err
	}
	if len(b) > secret.MaxValue {
		return nil, fmt.Errorf("the value is over %d bytes", secret.MaxValue)
	}
	return b, nil
}

func newSecretListCmd(o *clientOptions) *cobra.Command {
	var stale bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the secrets by name: versions, labels, who and when; never values",
		Args:  cobra.NoArgs,
		RunE: RunE(func(cmd *cobra.Command, _ []string) error {
			resp, err := secretCall(cmd, o, "", func(ctx context.Context, c pb.SecretServiceClient) (*pb.ListSecretsResponse, error) {
				return c.ListSecrets(ctx, &pb.ListSecretsRequest{Stale: stale})
			})
			if err != nil {
				return err
			}
			return writeSecrets(cmd.OutOrStdout(), o.output, resp.GetSecrets(), false)
		}),
	}
	cmd.Flags().BoolVar(&stale, "stale", false, "read this node's state without the leader's read barrier")
	return cmd
}

func newSecretDeleteCmd(o *clientOptions) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a secret; refused while jobs reference it, unless --force",
		Args:  cobra.ExactArgs(1),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			resp, err := secretCall(cmd, o, fmt.Sprintf("secret %q", args[0]), func(ctx context.Context, c pb.SecretServiceClient) (*pb.DeleteSecretResponse, error) {
				return c.DeleteSecret(ctx, &pb.DeleteSecretRequest{Name: args[0], Force: force})
			})
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(cmd.OutOrStdout(), "secret %s deleted\n", args[0]); err != nil {
				return err
			}
			if users := resp.GetReferencedBy(); len(users) > 0 {
				_, err = fmt.Fprintf(cmd.ErrOrStderr(), "jobs %s reference it: their runs fail with reason %s until they change\n",
					strings.Join(users, ", "), secret.ReasonMissing)
			}
			return err
		}),
	}
	cmd.Flags().BoolVar(&force, "force", false, "delete even if jobs reference it (their runs then fail with reason secret_missing)")
	return cmd
}

func newSecretRotateCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "rotate",
		Short: "Re-encrypt every secret with the first key of the receiving node's --secrets-key-file (management)",
		Args:  cobra.NoArgs,
		RunE: RunE(func(cmd *cobra.Command, _ []string) error {
			resp, err := secretCall(cmd, o, "", func(ctx context.Context, c pb.SecretServiceClient) (*pb.RotateSecretsResponse, error) {
				return c.RotateSecrets(ctx, &pb.RotateSecretsRequest{})
			})
			if err != nil {
				return err
			}
			switch o.output {
			case outputJSON:
				return writeJSON(cmd.OutOrStdout(), resp)
			case outputYAML:
				return writeYAML(cmd.OutOrStdout(), resp)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%d secrets re-encrypted with key %s (%d already were)\n",
				resp.GetRotated(), resp.GetKeyId(), resp.GetUnchanged())
			return err
		}),
	}
}

func newSecretKeygenCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "keygen --out FILE",
		Short: "Write a new key for serve --secrets-key-file (mode 0600; never overwrites a file)",
		Args:  cobra.NoArgs,
		// No cluster is called: the group's client flags do not apply.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		RunE: RunE(func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return Usagef("--out: required")
			}
			id, err := secret.WriteKeyFile(out)
			if err != nil {
				return fmt.Errorf("--out: %w", err)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (key %s): back it up; losing it loses every secret it encrypts\n", out, id)
			return err
		}),
	}
	cmd.Flags().StringVar(&out, "out", "", "the key file to create")
	return cmd
}

// secretView is the JSON/YAML face of a secret: never a value.
type secretView struct {
	Name      string            `json:"name"`
	Version   uint64            `json:"version"`
	Labels    map[string]string `json:"labels,omitempty"`
	KeyID     string            `json:"key_id"`
	CreatedAt string            `json:"created_at,omitempty"`
	CreatedBy string            `json:"created_by,omitempty"`
	UpdatedAt string            `json:"updated_at,omitempty"`
	UpdatedBy string            `json:"updated_by,omitempty"`
}

func secretViewOf(s *pb.Secret) secretView {
	v := secretView{Name: s.GetName(), Version: s.GetVersion(), Labels: s.GetLabels(), KeyID: s.GetKeyId(),
		CreatedBy: s.GetCreatedBy(), UpdatedBy: s.GetUpdatedBy()}
	if s.GetCreatedAt() != nil {
		v.CreatedAt = s.GetCreatedAt().AsTime().UTC().Format(time.RFC3339)
	}
	if s.GetUpdatedAt() != nil {
		v.UpdatedAt = s.GetUpdatedAt().AsTime().UTC().Format(time.RFC3339)
	}
	return v
}

// writeSecrets prints secrets; one is an answer to a put (an object, not
// a list, in JSON and YAML).
func writeSecrets(w io.Writer, format outputFormat, secrets []*pb.Secret, one bool) error {
	views := make([]secretView, len(secrets))
	for i, s := range secrets {
		views[i] = secretViewOf(s)
	}
	var v any = views
	if one && len(views) == 1 {
		v = views[0]
	}
	switch format {
	case outputJSON:
		return writeJSON(w, v)
	case outputYAML:
		return writeYAML(w, v)
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "NAME\tVERSION\tLABELS\tKEY\tUPDATED\tUPDATED_BY")
	for _, v := range views {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", v.Name, v.Version, selectorText(v.Labels), v.KeyID, v.UpdatedAt, v.UpdatedBy)
	}
	return tw.Flush()
}
