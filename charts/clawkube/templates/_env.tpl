{{/* The operator's settings as CLAWKUBE_* environment variables: one per field of clawkube.settings.Settings
     (field foo_bar <- CLAWKUBE_FOO_BAR). Optional values left null are not set, so the operator's default holds. */}}
{{- define "clawkube.operatorEnv" -}}
{{- $v := .Values }}
# empty: every namespace (rbac.clusterWide)
- name: CLAWKUBE_NAMESPACES
  value: {{ if include "clawkube.clusterWide" . }}""{{ else }}{{ include "clawkube.servedNamespaces" . | fromJsonArray | join "," | quote }}{{ end }}
- name: CLAWKUBE_LIVENESS_PORT
  value: {{ $v.operator.livenessPort | quote }}
- name: CLAWKUBE_METRICS_PORT
  value: {{ $v.operator.metricsPort | quote }}
- name: CLAWKUBE_AGENT_IMAGE
  value: {{ $v.agents.image | quote }}
- name: CLAWKUBE_GRADER_IMAGE
  value: {{ default $v.agents.image $v.agents.graderImage | quote }}
- name: CLAWKUBE_IMAGE_PULL_POLICY
  value: {{ $v.agents.imagePullPolicy | quote }}
{{- with $v.agents.harnessImages }}
- name: CLAWKUBE_HARNESS_IMAGES
  value: {{ include "clawkube.pairs" . | quote }}
{{- end }}
{{- with $v.agents.runtimeClassName }}
- name: CLAWKUBE_AGENT_RUNTIME_CLASS
  value: {{ . | quote }}
{{- end }}
{{- with $v.agents.modelApiSecret }}
- name: CLAWKUBE_MODEL_API_SECRET
  value: {{ . | quote }}
{{- end }}
{{- with include "clawkube.trialServiceAccountName" . }}
- name: CLAWKUBE_SERVICE_ACCOUNT
  value: {{ . | quote }}
{{- end }}
- name: CLAWKUBE_ARTIFACT_BUCKET
  value: {{ $v.artifacts.bucket | quote }}
- name: CLAWKUBE_ARTIFACT_PREFIX
  value: {{ $v.artifacts.prefix | quote }}
- name: CLAWKUBE_ARTIFACT_ENDPOINT
  value: {{ $v.artifacts.endpoint | quote }}
- name: CLAWKUBE_ARTIFACT_REGION
  value: {{ $v.artifacts.region | quote }}
- name: CLAWKUBE_ARTIFACT_CREDENTIALS_SECRET
  value: {{ $v.artifacts.credentialsSecret | quote }}
{{- with $v.tasks.root }}
- name: CLAWKUBE_TASKS_ROOT
  value: {{ . | quote }}
{{- end }}
- name: CLAWKUBE_MAX_CONCURRENT_PODS
  value: {{ $v.concurrency.maxConcurrentPods | quote }}
{{- include "clawkube.optionalEnv" (list "CLAWKUBE_REQUEUE_SECONDS" $v.operator.requeueSeconds) }}
{{- include "clawkube.optionalEnv" (list "CLAWKUBE_PENDING_TIMEOUT_SECONDS" $v.operator.pendingTimeoutSeconds) }}
{{- include "clawkube.optionalEnv" (list "CLAWKUBE_AGENT_GRACE_SECONDS" $v.operator.agentGraceSeconds) }}
{{- include "clawkube.optionalEnv" (list "CLAWKUBE_GRADE_GRACE_SECONDS" $v.operator.gradeGraceSeconds) }}
{{- include "clawkube.optionalEnv" (list "CLAWKUBE_DEADLINE_SLACK_SECONDS" $v.operator.deadlineSlackSeconds) }}
{{- include "clawkube.optionalEnv" (list "CLAWKUBE_UPLOAD_RETRY_SECONDS" $v.artifacts.uploadRetrySeconds) }}
{{- include "clawkube.optionalEnv" (list "CLAWKUBE_S3_ATTEMPTS" $v.artifacts.s3Attempts) }}
{{- include "clawkube.optionalEnv" (list "CLAWKUBE_PRESIGNED_GRANTS" $v.artifacts.presignedGrants) }}
{{- with $v.artifacts.credentialsSecret }}
# The operator itself reads task sources and results from the default store.
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: AWS_ACCESS_KEY_ID
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: AWS_SECRET_ACCESS_KEY
{{- end }}
{{- end }}

{{/* A map as `k1=v1,k2=v2` (keys sorted), the form clawkube.settings reads map fields in. */}}
{{- define "clawkube.pairs" -}}
{{- $items := list }}
{{- range $k, $v := . }}{{ $items = append $items (printf "%s=%s" $k $v) }}{{ end }}
{{- join "," $items }}
{{- end }}

{{/* `- name: NAME, value: "VALUE"` unless VALUE is null: (list NAME VALUE). */}}
{{- define "clawkube.optionalEnv" -}}
{{- $value := index . 1 }}
{{- if not (kindIs "invalid" $value) }}
- name: {{ index . 0 }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end }}

{{/* Name of the trial pods' ServiceAccount; empty when the operator's default is kept. */}}
{{- define "clawkube.trialServiceAccountName" -}}
{{- $sa := .Values.agents.serviceAccount }}
{{- if $sa.create }}
{{- default (printf "%s-trial" (include "clawkube.fullname" .) | trunc 63 | trimSuffix "-") $sa.name }}
{{- else }}
{{- $sa.name }}
{{- end }}
{{- end }}
