{{/* Labels on every object, as in the plain manifests in the folder above the chart. */}}
{{- define "supervisor.labels" -}}
app: pinniped-supervisor
{{- end }}

{{/*
The namespace of the Supervisor's objects: the value namespace, or when it is empty the release's
(`helm install --namespace`). templates/namespace.yaml says which of the two the chart creates.
*/}}
{{- define "supervisor.namespace" -}}
{{- .Values.namespace | default .Release.Namespace }}
{{- end }}
