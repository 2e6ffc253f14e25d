package apiserver

import (
	"testing"

	"sealion.dev/core/apis/concierge/login"
	loginv1alpha1 "sealion.dev/core/apis/concierge/login/v1alpha1"
)

func TestSchemeFollowsSuffix(t *testing.T) {
	for suffix, wantGroup := range map[string]string{
		"pinniped.dev": "login.concierge.pinniped.dev",
		"tuna.io":      "login.concierge.tuna.io",
	} {
		s, err := NewScheme(suffix)
		if err != nil {
			t.Fatal(err)
		}
		if s.LoginGV.Group != wantGroup || s.IdentityGV.Version != "v1alpha1" {
			t.Fatalf("suffix %s: groups %v %v", suffix, s.LoginGV, s.IdentityGV)
		}
		body := []byte(`{"apiVersion":"` + wantGroup + `/v1alpha1","kind":"TokenCredentialRequest",` +
			`"spec":{"token":"t","authenticator":{"apiGroup":"authentication.concierge.` + suffix + `","kind":"JWTAuthenticator","name":"a"}}}`)
		obj, gvk, err := s.Codecs.UniversalDecoder().Decode(body, nil, nil)
		if err != nil {
			t.Fatalf("suffix %s: decoding: %v", suffix, err)
		}
		req, ok := obj.(*login.TokenCredentialRequest)
		if !ok || gvk.Group != wantGroup || req.Spec.Token != "t" || req.Spec.Authenticator.Name != "a" {
			t.Fatalf("suffix %s: decoded %T %v %+v", suffix, obj, gvk, obj)
		}
		var out loginv1alpha1.TokenCredentialRequest
		if err := s.Convert(req, &out, nil); err != nil || out.Spec.Token != "t" {
			t.Fatalf("suffix %s: converting back: %v %+v", suffix, err, out)
		}
	}
	if _, err := NewScheme("nodots"); err == nil {
		t.Error("a suffix without a dot was accepted")
	}
}
