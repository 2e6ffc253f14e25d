{{/* The label of the plain manifests in the folder above the chart: on every object and the pods. */}}
{{- define "local-user-authenticator.labels" -}}
app: local-user-authenticator
{{- end }}

{{/*
Labels on every object the chart renders, in its metadata: the app label of the plain manifests
and the labels Helm and Kubernetes recommend, naming the chart and the release. Selectors and pod
templates keep the plain manifests' labels: a Deployment's selector cannot change on upgrade, and
the chart's version in a pod template would restart the pods on every chart upgrade.
*/}}
{{- define "local-user-authenticator.objectLabels" -}}
{{ include "local-user-authenticator.labels" . }}
{{ include "local-user-authenticator.helmLabels" . }}
{{- end }}

{{/* The labels Helm and Kubernetes recommend. */}}
{{- define "local-user-authenticator.helmLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | replace "+" "_" | trunc 63 | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The namespace of the server's objects and users: the value namespace, or when it is empty the release's
(`helm install --namespace`). templates/namespace.yaml says which of the two the chart creates.
*/}}
{{- define "local-user-authenticator.namespace" -}}
{{- .Values.namespace | default .Release.Namespace }}
{{- end }}
