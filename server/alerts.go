package server

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/raftcron/raftcron/alert"
	"github.com/raftcron/raftcron/cluster"
	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/scheduler"
)

// Fields of the alert settings in a *cluster.ConfigError.
const (
	FieldAlertHistoryLimit = "Alerts.HistoryLimit"
	FieldPublicURL         = "Alerts.PublicURL"
)

// AlertConfig is how this node sends alert notifications while it leads.
// Set it alike on every node.
type AlertConfig struct {
	// HistoryLimit is how many alert notifications the cluster keeps
	// (--alert-history-limit), up to fsm.MaxAlertLimit; 0 leaves the
	// cluster's (1000 until a leader sets one).
	HistoryLimit int
	// ClusterName names the cluster in every notification
	// (--cluster-name); empty is "raftcron".
	ClusterName string
	// PublicURL is where people reach the nodes' UI (--public-url), for
	// the links in notifications; empty is this node's HTTP address.
	PublicURL string
}

func (c AlertConfig) validate() error {
	if c.HistoryLimit < 0 || c.HistoryLimit > fsm.MaxAlertLimit {
		return &cluster.ConfigError{Field: FieldAlertHistoryLimit, Rule: fmt.Sprintf("must be 0 to %d", fsm.MaxAlertLimit), Err: cluster.ErrInvalidConfig}
	}
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return &cluster.ConfigError{Field: FieldPublicURL, Rule: "must be an absolute http or https URL", Err: cluster.ErrInvalidConfig}
		}
	}
	return nil
}

// site is what the node's notifications say of the cluster.
func (s *Server) site() alert.Site {
	site := alert.Site{Cluster: s.cfg.Alerts.ClusterName, UIBase: strings.TrimRight(s.cfg.Alerts.PublicURL, "/")}
	if site.Cluster == "" {
		site.Cluster = "raftcron"
	}
	if site.UIBase == "" {
		scheme := "http"
		if s.cfg.TLS != nil {
			scheme = "https"
		}
		site.UIBase = scheme + "://" + s.HTTPAddr()
	}
	return site
}

// wireAlerts builds the alerter: it sends under the webhooks' egress
// policy, signs with their keys, and proposes with the scheduler's clock.
func (s *Server) wireAlerts() error {
	var keys alert.Keys
	if s.cfg.Policy.FenceKeys != nil {
		keys = s.cfg.Policy.FenceKeys
	}
	clock := s.cfg.Clock
	if clock == nil {
		clock = scheduler.SystemClock{}
	}
	a, err := alert.New(alert.Config{
		State: s.state, Proposer: scheduler.NewNodeProposer(s.node), Now: clock.Now, Logger: s.log,
		Egress: s.cfg.Policy.HTTPDeny, Keys: keys, SecretKeys: s.cfg.SecretKeys, Site: s.site(),
		HistoryLimit: uint32(s.cfg.Alerts.HistoryLimit),
	})
	if err != nil {
		return err
	}
	s.alerts = a
	return nil
}
