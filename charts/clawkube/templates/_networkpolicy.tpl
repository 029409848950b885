{{/* Egress to the cluster DNS (any namespace's kube-dns pods: 1.20 namespaces carry no name label). */}}
{{- define "clawkube.dnsEgress" -}}
{{- if .Values.networkPolicy.allowDns }}
- to:
    - namespaceSelector: {}
      podSelector:
        matchLabels:
          k8s-app: kube-dns
  ports:
    - protocol: UDP
      port: 53
    - protocol: TCP
      port: 53
{{- end }}
{{- end }}

{{/* Egress to {cidrs: [...], ports: [...]}; nothing when cidrs is empty. */}}
{{- define "clawkube.cidrEgress" -}}
{{- if .cidrs }}
- to:
    {{- range .cidrs }}
    - ipBlock:
        cidr: {{ . }}
    {{- end }}
  ports:
    {{- range .ports }}
    - protocol: TCP
      port: {{ . }}
    {{- end }}
{{- end }}
{{- end }}

{{/* `egress:` from a list of rendered rule lists; `egress: []` (deny all) when they are all empty. */}}
{{- define "clawkube.egressBlock" -}}
{{- $rules := list }}
{{- range . }}{{ with trim . }}{{ $rules = append $rules . }}{{ end }}{{ end }}
{{- if $rules }}
egress:
{{- range $rules }}
{{ . }}
{{- end }}
{{- else }}
egress: []
{{- end }}
{{- end }}

{{/* The artifact store's egress as {cidrs, ports} (JSON): networkPolicy.artifactStore, with what it leaves empty
     derived from artifacts.endpoint: an IP address host -> <ip>/32 (a host name cannot be: NOTES.txt says so);
     the endpoint's port, else 80 for http and 443 for https or no endpoint (AWS S3). */}}
{{- define "clawkube.artifactStoreEgress" -}}
{{- $np := .Values.networkPolicy.artifactStore }}
{{- $u := dict }}
{{- with .Values.artifacts.endpoint }}{{ $u = urlParse . }}{{ end }}
{{- $hostport := get $u "host" | default "" }}
{{- $host := regexReplaceAll ":[0-9]+$" $hostport "" }}
{{- $port := trimPrefix ":" (regexFind ":[0-9]+$" $hostport) }}
{{- $cidrs := $np.cidrs | default list }}
{{- if and (not $cidrs) (regexMatch "^[0-9]{1,3}([.][0-9]{1,3}){3}$" $host) }}
{{- $cidrs = list (printf "%s/32" $host) }}
{{- end }}
{{- $ports := $np.ports | default list }}
{{- if not $ports }}
{{- if $port }}{{ $ports = list (atoi $port) }}
{{- else if eq (get $u "scheme") "http" }}{{ $ports = list 80 }}
{{- else }}{{ $ports = list 443 }}{{ end }}
{{- end }}
{{- dict "cidrs" $cidrs "ports" $ports "host" $host "to" ($np.to | default list) | toJson }}
{{- end }}

{{/* Egress to the artifact store: its IP blocks and `to` peers (an in-cluster store), on its ports. */}}
{{- define "clawkube.storeEgress" -}}
{{- if or .cidrs .to }}
- to:
    {{- range .cidrs }}
    - ipBlock:
        cidr: {{ . }}
    {{- end }}
    {{- with .to }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  ports:
    {{- range .ports }}
    - protocol: TCP
      port: {{ . }}
    {{- end }}
{{- end }}
{{- end }}

{{/* The warmup relay (operator/clawkube/execution/relay.py RELAY_PORT): grading pods -> agent pods labelled
     clawkube.io/warmup-relay=true, that port only. */}}
{{- define "clawkube.warmupRelayPort" -}}47419{{- end }}
{{- define "clawkube.warmupRelaySelector" -}}
clawkube.io/warmup-relay: "true"
{{- end }}
{{- define "clawkube.warmupRelayEgress" -}}
- to:
    - podSelector:
        matchLabels:
          {{- include "clawkube.agentPodSelector" . | nindent 10 }}
          {{- include "clawkube.warmupRelaySelector" . | nindent 10 }}
  ports:
    - protocol: TCP
      port: {{ include "clawkube.warmupRelayPort" . }}
{{- end }}
