{{/*
The namespace of the server's objects and users: the value namespace, or when it is empty the release's
(`helm install --namespace`). templates/namespace.yaml says which of the two the chart creates.
*/}}
{{- define "local-user-authenticator.namespace" -}}
{{- .Values.namespace | default .Release.Namespace }}
{{- end }}
