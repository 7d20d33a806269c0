{{- define "raftcron.fullname" -}}
{{- printf "%s" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "raftcron.labels" -}}
app.kubernetes.io/name: raftcron
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The advertised address of pod i: its name under the headless Service. */}}
{{- define "raftcron.podAddr" -}}
{{- $ := index . 0 -}}{{- $i := index . 1 -}}
{{- printf "%s-%d.%s.%s.svc.cluster.local:%d" (include "raftcron.fullname" $) $i (include "raftcron.fullname" $) $.Release.Namespace (int $.Values.ports.grpc) -}}
{{- end -}}

{{- define "raftcron.peers" -}}
{{- $peers := list -}}
{{- range $i := until (int .Values.replicas) -}}
{{- $peers = append $peers (printf "%s-%d=%s" (include "raftcron.fullname" $) $i (include "raftcron.podAddr" (list $ $i))) -}}
{{- end -}}
{{- join "," $peers -}}
{{- end -}}

{{/* --http-host: the client Service's names, the pod's own, and .Values.httpHosts. */}}
{{- define "raftcron.httpHosts" -}}
{{- $name := include "raftcron.fullname" . -}}
{{- $ns := .Release.Namespace -}}
{{- $hosts := list (printf "%s-client.%s.svc" $name $ns) (printf "%s-client.%s.svc.cluster.local" $name $ns) (printf "$(POD_NAME).%s.%s.svc.cluster.local" $name $ns) -}}
{{- join "," (concat $hosts .Values.httpHosts) -}}
{{- end -}}
