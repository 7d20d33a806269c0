package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/durationpb"

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
		Use: "bootstrap",
		Short: "Create the first management token and print its secret (works once per cluster; " +
			"refused by nodes started with serve --acl-bootstrap-file, whose secret is that token's)",
		Args: cobra.NoArgs,
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
	var f tokenFlags
	cmd := &cobra.Command{
		Use: "create --name N --role management|write|read|worker|checkin [--selector k=v,...] " +
			"[--pool NAME,... [--max-concurrency N]] [--ttl D]",
		Short: "Create a token and print its secret, the only time it is shown",
		Long: "Create a token and print its secret, the only time it is shown.\n" +
			"A worker token is bound to the pools --pool names (required for --role worker):\n" +
			"its workers connect only those, each declaring at most --max-concurrency.\n" +
			"--ttl makes the token stop working that long after its creation.",
		Args: cobra.NoArgs,
		RunE: RunE(func(cmd *cobra.Command, _ []string) error {
			req, err := f.request()
			if err != nil {
				return err
			}
			resp, err := aclCall(cmd, o, fmt.Sprintf("ACL token %q", f.name), func(ctx context.Context, c pb.AclServiceClient) (*pb.CreateAclTokenResponse, error) {
				return c.CreateAclToken(ctx, req)
			})
			if err != nil {
				return err
			}
			return writeSecretToken(cmd, o.output, resp.GetToken(), resp.GetSecret())
		}),
	}
	cmd.Flags().StringVar(&f.name, "name", "", "unique name; recorded as updated_by of the jobs it writes")
	cmd.Flags().StringVar(&f.role, "role", "", "management, write, read, worker or checkin (check in the jobs of its selector, nothing else)")
	cmd.Flags().StringVar(&f.selector, "selector", "", "k=v,...: only jobs with these labels (read, write and checkin tokens)")
	cmd.Flags().StringVar(&f.pools, flagPool, "", "NAME,...: the pools its workers may connect (worker tokens; required for them)")
	cmd.Flags().Uint32Var(&f.maxConcurrency, "max-concurrency", 0, "the most attempts one of its workers may declare (worker tokens; 0: no cap)")
	cmd.Flags().DurationVar(&f.ttl, "ttl", 0, "the token stops working this long after its creation (at least 1s; 0: never)")
	return cmd
}

// tokenFlags are the flags of acl token create.
type tokenFlags struct {
	name, role, selector, pools string
	maxConcurrency              uint32
	ttl                         time.Duration
}

// request checks what only the command line can get wrong; the server
// checks the rest.
func (f tokenFlags) request() (*pb.CreateAclTokenRequest, error) {
	if f.name == "" {
		return nil, Usagef("--name: required")
	}
	r, ok := api.ParseRole(f.role)
	if !ok {
		return nil, Usagef("--role: %q is not management, write, read, worker or checkin", f.role)
	}
	sel, err := parseSelector(f.selector)
	if err != nil {
		return nil, err
	}
	req := &pb.CreateAclTokenRequest{Name: f.name, Role: r, Selector: sel, Pools: SplitList(f.pools), MaxConcurrency: f.maxConcurrency}
	switch {
	case r == pb.AclRole_ACL_ROLE_WORKER && len(req.Pools) == 0:
		return nil, Usagef("--%s: required for a worker token: the pools its workers may connect", flagPool)
	case r != pb.AclRole_ACL_ROLE_WORKER && len(req.Pools) > 0:
		return nil, Usagef("--%s: only worker tokens are bound to pools, not %s", flagPool, f.role)
	case r != pb.AclRole_ACL_ROLE_WORKER && f.maxConcurrency > 0:
		return nil, Usagef("--max-concurrency: only worker tokens take it, not %s", f.role)
	case f.ttl < 0 || (f.ttl > 0 && f.ttl < time.Second):
		return nil, Usagef("--ttl: at least 1s, or 0 for a token that never expires; got %s", f.ttl)
	}
	if f.ttl > 0 {
		req.Ttl = durationpb.New(f.ttl)
	}
	return req, nil
}

// parseSelector reads k=v,k2=v2 given to --selector.
func parseSelector(s string) (map[string]string, error) { return parseKV("--selector", s) }

// parseKV reads k=v,k2=v2 given to flag.
func parseKV(flag, s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	sel := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || k == "" {
			return nil, Usagef("%s: %q is not key=value", flag, part)
		}
		if _, dup := sel[k]; dup {
			return nil, Usagef("%s: key %q given twice", flag, k)
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
	AccessorID     string            `json:"accessor_id"`
	Name           string            `json:"name"`
	Role           string            `json:"role"`
	Selector       map[string]string `json:"selector,omitempty"`
	Pools          []string          `json:"pools,omitempty"`
	MaxConcurrency uint32            `json:"max_concurrency,omitempty"`
	CreatedAt      string            `json:"created_at,omitempty"`
	ExpiresAt      string            `json:"expires_at,omitempty"`
	Secret         string            `json:"secret,omitempty"`
}

func tokenViewOf(t *pb.AclToken, secret string) tokenView {
	v := tokenView{
		AccessorID: t.GetAccessorId(), Name: t.GetName(), Role: api.RoleName(t.GetRole()),
		Selector: t.GetSelector(), Pools: t.GetPools(), MaxConcurrency: t.GetMaxConcurrency(), Secret: secret,
	}
	if t.GetCreatedAt() != nil {
		v.CreatedAt = t.GetCreatedAt().AsTime().UTC().Format(time.RFC3339)
	}
	if t.GetExpiresAt() != nil {
		v.ExpiresAt = t.GetExpiresAt().AsTime().UTC().Format(time.RFC3339)
	}
	return v
}

// poolsText is what a token may connect: its pools; a worker token made
// before pools existed, any ("*"); other roles, nothing to say ("-").
func poolsText(v tokenView) string {
	switch {
	case len(v.Pools) > 0:
		s := strings.Join(v.Pools, ",")
		if v.MaxConcurrency > 0 {
			s += fmt.Sprintf(" (max %d)", v.MaxConcurrency)
		}
		return s
	case v.Role == "worker":
		return "*"
	default:
		return "-"
	}
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
	fmt.Fprintf(tw, "pools:\t%s\n", poolsText(v))
	fmt.Fprintf(tw, "expires_at:\t%s\n", orDash(v.ExpiresAt))
	fmt.Fprintf(tw, "secret:\t%s\n", v.Secret)
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(cmd.ErrOrStderr(), "Keep the secret: it is not shown again. Pass it with --token-file "+
		"(or RAFTCRON_TOKEN_FILE), which keeps it off command lines.")
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
	fmt.Fprintln(tw, "ACCESSOR\tNAME\tROLE\tSELECTOR\tPOOLS\tCREATED\tEXPIRES")
	for _, v := range views {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.AccessorID, v.Name, v.Role, selectorText(v.Selector),
			poolsText(v), v.CreatedAt, orDash(v.ExpiresAt))
	}
	return tw.Flush()
}

func selectorText(sel map[string]string) string {
	if len(sel) == 0 {
		return "-"
	}
	return api.FormatSelector(sel)
}
