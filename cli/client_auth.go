package cli

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// Client flags that say who the caller is and whom it trusts.
const (
	flagCACert     = "ca-cert"
	flagClientCert = "client-cert"
	flagClientKey  = "client-key"
	flagToken      = "token"
)

// clientAuthFlags are resolved from RAFTCRON_* like the other client flags.
var clientAuthFlags = []string{flagCACert, flagClientCert, flagClientKey, flagToken}

// Auth is how a client connects, as the client flags say: TLS when CACert
// is set, with a client certificate when one is given, and a bearer token
// when set. The zero value is plaintext without a token.
type Auth struct {
	CACert, ClientCert, ClientKey string
	Token                         string
}

func (a *Auth) register(fs *pflag.FlagSet) {
	fs.StringVar(&a.CACert, flagCACert, "", "CA certificate to verify the node with; TLS is used only when set (env RAFTCRON_CA_CERT)")
	fs.StringVar(&a.ClientCert, flagClientCert, "", "client certificate for nodes that verify clients (env RAFTCRON_CLIENT_CERT)")
	fs.StringVar(&a.ClientKey, flagClientKey, "", "key of --client-cert (env RAFTCRON_CLIENT_KEY)")
	fs.StringVar(&a.Token, flagToken, "", "ACL token secret, sent as 'authorization: Bearer ...' (env RAFTCRON_TOKEN)")
}

// check refuses combinations that cannot work or would leak a secret.
func (a *Auth) check(addr string) error {
	switch {
	case (a.ClientCert == "") != (a.ClientKey == ""):
		return fmt.Errorf("--%s and --%s go together", flagClientCert, flagClientKey)
	case a.ClientCert != "" && a.CACert == "":
		return fmt.Errorf("--%s needs --%s: TLS is used only when --%s is set", flagClientCert, flagCACert, flagCACert)
	case a.Token != "" && a.CACert == "" && !allLoopback(addr):
		return fmt.Errorf("--%s without --%s would send the secret in plaintext to %s: set --%s (loopback addresses are exempt)",
			flagToken, flagCACert, addr, flagCACert)
	}
	return nil
}

// allLoopback reports whether every address of a list (a worker's --addr
// names several) is a loopback one.
func allLoopback(addrs string) bool {
	list := SplitList(addrs)
	for _, a := range list {
		if !IsLoopback(a) {
			return false
		}
	}
	return len(list) > 0
}

// transportCredentials are TLS when --ca-cert is set, else plaintext.
func (a *Auth) transportCredentials() (credentials.TransportCredentials, error) {
	if a.CACert == "" {
		return insecure.NewCredentials(), nil
	}
	cfg, err := a.tlsConfig()
	if err != nil {
		return nil, err
	}
	return credentials.NewTLS(cfg), nil
}

// tokenOptions send the token, if any, with every call.
func (a *Auth) tokenOptions() []grpc.DialOption {
	if a.Token == "" {
		return nil
	}
	return []grpc.DialOption{grpc.WithPerRPCCredentials(bearerToken(a.Token))}
}

// tlsConfig trusts only --ca-cert; the node's name is checked against the
// host of --addr, which its certificate must carry.
func (a *Auth) tlsConfig() (*tls.Config, error) {
	pem, err := os.ReadFile(a.CACert)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", flagCACert, err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--%s %s: no PEM certificate in it", flagCACert, a.CACert)
	}
	cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if a.ClientCert != "" {
		cert, err := tls.LoadX509KeyPair(a.ClientCert, a.ClientKey)
		if err != nil {
			return nil, fmt.Errorf("--%s/--%s: %w", flagClientCert, flagClientKey, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
