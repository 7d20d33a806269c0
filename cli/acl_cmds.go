package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/raftcron/raftcron/api"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

func newACLCmd() *cobra.Command {
	o := &clientOptions{}
	cmd := groupCmd("acl", "Manage the ACL tokens that serve --acl requires")
	cmd.PersistentPreRunE = o.persistentResolve()
	o.register(cmd.PersistentFlags())
	token := groupCmd("token", "Create, list and delete ACL tokens (needs a management token)")
	token.AddCommand(newACLTokenCreateCmd(o), newACLTokenListCmd(o), newACLTokenDeleteCmd(o))
	cmd.AddCommand(newACLBootstrapCmd(o), token)
	return cmd
}

// aclCall runs one AclService call with --timeout.
func aclCall[T any](cmd *cobra.Command, o *clientOptions, subject string,
	fn func(context.Context, pb.AclServiceClient) (T, error)) (T, error) {
	return unaryCall(cmd, o, subject, pb.NewAclServiceClient, fn)
}

func newACLBootstrapCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "bootstrap",
		Short: "Create the first management token and print its secret (works once per cluster)",
		Args:  cobra.NoArgs,
		RunE: RunE(func(cmd *cobra.Command, _ []string) error {
			resp, err := aclCall(cmd, o, "", func(ctx context.Context, c pb.AclServiceClient) (*pb.BootstrapAclResponse, error) {
				return c.BootstrapAcl(ctx, &pb.BootstrapAclRequest{})
			})
			if err != nil {
				return err
			}
			return writeSecretToken(cmd, o.output, resp.GetToken(), resp.GetSecret())
		}),
	}
}

func newACLTokenCreateCmd(o *clientOptions) *cobra.Command {
	var name, role, selector string
	cmd := &cobra.Command{
		Use:   "create --name N --role management|write|read|worker [--selector k=v,...]",
		Short: "Create a token and print its secret, the only time it is shown",
		Args:  cobra.NoArgs,
		RunE: RunE(func(cmd *cobra.Command, _ []string) error {
			req, err := tokenRequest(name, role, selector)
			if err != nil {
				return err
			}
			resp, err := aclCall(cmd, o, fmt.Sprintf("ACL token %q", name), func(ctx context.Context, c pb.AclServiceClient) (*pb.CreateAclTokenResponse, error) {
				return c.CreateAclToken(ctx, req)
			})
			if err != nil {
				return err
			}
			return writeSecretToken(cmd, o.output, resp.GetToken(), resp.GetSecret())
		}),
	}
	cmd.Flags().StringVar(&name, "name", "", "unique name; recorded as updated_by of the jobs it writes")
	cmd.Flags().StringVar(&role, "role", "", "management, write, read or worker")
	cmd.Flags().StringVar(&selector, "selector", "", "k=v,...: only jobs with these labels (read and write tokens)")
	return cmd
}

// tokenRequest checks what only the command line can get wrong; the
// server checks the rest.
func tokenRequest(name, role, selector string) (*pb.CreateAclTokenRequest, error) {
	if name == "" {
		return nil, Usagef("--name: required")
	}
	r, ok := api.ParseRole(role)
	if !ok {
		return nil, Usagef("--role: %q is not management, write, read or worker", role)
	}
	sel, err := parseSelector(selector)
	if err != nil {
		return nil, err
	}
	return &pb.CreateAclTokenRequest{Name: name, Role: r, Selector: sel}, nil
}

// parseSelector reads k=v,k2=v2.
func parseSelector(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	sel := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || k == "" {
			return nil, Usagef("--selector: %q is not key=value", part)
		}
		if _, dup := sel[k]; dup {
			return nil, Usagef("--selector: key %q given twice", k)
		}
		sel[k] = v
	}
	return sel, nil
}

func newACLTokenListCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the tokens by name, without secrets",
		Args:  cobra.NoArgs,
		RunE: RunE(func(cmd *cobra.Command, _ []string) error {
			resp, err := aclCall(cmd, o, "", func(ctx context.Context, c pb.AclServiceClient) (*pb.ListAclTokensResponse, error) {
				return c.ListAclTokens(ctx, &pb.ListAclTokensRequest{})
			})
			if err != nil {
				return err
			}
			return writeTokenList(cmd.OutOrStdout(), o.output, resp.GetTokens())
		}),
	}
}

func newACLTokenDeleteCmd(o *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "delete ACCESSOR",
		Short: "Delete a token by accessor ID; its secret stops working at once",
		Args:  cobra.ExactArgs(1),
		RunE: RunE(func(cmd *cobra.Command, args []string) error {
			_, err := aclCall(cmd, o, fmt.Sprintf("ACL token %q", args[0]), func(ctx context.Context, c pb.AclServiceClient) (*pb.DeleteAclTokenResponse, error) {
				return c.DeleteAclToken(ctx, &pb.DeleteAclTokenRequest{AccessorId: args[0]})
			})
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "ACL token %s deleted\n", args[0])
			return err
		}),
	}
}

// tokenView is the JSON/YAML face of a token; secret only when it was
// just created.
type tokenView struct {
	AccessorID string            `json:"accessor_id"`
	Name       string            `json:"name"`
	Role       string            `json:"role"`
	Selector   map[string]string `json:"selector,omitempty"`
	CreatedAt  string            `json:"created_at,omitempty"`
	Secret     string            `json:"secret,omitempty"`
}

func tokenViewOf(t *pb.AclToken, secret string) tokenView {
	v := tokenView{
		AccessorID: t.GetAccessorId(), Name: t.GetName(), Role: api.RoleName(t.GetRole()),
		Selector: t.GetSelector(), Secret: secret,
	}
	if t.GetCreatedAt() != nil {
		v.CreatedAt = t.GetCreatedAt().AsTime().UTC().Format(time.RFC3339)
	}
	return v
}

// writeSecretToken prints a token just created, secret included; the
// table form also says, on stderr, that the secret is shown once.
func writeSecretToken(cmd *cobra.Command, format outputFormat, t *pb.AclToken, secret string) error {
	v := tokenViewOf(t, secret)
	w := cmd.OutOrStdout()
	switch format {
	case outputJSON:
		return writeJSON(w, v)
	case outputYAML:
		return writeYAML(w, v)
	}
	tw := newTable(w)
	fmt.Fprintf(tw, "accessor_id:\t%s\n", v.AccessorID)
	fmt.Fprintf(tw, "name:\t%s\n", v.Name)
	fmt.Fprintf(tw, "role:\t%s\n", v.Role)
	fmt.Fprintf(tw, "selector:\t%s\n", selectorText(v.Selector))
	fmt.Fprintf(tw, "secret:\t%s\n", v.Secret)
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(cmd.ErrOrStderr(), "Keep the secret: it is not shown again. Pass it with --token or RAFTCRON_TOKEN.")
	return err
}

func writeTokenList(w io.Writer, format outputFormat, tokens []*pb.AclToken) error {
	views := make([]tokenView, len(tokens))
	for i, t := range tokens {
		views[i] = tokenViewOf(t, "")
	}
	switch format {
	case outputJSON:
		return writeJSON(w, views)
	case outputYAML:
		return writeYAML(w, views)
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "ACCESSOR\tNAME\tROLE\tSELECTOR\tCREATED")
	for _, v := range views {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", v.AccessorID, v.Name, v.Role, selectorText(v.Selector), v.CreatedAt)
	}
	return tw.Flush()
}

func selectorText(sel map[string]string) string {
	if len(sel) == 0 {
		return "-"
	}
	return api.FormatSelector(sel)
}
