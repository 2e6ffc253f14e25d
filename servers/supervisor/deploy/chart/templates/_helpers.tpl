{{/* Labels on every object, as in the plain manifests in the folder above the chart. */}}
{{- define "supervisor.labels" -}}
app: pinniped-supervisor
{{- end }}
