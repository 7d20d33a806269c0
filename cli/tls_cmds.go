package cli

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/raftcron/raftcron/pki"
)

// Validity defaults of `raftcron tls`, as consul tls has them.
const (
	defaultCADays   = 5 * 365
	defaultCertDays = 365
	maxDays         = 100 * 365
	caName          = "ca"
)

func newTLSCmd() *cobra.Command {
	cmd := groupCmd("tls", "Create a CA and node and client certificates (no openssl needed)")
	ca := groupCmd("ca", "Manage the cluster's CA")
	ca.AddCommand(newTLSCACreateCmd())
	cert := groupCmd("cert", "Manage node and client certificates")
	cert.AddCommand(newTLSCertCreateCmd())
	cmd.AddCommand(ca, cert)
	return cmd
}

func newTLSCACreateCmd() *cobra.Command {
	var dir string
	var days int
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a CA: ca.pem and ca-key.pem (mode 0600) in --dir",
		Long: "Create the cluster's CA (ECDSA P-256): ca.pem, which every node gets as --tls-ca and\n" +
			"every client as --ca-cert, and ca-key.pem, which signs certificates: keep it off the nodes.\n" +
			"Existing files are never overwritten.",
		Args: cobra.NoArgs,
		RunE: RunE(func(cmd *cobra.Command, _ []string) error {
			validFor, err := daysFlag(days)
			if err != nil {
				return err
			}
			pair, err := pki.NewCA(validFor)
			if err != nil {
				return err
			}
			return writePair(cmd.OutOrStdout(), dir, caName, pair, "CA")
		}),
	}
	cmd.Flags().StringVar(&dir, "dir", ".", "directory to write into (created mode 0700 if missing)")
	cmd.Flags().IntVar(&days, "days", defaultCADays, "validity in days")
	return cmd
}

// certRequest is what `tls cert create` was asked for.
type certRequest struct {
	node, client, addrs string
	dir, ca, caKey      string
	days                int
}

func newTLSCertCreateCmd() *cobra.Command {
	r := &certRequest{}
	cmd := &cobra.Command{
		Use:   "create (--node ID --addr HOST[,HOST] | --client NAME)",
		Short: "Create a node or client certificate signed by the CA",
		Long: "Create a certificate signed by the CA in --dir (or --ca/--ca-key).\n" +
			"--node ID: a node certificate (node-ID.pem, node-ID-key.pem) for serve's --tls-cert/--tls-key.\n" +
			"  It carries the DNS SAN " + pki.NodeSAN + ", which Raft and node-to-node forwarding require,\n" +
			"  every host of --addr (the names and IPs clients and peers dial) and localhost, 127.0.0.1.\n" +
			"--client NAME: a client certificate (client-NAME.pem, client-NAME-key.pem) for --client-cert/\n" +
			"  --client-key, with common name NAME; it can call the API, never Raft or forwarding.\n" +
			"Keys are written with mode 0600; existing files are never overwritten.",
		Args: cobra.NoArgs,
		RunE: RunE(func(cmd *cobra.Command, _ []string) error { return r.run(cmd.OutOrStdout()) }),
	}
	fs := cmd.Flags()
	fs.StringVar(&r.node, "node", "", "node ID: create a node certificate")
	fs.StringVar(&r.client, "client", "", "client name: create a client certificate")
	fs.StringVar(&r.addrs, "addr", "", "for --node: HOST[,HOST] the node is reached at (DNS names or IPs; a :port is ignored)")
	fs.StringVar(&r.dir, "dir", ".", "directory to write into; also where the CA is read from by default")
	fs.StringVar(&r.ca, "ca", "", "CA certificate (default DIR/ca.pem)")
	fs.StringVar(&r.caKey, "ca-key", "", "CA key (default DIR/ca-key.pem)")
	fs.IntVar(&r.days, "days", defaultCertDays, "validity in days (at most the CA's remaining validity)")
	return cmd
}

func (r *certRequest) run(w io.Writer) error {
	if (r.node == "") == (r.client == "") {
		return Usagef("give exactly one of --node ID or --client NAME")
	}
	if r.client != "" && r.addrs != "" {
		return Usagef("--addr is for --node certificates: a client certificate names no host")
	}
	validFor, err := daysFlag(r.days)
	if err != nil {
		return err
	}
	ca, err := r.readCA()
	if err != nil {
		return err
	}
	var pair pki.Pair
	var name, what, flags string
	if r.node != "" {
		pair, err = ca.NodeCert(r.node, SplitList(r.addrs), validFor)
		name, what, flags = "node-"+r.node, "node certificate", "--node/--addr"
	} else {
		pair, err = ca.ClientCert(r.client, validFor)
		name, what, flags = "client-"+r.client, "client certificate", "--client"
	}
	switch {
	case errors.Is(err, pki.ErrOutlivesCA):
		return Usagef("--days %d: %v", r.days, err)
	case errors.Is(err, pki.ErrInvalid):
		return Usagef("%s: %s", flags, strings.TrimPrefix(err.Error(), pki.ErrInvalid.Error()+": "))
	}
	if err != nil {
		return err
	}
	return writePair(w, r.dir, name, pair, what)
}

func (r *certRequest) readCA() (*pki.CA, error) {
	paths := pki.PathsOf(r.dir, caName)
	if r.ca != "" {
		paths.Cert = r.ca
	}
	if r.caKey != "" {
		paths.Key = r.caKey
	}
	ca, err := pki.ReadCA(paths)
	if err != nil {
		return nil, fmt.Errorf("--ca/--ca-key: %w (create a CA with `raftcron tls ca create`)", err)
	}
	return ca, nil
}

func daysFlag(days int) (time.Duration, error) {
	if days < 1 || days > maxDays {
		return 0, Usagef("--days: must be between 1 and %d, got %d", maxDays, days)
	}
	return time.Duration(days) * 24 * time.Hour, nil
}

func writePair(w io.Writer, dir, name string, pair pki.Pair, what string) error {
	paths, err := pki.Write(dir, name, pair)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote %s %s\nwrote %s (key, mode 0600)\n", what, filepath.Clean(paths.Cert), filepath.Clean(paths.Key))
	return nil
}
