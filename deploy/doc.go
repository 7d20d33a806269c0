// Package deploy holds no code: its tests check the files that ship raftcron
// (Dockerfile, compose, Kubernetes manifests, the Helm chart, the systemd
// unit, Prometheus alerts and the Grafana dashboard) against the tools and
// types that consume them, and against the metrics a node really exports.
package deploy
