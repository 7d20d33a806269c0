package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"

	"github.com/raftcron/raftcron/cli"
)

// Flags of serve that decide who may reach what (README "Security").
const (
	flagTLSCert          = "tls-cert"
	flagTLSKey           = "tls-key"
	flagTLSCA            = "tls-ca"
	flagTLSVerifyClients = "tls-verify-clients"
	flagInsecure         = "insecure"
	flagDebugAddr        = "debug-addr"
	flagHTTPHost         = "http-host"
)

// securityConfig is the part of serveConfig that decides who may reach
// what.
type securityConfig struct {
	// TLSCert, TLSKey and TLSCA are all set or all empty.
	TLSCert, TLSKey, TLSCA string
	TLSVerifyClients       bool
	// Insecure lets a node serve a non-loopback address without TLS and
	// client authentication; it is warned about at every start.
	Insecure bool
	// DebugAddr serves pprof; empty: off.
	DebugAddr string
}

// hasTLS reports whether the node's port is TLS.
func (c securityConfig) hasTLS() bool { return c.TLSCert != "" }

func addSecurityFlags(fs *pflag.FlagSet) {
	fs.String(flagTLSCert, "", "node certificate (raftcron tls cert create --node); with --tls-key and --tls-ca every connection to --addr is TLS. SIGHUP reloads the three files")
	fs.String(flagTLSKey, "", "key of --tls-cert")
	fs.String(flagTLSCA, "", "CA certificate(s) that peers' and clients' certificates must chain to")
	fs.Bool(flagTLSVerifyClients, false, "require every API client to present a certificate from --tls-ca")
	fs.Bool(flagInsecure, false, "allow serving a non-loopback --addr without TLS and client authentication, or --debug-addr off loopback (warned at every start)")
	fs.String(flagDebugAddr, "", "host:port serving /debug/pprof/ without authentication (default off; loopback unless --insecure)")
	fs.String(flagHTTPHost, "", "NAME,... the JSON API and the web UI answer as Host besides IP addresses and localhost; "+
		"any other Host gets 421 (against DNS rebinding)")
}

// parseSecurity reads and checks the security flags. acl is --acl, which
// counts as client authentication.
func parseSecurity(k *koanf.Koanf, addr, httpAddr string, acl bool) (securityConfig, []error) {
	var c securityConfig
	var errs []error
	check := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	c.TLSCert, c.TLSKey, c.TLSCA = stringValue(k, flagTLSCert), stringValue(k, flagTLSKey), stringValue(k, flagTLSCA)
	check(checkTLSFiles(c))
	var err error
	c.TLSVerifyClients, err = boolValue(k, flagTLSVerifyClients)
	check(err)
	c.Insecure, err = boolValue(k, flagInsecure)
	check(err)
	if c.TLSVerifyClients && !c.hasTLS() {
		check(fmt.Errorf("--%s needs TLS: set --%s, --%s and --%s", flagTLSVerifyClients, flagTLSCert, flagTLSKey, flagTLSCA))
	}
	if c.DebugAddr = stringValue(k, flagDebugAddr); c.DebugAddr != "" {
		check(checkDebugAddr(c.DebugAddr))
		if !cli.IsLoopback(c.DebugAddr) && !c.Insecure {
			check(fmt.Errorf("--%s %s is not loopback: pprof has no authentication, bind it to 127.0.0.1 or add --%s", flagDebugAddr, c.DebugAddr, flagInsecure))
		}
	}
	if len(errs) == 0 {
		check(checkSecureByDefault(c, addr, acl))
		check(checkHTTPSecureByDefault(c, httpAddr, acl))
	}
	return c, errs
}

// checkDebugAddr: pprof is served on a port of its own, which must be
// named (port 0 would hide where the profiles are).
func checkDebugAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--%s: %q is not host:port", flagDebugAddr, addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("--%s: %q needs a port between 1 and 65535", flagDebugAddr, addr)
	}
	return nil
}

func checkTLSFiles(c securityConfig) error {
	set := map[string]bool{flagTLSCert: c.TLSCert != "", flagTLSKey: c.TLSKey != "", flagTLSCA: c.TLSCA != ""}
	var missing []string
	for _, f := range []string{flagTLSCert, flagTLSKey, flagTLSCA} {
		if !set[f] {
			missing = append(missing, "--"+f)
		}
	}
	if len(missing) == 0 || len(missing) == 3 {
		return nil
	}
	return fmt.Errorf("--%s, --%s and --%s go together: missing %s", flagTLSCert, flagTLSKey, flagTLSCA, strings.Join(missing, ", "))
}

// checkSecureByDefault: a node reachable from other hosts must know who
// calls it, or be told explicitly not to care. Loopback stays open for
// tests and demos.
func checkSecureByDefault(c securityConfig, addr string, acl bool) error {
	if c.Insecure || cli.IsLoopback(addr) || (c.hasTLS() && (acl || c.TLSVerifyClients)) {
		return nil
	}
	missing := fmt.Sprintf("--%s or --%s", flagACL, flagTLSVerifyClients)
	if !c.hasTLS() {
		missing = fmt.Sprintf("TLS (--%s, --%s, --%s) and %s", flagTLSCert, flagTLSKey, flagTLSCA, missing)
	}
	return fmt.Errorf("--addr %s is not loopback: serving it needs %s, or --%s to accept that anyone who reaches the port can run jobs and speak Raft",
		addr, missing, flagInsecure)
}

// checkHTTPSecureByDefault: the HTTP port serves the JSON API, which takes
// writes, and the UI, where people sign in with management tokens. Its
// callers bring no client certificate, so off loopback only ACL tokens tell
// who they are (--tls-verify-clients does not cover it), and those tokens
// must not cross the network in plaintext.
func checkHTTPSecureByDefault(c securityConfig, httpAddr string, acl bool) error {
	if c.Insecure || cli.IsLoopback(httpAddr) || (acl && c.hasTLS()) {
		return nil
	}
	var missing []string
	if !c.hasTLS() {
		missing = append(missing, fmt.Sprintf("TLS (--%s, --%s, --%s) so that tokens and UI sign-ins are not sent in plaintext",
			flagTLSCert, flagTLSKey, flagTLSCA))
	}
	if !acl {
		missing = append(missing, "--"+flagACL)
	}
	return fmt.Errorf("--%s %s is not loopback: the JSON API and web UI on it take writes and know their callers only by their ACL tokens, "+
		"so serving it needs %s, or --%s to accept that anyone who reaches the port can change jobs and read what is sent to it",
		flagHTTPAddr, httpAddr, strings.Join(missing, " and "), flagInsecure)
}
