package config

import (
	"strings"
	"testing"
)

const minimal = `
names:
  servingCertificateSecret: pinniped-concierge-api-tls-serving-certificate
  credentialIssuer: pinniped-concierge-config
  apiService: pinniped-concierge-api
`

func TestParseDefaults(t *testing.T) {
	c, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if *c.APIGroupSuffix != "pinniped.dev" || *c.AggregatedAPIServerPort != 10250 || c.Log.Level != "info" || c.Signer != nil {
		t.Errorf("unexpected defaults: %+v", c)
	}
	if *c.API.ServingCertificate.DurationSeconds != 365*24*3600 {
		t.Errorf("duration default %d", *c.API.ServingCertificate.DurationSeconds)
	}
	if got := c.AgentDeploymentName(); got != "pinniped-concierge-kube-cert-agent" {
		t.Errorf("agent Deployment name %q", got)
	}
	if c.Names.AgentServiceAccount != "pinniped-concierge-kube-cert-agent" || c.KubeCertAgent.Image != "" {
		t.Errorf("agent defaults: %+v, %+v", c.Names, c.KubeCertAgent)
	}
}

func TestParseKubeCertAgent(t *testing.T) {
	c, err := Parse([]byte(minimal + `  agentServiceAccount: agent-sa
kubeCertAgent:
  namePrefix: tuna-agent-
  image: example.com/agent:1
  imagePullSecrets: [pull-a, pull-b]
  priorityClassName: system-cluster-critical
`))
	if err != nil {
		t.Fatal(err)
	}
	a := c.KubeCertAgent
	if c.AgentDeploymentName() != "tuna-agent" || c.Names.AgentServiceAccount != "agent-sa" || a.Image != "example.com/agent:1" ||
		strings.Join(a.ImagePullSecrets, ",") != "pull-a,pull-b" || a.PriorityClassName != "system-cluster-critical" {
		t.Errorf("unexpected: %s, %+v, %+v", c.AgentDeploymentName(), c.Names, a)
	}
	// Without its own name, the ServiceAccount is named after the Deployment.
	c, err = Parse([]byte(minimal + "kubeCertAgent:\n  namePrefix: tuna-agent-\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Names.AgentServiceAccount != "tuna-agent" {
		t.Errorf("agent ServiceAccount %q", c.Names.AgentServiceAccount)
	}
}

func TestParseErrors(t *testing.T) {
	tests := map[string]struct {
		doc  string
		want []string
	}{
		"unknown field": {doc: minimal + "bogus: 1\n", want: []string{"bogus"}},
		"bad suffix and port and level": {
			doc:  minimal + "apiGroupSuffix: nodots\naggregatedAPIServerPort: 80\nlog:\n  level: loud\n",
			want: []string{"apiGroupSuffix", "aggregatedAPIServerPort", "log.level"},
		},
		"missing names": {doc: "{}", want: []string{"names.servingCertificateSecret", "names.credentialIssuer", "names.apiService"}},
		"renew after expiry": {
			doc:  minimal + "api:\n  servingCertificate:\n    durationSeconds: 10\n    renewBeforeSeconds: 20\n",
			want: []string{"api.servingCertificate"},
		},
		"half a signer":          {doc: minimal + "signer:\n  certificateFile: /a\n", want: []string{"signer"}},
		"negative sampling rate": {doc: minimal + "tracing: {samplingRatePerMillion: -1}\n", want: []string{"tracing.samplingRatePerMillion: Invalid value: -1"}},
		"bad agent settings": {
			doc:  minimal + "  agentServiceAccount: Bad_SA\nkubeCertAgent:\n  namePrefix: \"-\"\n  image: \" x\"\n  imagePullSecrets: [ok, \"no way\"]\n  priorityClassName: UPPER\n",
			want: []string{"kubeCertAgent.namePrefix", "names.agentServiceAccount", "kubeCertAgent.imagePullSecrets[1]", "kubeCertAgent.priorityClassName", "kubeCertAgent.image"},
		},
		"log format text, unknown cipher, discovery URL without a scheme, bad proxy names": {
			doc: minimal + "  impersonationProxyServiceAccount: Bad\n  impersonationProxyLegacySecret: \"a b\"\n" +
				"log: {format: text}\ntls: {onedottwo: {allowedCiphers: [TLS_RSA_WITH_RC4_128_SHA]}}\ndiscovery: {url: api.example.com}\n",
			want: []string{
				"log.format: invalid log format, valid choices are the empty string or 'json'",
				"tls.onedottwo.allowedCiphers: unrecognized ciphers [TLS_RSA_WITH_RC4_128_SHA], ciphers must be from list [",
				`discovery.url: "api.example.com" is not an https URL with a host`,
				"names.impersonationProxyServiceAccount", "names.impersonationProxyLegacySecret",
			},
		},
		"negative agent ids and an unknown strategy": {
			doc: minimal + "kubeCertAgent: {runAsUser: -1, runAsGroup: -2, deploymentStrategyType: Canary}\n",
			want: []string{
				"kubeCertAgent.runAsUser: runAsUser must be 0 or greater (instead of -1)",
				"kubeCertAgent.runAsGroup: runAsGroup must be 0 or greater (instead of -2)",
				"kubeCertAgent.deploymentStrategyType: deploymentStrategyType must be one of [Recreate RollingUpdate] (instead of Canary)",
			},
		},
		"unknown key in tls": {doc: minimal + "tls: {onedotthree: {}}\n", want: []string{`unknown field "onedotthree"`}},
		"reserved name exceptions that are not reserved names or are patterns": {
			doc:  minimal + "allowedReservedNames:\n  usernames: [admin]\n  groups: [\"system:*\"]\n",
			want: []string{`allowedReservedNames: usernames: "admin"`, `groups: "system:*"`},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if err == nil {
				t.Fatal("expected an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// Every key upstream's install writes is accepted, with upstream's values.
func TestParseUpstreamKeys(t *testing.T) {
	c, err := Parse([]byte(minimal + `  impersonationLoadBalancerService: lb
  impersonationClusterIPService: cip
  impersonationTLSCertificateSecret: tls
  impersonationCACertificateSecret: ca
  impersonationSignerSecret: signer
  agentServiceAccount: agent
  impersonationProxyServiceAccount: proxy-sa
  impersonationProxyLegacySecret: proxy-legacy
kubeCertAgent:
  runAsUser: 1001
  runAsGroup: 1002
  deploymentStrategyType: Recreate
discovery:
  url: https://api.example.com:6443
impersonationProxyServerPort: 9444
log:
  level: debug
  format: json
tls:
  onedottwo:
    allowedCiphers: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA]
`))
	if err != nil {
		t.Fatal(err)
	}
	n := c.Names
	if n.ImpersonationProxyServiceAccount != "proxy-sa" || n.ImpersonationProxyLegacySecret != "proxy-legacy" ||
		n.ImpersonationLoadBalancerService != "lb" || n.ImpersonationSignerSecret != "signer" || n.AgentServiceAccount != "agent" {
		t.Errorf("names %+v", n)
	}
	if c.Discovery.URL == nil || *c.Discovery.URL != "https://api.example.com:6443" || *c.ImpersonationProxyServerPort != 9444 {
		t.Errorf("discovery %v, proxy port %d", c.Discovery.URL, *c.ImpersonationProxyServerPort)
	}
	if a := c.KubeCertAgent; *a.RunAsUser != 1001 || *a.RunAsGroup != 1002 || *a.DeploymentStrategyType != "Recreate" {
		t.Errorf("kubeCertAgent %+v", a)
	}
	if got := c.TLSProfile.CipherNames(); len(got) != 1 || got[0] != "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256" {
		t.Errorf("TLS 1.2 ciphers %v, want only TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", got)
	}
	// Without them, upstream's names.
	c, err = Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if c.Names.ImpersonationProxyServiceAccount != "pinniped-concierge-impersonation-proxy" ||
		c.Names.ImpersonationProxyLegacySecret != "pinniped-concierge-impersonation-proxy" || c.Discovery.URL != nil {
		t.Errorf("defaults: %+v, discovery %v", c.Names, c.Discovery.URL)
	}
}

func TestParseAllowedReservedNames(t *testing.T) {
	c, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.AllowedReservedNames.Usernames)+len(c.AllowedReservedNames.Groups) != 0 {
		t.Errorf("reserved names are allowed by default: %+v", c.AllowedReservedNames)
	}
	c, err = Parse([]byte(minimal + "allowedReservedNames:\n  groups: [\"system:monitoring\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.AllowedReservedNames.Refused("prometheus", []string{"system:monitoring"}); got != "" {
		t.Errorf("the configured exception is refused: %s", got)
	}
}

// Pinniped's audit key is accepted with its values, and any other value is refused by name.
func TestParseAudit(t *testing.T) {
	c, err := Parse([]byte(minimal + "audit:\n  logUsernamesAndGroups: enabled\n"))
	if err != nil || !c.Audit.LogUsernamesAndGroups.Enabled() {
		t.Fatalf("enabled: %+v, %v", c, err)
	}
	if _, err := Parse([]byte(minimal + "audit:\n  logUsernamesAndGroups: yes\n")); err == nil || !strings.Contains(err.Error(), `audit.logUsernamesAndGroups: must be "enabled", "disabled" or empty`) {
		t.Fatalf("got %v", err)
	}
}
