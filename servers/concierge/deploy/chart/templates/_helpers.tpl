{{/*
The label of the plain manifests in the folder above the chart: on every object, on the pods and,
through the configuration, on the objects the Concierge makes.
*/}}
{{- define "concierge.labels" -}}
app: pinniped-concierge
{{- end }}

{{/*
Labels on every object the chart renders, in its metadata: the app label of the plain manifests
and the labels Helm and Kubernetes recommend, naming the chart and the release. Selectors and pod
templates keep the plain manifests' labels: a Deployment's selector cannot change on upgrade, and
the chart's version in a pod template would restart the pods on every chart upgrade.
*/}}
{{- define "concierge.objectLabels" -}}
{{ include "concierge.labels" . }}
{{ include "concierge.helmLabels" . }}
{{- end }}

{{/* The labels Helm and Kubernetes recommend: the only ones on the CRDs, as generated unlabelled. */}}
{{- define "concierge.helmLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | replace "+" "_" | trunc 63 | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The namespace of the Concierge's objects: the value namespace, or when it is empty the release's
(`helm install --namespace`). templates/namespace.yaml says which of the two the chart creates.
*/}}
{{- define "concierge.namespace" -}}
{{- .Values.namespace | default .Release.Namespace }}
{{- end }}

{{/*
The CredentialIssuer's spec.impersonationProxy, as YAML: the impersonationProxy values, and over
them those of concierge.credentialIssuerConfig. That is where the community (Bitnami) Pinniped
chart takes the whole CredentialIssuer spec from, as YAML text (rendered as a template first) or
as a map, so values written for that chart install here unchanged and mean the same.
*/}}
{{- define "concierge.impersonationProxy" -}}
{{- $proxy := deepCopy .Values.impersonationProxy }}
{{- $config := get (.Values.concierge | default dict) "credentialIssuerConfig" }}
{{- if $config }}
{{- $spec := $config }}
{{- if kindIs "string" $config }}
{{- $spec = tpl $config . | fromYaml }}
{{- if hasKey $spec "Error" }}
{{- fail (printf "concierge.credentialIssuerConfig is not a YAML map: %s" $spec.Error) }}
{{- end }}
{{- end }}
{{- range $key, $_ := $spec }}
{{- if ne $key "impersonationProxy" }}
{{- fail (printf "concierge.credentialIssuerConfig: %q is not a field of a CredentialIssuer spec (impersonationProxy is its only one)" $key) }}
{{- end }}
{{- end }}
{{- with $spec.impersonationProxy }}
{{- include "concierge.credentialIssuerConfigFields" (list "impersonationProxy" . (list "mode" "service" "externalEndpoint" "tls")) }}
{{- with .service }}
{{- include "concierge.credentialIssuerConfigFields" (list "impersonationProxy.service" . (list "type" "annotations" "loadBalancerIP")) }}
{{- end }}
{{- with .tls }}
{{- include "concierge.credentialIssuerConfigFields" (list "impersonationProxy.tls" . (list "certificateAuthorityData" "secretName")) }}
{{- end }}
{{- $proxy = mergeOverwrite $proxy (deepCopy .) }}
{{- end }}
{{- end }}
{{- toYaml $proxy }}
{{- end }}

{{/*
Fails unless the map at a path of concierge.credentialIssuerConfig has only the given fields: the
values schema checks that value only as a map, not as the YAML text it may be, and a misspelt
field would otherwise be left out of the spec unnoticed. Takes (list path value fields).
*/}}
{{- define "concierge.credentialIssuerConfigFields" -}}
{{- $path := index . 0 }}
{{- $value := index . 1 }}
{{- $fields := index . 2 }}
{{- if not (kindIs "map" $value) }}
{{- fail (printf "concierge.credentialIssuerConfig: %s must be a map" $path) }}
{{- end }}
{{- range $key, $_ := $value }}
{{- if not (has $key $fields) }}
{{- fail (printf "concierge.credentialIssuerConfig: %q is not a field of %s (%s)" $key $path (join ", " $fields)) }}
{{- end }}
{{- end }}
{{- end }}
