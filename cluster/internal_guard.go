package cluster

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/raftcron/raftcron/pki"
)

// guardedInternal is InternalService's description with every method
// behind requireNodePeer. The guard is part of the registration rather than
// of the server's interceptor chain, so no wiring of a node can expose
// forwarding without it; it runs before the request is even decoded.
func guardedInternal(desc grpc.ServiceDesc) *grpc.ServiceDesc {
	methods := make([]grpc.MethodDesc, len(desc.Methods))
	for i, m := range desc.Methods {
		handler := m.Handler
		m.Handler = func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
			if err := requireNodePeer(ctx); err != nil {
				return nil, err
			}
			return handler(srv, ctx, dec, ic)
		}
		methods[i] = m
	}
	desc.Methods = methods
	return &desc
}

// requireNodePeer admits a call only from a peer whose certificate chains
// to the CA and names pki.NodeSAN: another node of this cluster. An API
// client's certificate, however valid, does not do.
func requireNodePeer(ctx context.Context) error {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return status.Error(codes.Unauthenticated, "InternalService: no peer information")
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.PeerCertificates) == 0 {
		return status.Error(codes.Unauthenticated,
			"InternalService is for the nodes of this cluster: connect with TLS and a node certificate")
	}
	if !isNodePeer(info.State) {
		return status.Errorf(codes.PermissionDenied,
			"InternalService is for the nodes of this cluster: %s is not a node certificate (DNS SAN %s from the cluster's CA)",
			peerName(info.State), pki.NodeSAN)
	}
	return nil
}
