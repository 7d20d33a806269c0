package cluster

import (
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The ErrorInfo of a request refused because no leader could take it:
// nothing was proposed, so the client may retry, at the leader named in the
// metadata if it is known. Nodes send it to each other (forwarding), and
// the API sends it to clients; both sides use these names.
const (
	ErrorDomain           = "raftcron.io"
	ReasonNotLeader       = "NOT_LEADER"
	MetadataLeaderID      = "leader_id"
	MetadataLeaderAddress = "leader_address"
)

// NotLeaderStatus is the Unavailable status of a request refused for want
// of a leader; leaderID and leaderAddr name the last known leader, or are
// empty.
func NotLeaderStatus(msg, leaderID, leaderAddr string) error {
	return withInfo(codes.Unavailable, msg, ReasonNotLeader, map[string]string{
		MetadataLeaderID:      leaderID,
		MetadataLeaderAddress: leaderAddr,
	})
}

// NotLeaderInfo returns the ErrorInfo of a NotLeaderStatus, and false for
// any other error.
func NotLeaderInfo(err error) (*errdetails.ErrorInfo, bool) {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unavailable {
		return nil, false
	}
	info := errorInfo(st)
	if info == nil || info.GetReason() != ReasonNotLeader {
		return nil, false
	}
	return info, true
}

// withInfo is a status carrying an ErrorInfo of this domain.
func withInfo(code codes.Code, msg, reason string, meta map[string]string) error {
	st := status.New(code, msg)
	detailed, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain, Metadata: meta})
	if err != nil { // only fails if the detail cannot be marshalled
		return st.Err()
	}
	return detailed.Err()
}

// errorInfo is the status's ErrorInfo of this domain, if any.
func errorInfo(st *status.Status) *errdetails.ErrorInfo {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == ErrorDomain {
			return info
		}
	}
	return nil
}
