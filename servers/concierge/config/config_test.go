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
		"half a signer": {doc: minimal + "signer:\n  certificateFile: /a\n", want: []string{"signer"}},
		"bad agent settings": {
			doc:  minimal + "  agentServiceAccount: Bad_SA\nkubeCertAgent:\n  namePrefix: \"-\"\n  image: \" x\"\n  imagePullSecrets: [ok, \"no way\"]\n  priorityClassName: UPPER\n",
			want: []string{"kubeCertAgent.namePrefix", "names.agentServiceAccount", "kubeCertAgent.imagePullSecrets[1]", "kubeCertAgent.priorityClassName", "kubeCertAgent.image"},
		},
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
