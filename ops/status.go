package ops

import (
	"time"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Status is the /status document of DESIGN §9, and the JSON/YAML face of
// `cluster status`: the field names are a contract, and every reader of a
// node's status (the CLI, dev, the benchmarks, the tests) decodes this type.
type Status struct {
	ID           string    `json:"id"`
	Address      string    `json:"address,omitempty"`
	State        string    `json:"state"` // leader, follower, candidate or shutdown
	Leader       ServerRef `json:"leader"`
	Term         uint64    `json:"term"`
	CommitIndex  uint64    `json:"commit_index"`
	AppliedIndex uint64    `json:"applied_index"`
	LastLogIndex uint64    `json:"last_log_index"`
	FencingToken uint64    `json:"fencing_token"`
	// Ready is what /readyz answers. Only the ops port knows it: a status
	// read over gRPC leaves it out.
	Ready   *bool    `json:"ready,omitempty"`
	Servers []Member `json:"servers"`
	// CommandVersion is the highest command version the node applies
	// (DESIGN §16): an operator watches it during a rolling upgrade.
	CommandVersion uint32 `json:"command_version"`
	// ClusterVersion is the command version whose rules the whole cluster
	// applies: it reaches a release's CommandVersion once every voter runs
	// that release (DESIGN §16).
	ClusterVersion uint32 `json:"cluster_version"`
	// LastHour is what the cluster's runs did in the last hour, from the
	// replicated counts (absent from a node that does not report them).
	LastHour *RunCounts `json:"last_hour,omitempty"`
}

// RunCounts counts the runs of a period: fired, finished failed (failed,
// fenced, deadline_exceeded, unknown) and slots missed.
type RunCounts struct {
	Fires    uint64 `json:"fires"`
	Failures uint64 `json:"failures"`
	Missed   uint64 `json:"missed"`
}

func runCountsOf(c *pb.RunCounts) *RunCounts {
	if c == nil {
		return nil
	}
	return &RunCounts{Fires: c.GetFires(), Failures: c.GetFailures(), Missed: c.GetMissed()}
}

// ServerRef names a node.
type ServerRef struct {
	ID      string `json:"id"`
	Address string `json:"address"`
}

// Member is one server of the Raft configuration.
type Member struct {
	ID       string `json:"id"`
	Address  string `json:"address"`
	Suffrage string `json:"suffrage"`
	Leader   bool   `json:"leader"`
	// Contact is whether the answering node hears from the server:
	// cluster.ContactReachable or ContactUnreachable (last contact older
	// than the election timeout), empty when it cannot know (a follower
	// knows only itself and the leader).
	Contact string `json:"contact,omitempty"`
	// LastContact is when an unreachable server was last heard from, RFC
	// 3339 UTC; empty if never.
	LastContact string `json:"last_contact,omitempty"`
}

// StatusOf converts the cluster's view of a node; Ready stays unset.
func StatusOf(st *pb.NodeStatus) Status {
	out := Status{
		ID:           st.GetId(),
		Address:      st.GetAddress(),
		State:        st.GetState(),
		Leader:       ServerRef{ID: st.GetLeader().GetId(), Address: st.GetLeader().GetAddress()},
		Term:         st.GetTerm(),
		CommitIndex:  st.GetCommitIndex(),
		AppliedIndex: st.GetAppliedIndex(),
		LastLogIndex: st.GetLastLogIndex(),
		FencingToken: st.GetFencingToken(),
		Servers:      []Member{},
		// DESIGN §16, beside the §9 fields above.
		CommandVersion: st.GetCommandVersion(),
		ClusterVersion: st.GetClusterVersion(),
		LastHour:       runCountsOf(st.GetLastHour()),
	}
	for _, sv := range st.GetServers() {
		m := Member{ID: sv.GetId(), Address: sv.GetAddress(), Suffrage: sv.GetSuffrage(), Leader: sv.GetLeader(), Contact: sv.GetContact()}
		if ns := sv.GetLastContactUnixNano(); ns != 0 {
			m.LastContact = time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
		}
		out.Servers = append(out.Servers, m)
	}
	return out
}
