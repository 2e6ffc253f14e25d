package apiserver

import (
	"testing"

	"sealion.dev/core/apis/supervisor/clientsecret"
	clientsecretv1alpha1 "sealion.dev/core/apis/supervisor/clientsecret/v1alpha1"
)

func TestSchemeFollowsSuffix(t *testing.T) {
	for suffix, wantGroup := range map[string]string{
		"pinniped.dev": "clientsecret.supervisor.pinniped.dev",
		"tuna.io":      "clientsecret.supervisor.tuna.io",
	} {
		s, err := NewScheme(suffix)
		if err != nil {
			t.Fatal(err)
		}
		if s.ClientSecretGV.Group != wantGroup || s.ClientSecretGV.Version != "v1alpha1" ||
			s.OIDCClientGV.String() != "config.supervisor."+suffix+"/v1alpha1" {
			t.Fatalf("suffix %s: groups %v %v", suffix, s.ClientSecretGV, s.OIDCClientGV)
		}
		body := []byte(`{"apiVersion":"` + wantGroup + `/v1alpha1","kind":"OIDCClientSecretRequest",` +
			`"metadata":{"name":"client.oauth.pinniped.dev-a"},"spec":{"generateNewSecret":true,"revokeOldSecrets":true}}`)
		obj, gvk, err := s.Codecs.UniversalDecoder().Decode(body, nil, nil)
		if err != nil {
			t.Fatalf("suffix %s: decoding: %v", suffix, err)
		}
		req, ok := obj.(*clientsecret.OIDCClientSecretRequest)
		if !ok || gvk.Group != wantGroup || req.Name != "client.oauth.pinniped.dev-a" || !req.Spec.GenerateNewSecret || !req.Spec.RevokeOldSecrets {
			t.Fatalf("suffix %s: decoded %T %v %+v", suffix, obj, gvk, obj)
		}
		req.Status.TotalClientSecrets = 3
		var out clientsecretv1alpha1.OIDCClientSecretRequest
		if err := s.Convert(req, &out, nil); err != nil || out.Status.TotalClientSecrets != 3 || !out.Spec.RevokeOldSecrets {
			t.Fatalf("suffix %s: converting back: %v %+v", suffix, err, out)
		}
	}
	if _, err := NewScheme("nodots"); err == nil {
		t.Error("a suffix without a dot was accepted")
	}
}

func TestCompleteNeedsTheStorageDependencies(t *testing.T) {
	s, err := NewScheme("pinniped.dev")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&Config{ExtraConfig: ExtraConfig{Scheme: s}}).Complete(); err == nil {
		t.Error("Complete accepted a configuration without namespace, OIDCClient reader or store")
	}
}
