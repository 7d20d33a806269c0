package cli

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"strings"

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
	flagTokenFile  = "token-file"
)

// clientAuthFlags are resolved from RAFTCRON_* like the other client flags.
var clientAuthFlags = []string{flagCACert, flagClientCert, flagClientKey, flagToken, flagTokenFile}

// Auth is how a client connects, as the client flags say: TLS when CACert
// is set, with a client certificate when one is given, and a bearer token
// when set. The zero value is plaintext without a token.
type Auth struct {
	CACert, ClientCert, ClientKey string
	Token                         string
	// TokenFile holds the token's secret instead of Token, which a command
	// line shows to every user of the host (ps) and a shell keeps in its
	// history. loadToken reads it into Token.
	TokenFile string
}

func (a *Auth) register(fs *pflag.FlagSet) {
	fs.StringVar(&a.CACert, flagCACert, "", "CA certificate to verify the node with; TLS is used only when set (env RAFTCRON_CA_CERT)")
	fs.StringVar(&a.ClientCert, flagClientCert, "", "client certificate for nodes that verify clients (env RAFTCRON_CLIENT_CERT)")
	fs.StringVar(&a.ClientKey, flagClientKey, "", "key of --client-cert (env RAFTCRON_CLIENT_KEY)")
	fs.StringVar(&a.Token, flagToken, "", "ACL token secret, sent as 'authorization: Bearer ...'; visible in ps: "+
		"prefer --token-file (env RAFTCRON_TOKEN)")
	fs.StringVar(&a.TokenFile, flagTokenFile, "", "file holding the ACL token secret (surrounding whitespace ignored); "+
		"not with --token (env RAFTCRON_TOKEN_FILE)")
}

// maxTokenFile bounds what --token-file reads: a secret, not a log.
const maxTokenFile = 64 << 10

// loadToken reads --token-file into Token. The two are exclusive wherever
// each comes from (flag or environment): a second source of the secret is
// a mistake, not a fallback.
func (a *Auth) loadToken() error {
	if a.TokenFile == "" {
		return nil
	}
	if a.Token != "" {
		return Usagef("--%s and --%s (or %s and %s): give one", flagToken, flagTokenFile,
			EnvName(flagToken), EnvName(flagTokenFile))
	}
	f, err := os.Open(a.TokenFile)
	if err != nil {
		return fmt.Errorf("--%s: %w", flagTokenFile, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	switch {
	case err != nil:
		return fmt.Errorf("--%s %s: %w", flagTokenFile, a.TokenFile, err)
	case len(b) > maxTokenFile:
		return fmt.Errorf("--%s %s: more than %d bytes: not a token's secret", flagTokenFile, a.TokenFile, maxTokenFile)
	}
	secret := strings.TrimSpace(string(b))
	if secret == "" || strings.ContainsAny(secret, " \t\r\n") {
		return fmt.Errorf("--%s %s: want the secret alone, on one line", flagTokenFile, a.TokenFile)
	}
	a.Token = secret
	return nil
}

// check refuses combinations that cannot work or would leak a secret.
func (a *Auth) check(addr string) error {
	switch {
	case (a.ClientCert == "") != (a.ClientKey == ""):
		return fmt.Errorf("--%s and --%s go together", flagClientCert, flagClientKey)
	case a.ClientCert != "" && a.CACert == "":
		return fmt.Errorf("--%s needs --%s: TLS is used only when --%s is set", flagClientCert, flagCACert, flagCACert)
	case a.Token != "" && a.CACert == "" && !allLoopback(addr):
		return fmt.Errorf("an ACL token without --%s would send the secret in plaintext to %s: set --%s (loopback addresses are exempt)",
			flagCACert, addr, flagCACert)
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
