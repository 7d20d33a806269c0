package api

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/raftcron/raftcron/fsm"
	"github.com/raftcron/raftcron/jobspec"
	pb "github.com/raftcron/raftcron/proto/raftcron/v1"
	"github.com/raftcron/raftcron/scheduler/remote"
)

// BootstrapTokenName is the name of the token `acl bootstrap` creates.
const BootstrapTokenName = "bootstrap"

// tokenNameRule keeps token names short and printable: they become the
// updated_by of every job the token writes.
const tokenNameRule = "[A-Za-z0-9][A-Za-z0-9._@-]{0,62}"

var tokenNamePattern = regexp.MustCompile("^" + tokenNameRule + "$")

// maxAccessorIDLen bounds an accessor ID in a request; ours have 26
// characters (crypto/rand.Text).
const maxAccessorIDLen = 64

// TokenLister lists the replicated ACL tokens, without their hashes, and
// says whether ACLs were bootstrapped.
type TokenLister interface {
	ACLTokens() []*pb.AclToken
	ACLBootstrapped() bool
}

type aclService struct {
	pb.UnimplementedAclServiceServer
	store    Store
	tokens   TokenLister
	now      func() time.Time
	audit    *AuditSwitch
	fromFile bool
	// clusterVersion: see Deps.ClusterVersion.
	clusterVersion func() uint32
}

// NewACLService serves AclService from d's Store and Tokens (required),
// Audit, Now (which dates the token a response shows),
// ACLBootstrapFromFile and ClusterVersion (tokens of role checkin from
// fsm.CheckinsVersion on). Secrets are generated here, at the edge: the
// FSM must stay deterministic, so the log carries only their hashes.
func NewACLService(d Deps) pb.AclServiceServer {
	d = d.withDefaults()
	return &aclService{store: d.Store, tokens: d.Tokens, now: d.Now, audit: d.Audit, fromFile: d.ACLBootstrapFromFile,
		clusterVersion: d.ClusterVersion}
}

// errBootstrapped refuses a bootstrap of a cluster that has one.
var errBootstrapped = status.Error(codes.FailedPrecondition, "ACLs are bootstrapped already: bootstrap works once")

// BootstrapAcl needs no token, so anyone who reaches a node may call it.
// Once the cluster is bootstrapped it is refused from this node's state
// and commits nothing. The flag never goes back, so a node that has
// applied the bootstrap refuses at once; one that has not (a lagging
// follower) reads the leader's state first (a read barrier) and refuses if
// that has it.
func (a *aclService) BootstrapAcl(ctx context.Context, _ *pb.BootstrapAclRequest) (*pb.BootstrapAclResponse, error) {
	if a.fromFile {
		return nil, status.Error(codes.FailedPrecondition, "this cluster's first management token is the secret in "+
			"the file of serve --acl-bootstrap-file, which its leader bootstraps: use that secret")
	}
	if a.tokens.ACLBootstrapped() {
		return nil, errBootstrapped
	}
	if err := statusOf(a.store.ReadBarrier(ctx)); err != nil {
		return nil, err
	}
	if a.tokens.ACLBootstrapped() {
		return nil, errBootstrapped
	}
	tok, secret := newToken(BootstrapTokenName, pb.AclRole_ACL_ROLE_MANAGEMENT, nil)
	res, err := a.apply(ctx, BootstrapCommand(tok))
	if err != nil {
		return nil, err
	}
	if res.GetCode() == pb.ResultCode_RESULT_CODE_ALREADY_EXISTS {
		return nil, errBootstrapped // another bootstrap committed after the barrier
	}
	if err := okResult(res); err != nil {
		return nil, err
	}
	return &pb.BootstrapAclResponse{Token: a.issued(tok, res), Secret: secret}, nil
}

func (a *aclService) CreateAclToken(ctx context.Context, req *pb.CreateAclTokenRequest) (*pb.CreateAclTokenResponse, error) {
	if err := validTokenRequest(req); err != nil {
		return nil, err
	}
	if req.GetRole() == pb.AclRole_ACL_ROLE_CHECKIN {
		what := fmt.Sprintf("ACL token %q: role checkin", req.GetName())
		if err := versionNeeded(ctx, a.store, a.clusterVersion, what, "tokens/"+req.GetName(), fsm.CheckinsVersion); err != nil {
			return nil, err
		}
	}
	tok, secret := newToken(req.GetName(), req.GetRole(), req.GetSelector())
	tok.Pools, tok.MaxConcurrency = req.GetPools(), req.GetMaxConcurrency()
	res, err := a.apply(ctx, &pb.Command{Kind: &pb.Command_CreateAclToken{CreateAclToken: &pb.CreateAclTokenCommand{
		Token: tok, Ttl: req.GetTtl(),
	}}})
	if err != nil {
		return nil, err
	}
	if err := okResult(res); err != nil {
		return nil, err
	}
	return &pb.CreateAclTokenResponse{Token: a.issued(tok, res), Secret: secret}, nil
}

func (a *aclService) ListAclTokens(ctx context.Context, _ *pb.ListAclTokensRequest) (*pb.ListAclTokensResponse, error) {
	if err := statusOf(a.store.ReadBarrier(ctx)); err != nil {
		return nil, err
	}
	return &pb.ListAclTokensResponse{Tokens: a.tokens.ACLTokens()}, nil
}

func (a *aclService) DeleteAclToken(ctx context.Context, req *pb.DeleteAclTokenRequest) (*pb.DeleteAclTokenResponse, error) {
	id := req.GetAccessorId()
	switch {
	case id == "":
		return nil, fieldError("accessor_id", "required")
	case len(id) > maxAccessorIDLen:
		return nil, fieldError("accessor_id", fmt.Sprintf("at most %d bytes", maxAccessorIDLen))
	}
	res, err := a.apply(ctx, &pb.Command{Kind: &pb.Command_DeleteAclToken{DeleteAclToken: &pb.DeleteAclTokenCommand{AccessorId: id}}})
	if err != nil {
		return nil, err
	}
	if res.GetCode() == pb.ResultCode_RESULT_CODE_INVALID {
		// The API checked the request: the rule broken is one of the
		// state's (the last management token stays).
		return nil, status.Error(codes.FailedPrecondition, res.GetMessage())
	}
	if err := okResult(res); err != nil {
		return nil, err
	}
	return &pb.DeleteAclTokenResponse{}, nil
}

// apply commits cmd as the caller's. Unlike jobService.apply it hands back
// results that are not OK: each method maps the ACL refusals to its own
// codes.
func (a *aclService) apply(ctx context.Context, cmd *pb.Command) (*pb.CommandResult, error) {
	a.audit.ensure(ctx)
	cmd.Caller = &pb.Caller{Principal: PrincipalFrom(ctx).Name}
	res, err := a.store.Apply(ctx, cmd)
	if err != nil {
		return nil, statusOf(err)
	}
	return res, nil
}

func okResult(res *pb.CommandResult) error {
	if res.GetCode() != pb.ResultCode_RESULT_CODE_OK {
		return resultStatus(res)
	}
	return nil
}

func validTokenRequest(req *pb.CreateAclTokenRequest) error {
	name := req.GetName()
	switch {
	case name == "":
		return fieldError("name", "required")
	case strings.EqualFold(name, Anonymous):
		return fieldError("name", fmt.Sprintf("%q is reserved for callers without a token", Anonymous))
	case !tokenNamePattern.MatchString(name):
		return fieldError("name", "must match "+tokenNameRule)
	}
	role := req.GetRole()
	if _, known := roleNames[role]; !known {
		return fieldError("role", "required: management, write, read, worker or checkin")
	}
	if err := validTokenBindings(req); err != nil {
		return err
	}
	sel := req.GetSelector()
	if len(sel) == 0 {
		return nil
	}
	if role != pb.AclRole_ACL_ROLE_READ && role != pb.AclRole_ACL_ROLE_WRITE && role != pb.AclRole_ACL_ROLE_CHECKIN {
		// A scoped management token could create an unscoped one.
		return fieldError("selector", "only read, write and checkin tokens take a selector, not "+RoleName(role))
	}
	return selectorError(jobspec.ValidateSelector(sel))
}

// maxTokenPools bounds the pools of a worker token, maxTokenTTL its ttl
// (beyond it, a token that never expires says what is meant).
const (
	maxTokenPools = 64
	maxTokenTTL   = 10 * 365 * 24 * time.Hour
)

// validTokenBindings checks what binds a token: a worker token's pools
// (required) and concurrency cap (worker tokens only), any token's ttl.
func validTokenBindings(req *pb.CreateAclTokenRequest) error {
	if ttl := req.GetTtl(); ttl != nil {
		if d := ttl.AsDuration(); !ttl.IsValid() || d < time.Second || d > maxTokenTTL {
			return fieldError("ttl", fmt.Sprintf("must be between 1s and %s, got %s", maxTokenTTL, d))
		}
	}
	pools, limit := req.GetPools(), req.GetMaxConcurrency()
	if req.GetRole() != pb.AclRole_ACL_ROLE_WORKER {
		switch {
		case len(pools) > 0:
			return fieldError("pools", "only worker tokens are bound to pools, not "+RoleName(req.GetRole()))
		case limit > 0:
			return fieldError("max_concurrency", "only worker tokens take it, not "+RoleName(req.GetRole()))
		}
		return nil
	}
	switch {
	case len(pools) == 0:
		return fieldError("pools", "required for a worker token: the pools whose attempts it may take")
	case len(pools) > maxTokenPools:
		return fieldError("pools", fmt.Sprintf("at most %d", maxTokenPools))
	case limit > remote.MaxConcurrency:
		return fieldError("max_concurrency", fmt.Sprintf("at most %d, the most a worker may declare", remote.MaxConcurrency))
	}
	for i, p := range pools {
		if jobspec.ValidateName(p) != nil {
			return fieldError("pools", fmt.Sprintf("%q %s", p, jobspec.NameRule))
		}
		if slices.Contains(pools[:i], p) {
			return fieldError("pools", fmt.Sprintf("%q given twice", p))
		}
	}
	return nil
}

// selectorError is InvalidArgument listing every broken selector rule.
func selectorError(err error) error {
	var ve *jobspec.ValidationError
	if err == nil || !errors.As(err, &ve) {
		return err
	}
	rules := make([]string, len(ve.Violations))
	violations := make([]*errdetails.BadRequest_FieldViolation, len(ve.Violations))
	for i, v := range ve.Violations {
		rules[i] = v.Rule
		violations[i] = &errdetails.BadRequest_FieldViolation{Field: v.Field, Description: v.Rule}
	}
	return badRequest("selector: "+strings.Join(rules, "; "), violations...)
}

// newToken is a token with a fresh accessor ID and secret (32 random
// bytes), and the secret.
func newToken(name string, role pb.AclRole, selector map[string]string) (*pb.AclToken, string) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	secret := base64.RawURLEncoding.EncodeToString(b[:])
	return tokenWithSecret(name, role, selector, secret), secret
}

// tokenWithSecret is a token with a fresh accessor ID whose secret is
// secret.
func tokenWithSecret(name string, role pb.AclRole, selector map[string]string, secret string) *pb.AclToken {
	return &pb.AclToken{
		AccessorId: rand.Text(),
		Name:       name,
		Role:       role,
		Selector:   selector,
		SecretHash: hashSecret(secret),
	}
}

// BootstrapCommand is the bootstrap_acl command that stores tok.
func BootstrapCommand(tok *pb.AclToken) *pb.Command {
	return &pb.Command{Kind: &pb.Command_BootstrapAcl{BootstrapAcl: &pb.BootstrapAclCommand{Token: tok}}}
}

// issued is the token as its creator sees it: as stored (the leader's
// created_at and expires_at), without the hash. A leader of a release from
// before the result carried it answers without: then the token as sent,
// dated by this node's clock.
func (a *aclService) issued(t *pb.AclToken, res *pb.CommandResult) *pb.AclToken {
	if stored := res.GetAclToken(); stored != nil {
		return stored
	}
	out := proto.CloneOf(t)
	out.SecretHash = nil
	out.CreatedAt = timestamppb.New(a.now())
	return out
}
