package api

import (
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionalphapb "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"

	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
)

// Permission is what a method needs of its caller.
type Permission int

const (
	// PermPublic needs nothing: the health service, for probes and load
	// balancers that hold no token.
	PermPublic Permission = iota + 1
	// PermNode is node-to-node forwarding: the transport authenticates
	// the peer by its node certificate (DESIGN §11), not a token.
	PermNode
	// PermBootstrap needs no token: it works once per cluster.
	PermBootstrap
	// PermAuthenticated needs any known token: server reflection, which
	// reveals the schema only (grpcurl sends its -H headers with it).
	PermAuthenticated
	PermRead
	PermWrite
	PermManagement
	// PermWorker is for remote workers: role worker, or management.
	PermWorker
	// PermCheckin is a ping of a check-in job: role checkin, write or
	// management, in the token's scope.
	PermCheckin
)

func (p Permission) String() string {
	switch p {
	case PermPublic:
		return "nothing"
	case PermNode:
		return "a node certificate"
	case PermBootstrap:
		return "no token"
	case PermAuthenticated:
		return "any token"
	case PermRead:
		return "role read"
	case PermWrite:
		return "role write"
	case PermManagement:
		return "role management"
	case PermWorker:
		return "role worker"
	case PermCheckin:
		return "role checkin or write"
	default:
		return "an unknown permission"
	}
}

// methodPermissions is every method this server registers and what it
// needs. A method missing here is refused (deny by default), and
// TestEveryMethodHasAnACLRule fails.
var methodPermissions = map[string]Permission{
	healthpb.Health_Check_FullMethodName: PermPublic,
	healthpb.Health_List_FullMethodName:  PermPublic,
	healthpb.Health_Watch_FullMethodName: PermPublic,

	reflectionpb.ServerReflection_ServerReflectionInfo_FullMethodName:      PermAuthenticated,
	reflectionalphapb.ServerReflection_ServerReflectionInfo_FullMethodName: PermAuthenticated,

	pb.JobService_GetJob_FullMethodName:          PermRead,
	pb.JobService_ListJobs_FullMethodName:        PermRead,
	pb.JobService_PreviewSchedule_FullMethodName: PermRead,
	pb.JobService_CreateJob_FullMethodName:       PermWrite,
	pb.JobService_UpdateJob_FullMethodName:       PermWrite,
	pb.JobService_ApplyJob_FullMethodName:        PermWrite,
	pb.JobService_ApplyJobs_FullMethodName:       PermWrite,
	pb.JobService_DeleteJob_FullMethodName:       PermWrite,
	pb.JobService_PauseJob_FullMethodName:        PermWrite,
	pb.JobService_ResumeJob_FullMethodName:       PermWrite,
	pb.JobService_TriggerJob_FullMethodName:      PermWrite,
	// A check-in token pings the check-in jobs of its selector (NotFound
	// for the rest, as for every scoped token), and does nothing else.
	pb.JobService_CheckinJob_FullMethodName: PermCheckin,
	// In the job's scope, like every job write (the FSM checks it with the
	// start and the cancel).
	pb.JobService_BackfillJob_FullMethodName:    PermWrite,
	pb.JobService_CancelBackfill_FullMethodName: PermWrite,

	// The graph shows the jobs in the caller's scope; a parent outside it
	// reads as missing.
	pb.ChainService_GetJobGraph_FullMethodName: PermRead,

	// page_token: read, like the rest of the call; a scoped token pages
	// through the runs of its jobs (their own, not a deleted job's of the
	// same name), a bounded part of the ledger per call.
	pb.RunService_ListRuns_FullMethodName:  PermRead,
	pb.RunService_GetRun_FullMethodName:    PermRead,
	pb.RunService_WatchRuns_FullMethodName: PermRead,
	pb.RunService_CancelRun_FullMethodName: PermWrite,

	// Records name every principal and every token created.
	pb.AuditService_ListAudit_FullMethodName: PermManagement,

	pb.FenceService_CheckToken_FullMethodName: PermRead,

	pb.ClusterService_GetStatus_FullMethodName:          PermRead,
	pb.ClusterService_AddNode_FullMethodName:            PermManagement,
	pb.ClusterService_RemoveNode_FullMethodName:         PermManagement,
	pb.ClusterService_TransferLeadership_FullMethodName: PermManagement,

	// A snapshot holds the whole state, ACL tokens included, and a
	// restore rolls back its jobs and runs. RestoreSnapshotRequest.force
	// (a file from before ACL bootstrap) needs nothing more: the call is
	// management's whole.
	pb.SnapshotService_SaveSnapshot_FullMethodName:    PermManagement,
	pb.SnapshotService_RestoreSnapshot_FullMethodName: PermManagement,

	// No token: it works once. Once bootstrapped, it is refused from the
	// node's state without a write; on a node with --acl-bootstrap-file,
	// always (the leader bootstraps from the file).
	pb.AclService_BootstrapAcl_FullMethodName:   PermBootstrap,
	pb.AclService_CreateAclToken_FullMethodName: PermManagement,
	pb.AclService_ListAclTokens_FullMethodName:  PermManagement,
	pb.AclService_DeleteAclToken_FullMethodName: PermManagement,

	// A worker token serves only its pools, declaring at most its
	// max_concurrency (scheduler/remote.Grant); management, any pool. A
	// poll is held to the same grant; a heartbeat or an outcome is taken
	// only from the token the attempt was offered under.
	pb.WorkerService_Connect_FullMethodName:               PermWorker,
	pb.WorkerService_PollAttempts_FullMethodName:          PermWorker,
	pb.WorkerService_HeartbeatAttempt_FullMethodName:      PermWorker,
	pb.WorkerService_CompleteAttempt_FullMethodName:       PermWorker,
	pb.WorkerService_BatchCompleteAttempts_FullMethodName: PermWorker,

	// Secrets are scoped like jobs: a put or delete needs write in the
	// secret's scope, a list shows read tokens names and versions only.
	// A rotation re-seals every secret.
	pb.SecretService_PutSecret_FullMethodName:     PermWrite,
	pb.SecretService_DeleteSecret_FullMethodName:  PermWrite,
	pb.SecretService_ListSecrets_FullMethodName:   PermRead,
	pb.SecretService_RotateSecrets_FullMethodName: PermManagement,

	// Scoped like jobs: a token with a selector reads and writes only the
	// calendars whose labels include it (the service and the FSM check).
	pb.CalendarService_ApplyCalendar_FullMethodName:  PermWrite,
	pb.CalendarService_ImportCalendar_FullMethodName: PermWrite,
	pb.CalendarService_DeleteCalendar_FullMethodName: PermWrite,
	pb.CalendarService_GetCalendar_FullMethodName:    PermRead,
	pb.CalendarService_ListCalendars_FullMethodName:  PermRead,
	// A freeze stops the jobs its selector matches: write, and a token
	// with a selector only for a freeze whose selector includes its own
	// (the service and the FSM check); reads show the freezes that may
	// match a job the token sees.
	pb.FreezeService_CreateFreeze_FullMethodName: PermWrite,
	pb.FreezeService_DeleteFreeze_FullMethodName: PermWrite,
	pb.FreezeService_ListFreezes_FullMethodName:  PermRead,
	// Channels and notify rules are scoped like jobs (labels; a rule's
	// selector): an apply or delete needs write in their scope, a read
	// shows read tokens literal secrets redacted. A test sends to a
	// channel: write. Alerts are listed by the scope of their jobs.
	pb.ChannelService_ApplyChannel_FullMethodName:   PermWrite,
	pb.ChannelService_DeleteChannel_FullMethodName:  PermWrite,
	pb.ChannelService_TestChannel_FullMethodName:    PermWrite,
	pb.ChannelService_GetChannel_FullMethodName:     PermRead,
	pb.ChannelService_ListChannels_FullMethodName:   PermRead,
	pb.AlertService_ApplyNotifyRule_FullMethodName:  PermWrite,
	pb.AlertService_DeleteNotifyRule_FullMethodName: PermWrite,
	pb.AlertService_ListNotifyRules_FullMethodName:  PermRead,
	pb.AlertService_ListAlerts_FullMethodName:       PermRead,

	pb.InternalService_Apply_FullMethodName:              PermNode,
	pb.InternalService_ReadIndex_FullMethodName:          PermNode,
	pb.InternalService_AddVoter_FullMethodName:           PermNode,
	pb.InternalService_RemoveServer_FullMethodName:       PermNode,
	pb.InternalService_TransferLeadership_FullMethodName: PermNode,
	pb.InternalService_NodeInfo_FullMethodName:           PermNode,
}

// longCalls are the unary calls that wait (a worker's long poll): each
// stays registered under its token like a stream, and ends with
// Unauthenticated when the token is deleted or expires.
var longCalls = map[string]bool{
	pb.WorkerService_PollAttempts_FullMethodName: true,
}

// may reports whether the principal's role grants perm. PermPublic and
// PermNode never reach it.
func (p Principal) may(perm Permission) bool {
	r := p.Role
	switch perm {
	case PermBootstrap, PermAuthenticated:
		return true
	case PermRead:
		return r == pb.AclRole_ACL_ROLE_READ || r == pb.AclRole_ACL_ROLE_WRITE || r == pb.AclRole_ACL_ROLE_MANAGEMENT
	case PermWrite:
		return r == pb.AclRole_ACL_ROLE_WRITE || r == pb.AclRole_ACL_ROLE_MANAGEMENT
	case PermManagement:
		return r == pb.AclRole_ACL_ROLE_MANAGEMENT
	case PermWorker:
		return r == pb.AclRole_ACL_ROLE_WORKER || r == pb.AclRole_ACL_ROLE_MANAGEMENT
	case PermCheckin:
		return r == pb.AclRole_ACL_ROLE_CHECKIN || r == pb.AclRole_ACL_ROLE_WRITE || r == pb.AclRole_ACL_ROLE_MANAGEMENT
	default:
		return false
	}
}
