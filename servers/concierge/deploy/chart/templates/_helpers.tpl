{{/* Labels on every object, as in the plain manifests in the folder above the chart. */}}
{{- define "concierge.labels" -}}
app: pinniped-concierge
{{- end }}
