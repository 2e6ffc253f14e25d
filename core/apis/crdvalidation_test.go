package apis_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

// TestCRDValidation runs objects through the defaulting, schema validation and CEL rules of the
// generated CRDs (including list-map key uniqueness), the way the API server admits custom
// resources.
func TestCRDValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		file string
		// object is the YAML of the custom resource, without apiVersion and kind.
		object string
		// wantErr is a substring of the expected validation error; empty means valid.
		wantErr string
		// wantDefaults maps dotted field paths to the values defaulting must fill in.
		wantDefaults map[string]string
	}{
		{
			name: "JWTAuthenticator valid",
			file: "authentication.concierge.pinniped.dev_jwtauthenticators.yaml",
			object: `
metadata: {name: jwt}
spec: {issuer: "https://issuer.example.com", audience: cluster-a}`,
		},
		{
			name: "JWTAuthenticator http issuer",
			file: "authentication.concierge.pinniped.dev_jwtauthenticators.yaml",
			object: `
metadata: {name: jwt}
spec: {issuer: "http://issuer.example.com", audience: cluster-a}`,
			wantErr: "spec.issuer",
		},
		{
			name: "JWTAuthenticator two CA sources (the controller refuses them, not the API)",
			file: "authentication.concierge.pinniped.dev_jwtauthenticators.yaml",
			object: `
metadata: {name: jwt}
spec:
  issuer: "https://issuer.example.com"
  audience: cluster-a
  tls:
    certificateAuthorityData: Zm9v
    certificateAuthorityDataSource: {kind: Secret, name: ca, key: ca.crt}`,
		},
		{
			name: "JWTAuthenticator extra without valueExpression",
			file: "authentication.concierge.pinniped.dev_jwtauthenticators.yaml",
			object: `
metadata: {name: jwt}
spec:
  issuer: "https://issuer.example.com"
  audience: cluster-a
  claims: {extra: [{key: example.com/tenant}]}`,
			wantErr: "spec.claims.extra[0].valueExpression: Required value",
		},
		{
			name: "JWTAuthenticator user validation rule without expression",
			file: "authentication.concierge.pinniped.dev_jwtauthenticators.yaml",
			object: `
metadata: {name: jwt}
spec:
  issuer: "https://issuer.example.com"
  audience: cluster-a
  userValidationRules: [{message: no}]`,
			wantErr: "spec.userValidationRules[0].expression: Required value",
		},
		{
			name: "WebhookAuthenticator CA source of unknown kind",
			file: "authentication.concierge.pinniped.dev_webhookauthenticators.yaml",
			object: `
metadata: {name: webhook}
spec:
  endpoint: "https://webhook.example.com/authenticate"
  tls: {certificateAuthorityDataSource: {kind: Pod, name: ca, key: ca.crt}}`,
			wantErr: "spec.tls.certificateAuthorityDataSource.kind",
		},
		{
			name: "CredentialIssuer service type defaults to LoadBalancer",
			file: "config.concierge.pinniped.dev_credentialissuers.yaml",
			object: `
metadata: {name: pinniped-concierge-config}
spec: {impersonationProxy: {mode: auto}}`,
			wantDefaults: map[string]string{"spec.impersonationProxy.service.type": "LoadBalancer"},
		},
		{
			name: "CredentialIssuer unknown mode",
			file: "config.concierge.pinniped.dev_credentialissuers.yaml",
			object: `
metadata: {name: pinniped-concierge-config}
spec: {impersonationProxy: {mode: sometimes}}`,
			wantErr: "spec.impersonationProxy.mode",
		},
		{
			name: "FederationDomain valid",
			file: "config.supervisor.pinniped.dev_federationdomains.yaml",
			object: `
metadata: {name: fd, namespace: supervisor}
spec:
  issuer: "https://login.example.com/issuer"
  identityProviders:
  - displayName: Corporate
    objectRef: {apiGroup: idp.supervisor.pinniped.dev, kind: OIDCIdentityProvider, name: corp}
    transforms:
      constants: [{name: prefix, type: string, stringValue: "corp:"}]
      expressions: [{type: username/v1, expression: 'strConst.prefix + username'}]`,
		},
		{
			name: "FederationDomain http issuer",
			file: "config.supervisor.pinniped.dev_federationdomains.yaml",
			object: `
metadata: {name: fd, namespace: supervisor}
spec: {issuer: "http://login.example.com"}`,
			wantErr: "issuer must be an HTTPS URL",
		},
		{
			name: "FederationDomain constant name with a dash",
			file: "config.supervisor.pinniped.dev_federationdomains.yaml",
			object: `
metadata: {name: fd, namespace: supervisor}
spec:
  issuer: "https://login.example.com"
  identityProviders:
  - displayName: Corporate
    objectRef: {apiGroup: idp.supervisor.pinniped.dev, kind: OIDCIdentityProvider, name: corp}
    transforms: {constants: [{name: my-prefix, type: string, stringValue: x}]}`,
			wantErr: "spec.identityProviders[0].transforms.constants[0].name",
		},
		{
			name: "OIDCClient valid",
			file: "config.supervisor.pinniped.dev_oidcclients.yaml",
			object: `
metadata: {name: client.oauth.pinniped.dev-webapp, namespace: supervisor}
spec:
  allowedRedirectURIs: ["https://webapp.example.com/callback", "http://127.0.0.1:8080/callback"]
  allowedGrantTypes: [authorization_code, refresh_token]
  allowedScopes: [openid, offline_access]
  tokenLifetimes: {idTokenSeconds: 600}`,
		},
		{
			name: "OIDCClient name without the prefix",
			file: "config.supervisor.pinniped.dev_oidcclients.yaml",
			object: `
metadata: {name: webapp, namespace: supervisor}
spec:
  allowedRedirectURIs: ["https://webapp.example.com/callback"]
  allowedGrantTypes: [authorization_code]
  allowedScopes: [openid]`,
			wantErr: `metadata.name: Invalid value: "webapp": metadata.name in body should match '^client\.oauth\.pinniped\.dev-'`,
		},
		{
			name: "OIDCClient plain http redirect",
			file: "config.supervisor.pinniped.dev_oidcclients.yaml",
			object: `
metadata: {name: client.oauth.pinniped.dev-webapp, namespace: supervisor}
spec:
  allowedRedirectURIs: ["http://webapp.example.com/callback"]
  allowedGrantTypes: [authorization_code]
  allowedScopes: [openid]`,
			wantErr: "spec.allowedRedirectURIs[0]",
		},
		{
			name: "OIDCClient ID token lifetime too short",
			file: "config.supervisor.pinniped.dev_oidcclients.yaml",
			object: `
metadata: {name: client.oauth.pinniped.dev-webapp, namespace: supervisor}
spec:
  allowedRedirectURIs: ["https://webapp.example.com/callback"]
  allowedGrantTypes: [authorization_code]
  allowedScopes: [openid]
  tokenLifetimes: {idTokenSeconds: 60}`,
			wantErr: "spec.tokenLifetimes.idTokenSeconds",
		},
		{
			name: "FederationDomain session lifetimes",
			file: "config.supervisor.pinniped.dev_federationdomains.yaml",
			object: `
metadata: {name: login, namespace: supervisor}
spec:
  issuer: "https://login.example.com"
  sessionLifetimes: {maxSessionSeconds: 604800, idleTimeoutSeconds: 3600}`,
		},
		{
			name: "FederationDomain session shorter than a minute",
			file: "config.supervisor.pinniped.dev_federationdomains.yaml",
			object: `
metadata: {name: login, namespace: supervisor}
spec:
  issuer: "https://login.example.com"
  sessionLifetimes: {maxSessionSeconds: 59}`,
			wantErr: "spec.sessionLifetimes.maxSessionSeconds: Invalid value: 59: spec.sessionLifetimes.maxSessionSeconds in body should be greater than or equal to 60",
		},
		{
			name: "FederationDomain session longer than a week",
			file: "config.supervisor.pinniped.dev_federationdomains.yaml",
			object: `
metadata: {name: login, namespace: supervisor}
spec:
  issuer: "https://login.example.com"
  sessionLifetimes: {maxSessionSeconds: 604801}`,
			wantErr: "spec.sessionLifetimes.maxSessionSeconds",
		},
		{
			name: "FederationDomain idle timeout over the default nine hours",
			file: "config.supervisor.pinniped.dev_federationdomains.yaml",
			object: `
metadata: {name: login, namespace: supervisor}
spec:
  issuer: "https://login.example.com"
  sessionLifetimes: {idleTimeoutSeconds: 32401}`,
			wantErr: "idleTimeoutSeconds must not exceed maxSessionSeconds (32400 when unset)",
		},
		{
			// Accepted: the OIDCClient CRD has no CEL rule, whose mere presence would change the API
			// server's messages about invalid clients from Pinniped's; its condition refuses it.
			name: "OIDCClient idle timeout over its maximum (refused by its condition, not the API)",
			file: "config.supervisor.pinniped.dev_oidcclients.yaml",
			object: `
metadata: {name: client.oauth.pinniped.dev-webapp, namespace: supervisor}
spec:
  allowedRedirectURIs: ["https://webapp.example.com/callback"]
  allowedGrantTypes: [authorization_code, refresh_token]
  allowedScopes: [openid, offline_access]
  sessionLifetimes: {maxSessionSeconds: 600, idleTimeoutSeconds: 900}`,
		},
		{
			name: "OIDCClient session lifetimes",
			file: "config.supervisor.pinniped.dev_oidcclients.yaml",
			object: `
metadata: {name: client.oauth.pinniped.dev-webapp, namespace: supervisor}
spec:
  allowedRedirectURIs: ["https://webapp.example.com/callback"]
  allowedGrantTypes: [authorization_code, refresh_token]
  allowedScopes: [openid, offline_access]
  sessionLifetimes: {maxSessionSeconds: 600, idleTimeoutSeconds: 300}`,
		},
		{
			name: "OIDCIdentityProvider duplicate authorize parameter",
			file: "idp.supervisor.pinniped.dev_oidcidentityproviders.yaml",
			object: `
metadata: {name: corp, namespace: supervisor}
spec:
  issuer: "https://accounts.example.com"
  client: {secretName: corp-client}
  authorizationConfig:
    additionalAuthorizeParameters: [{name: prompt, value: consent}, {name: prompt, value: login}]`,
			wantErr: "spec.authorizationConfig.additionalAuthorizeParameters[1]",
		},
		{
			name: "LDAPIdentityProvider without bind secret (the controller reports it)",
			file: "idp.supervisor.pinniped.dev_ldapidentityproviders.yaml",
			object: `
metadata: {name: ldap, namespace: supervisor}
spec: {host: "ldap.example.com:636"}`,
		},
		{
			name: "LDAPIdentityProvider empty user search base",
			file: "idp.supervisor.pinniped.dev_ldapidentityproviders.yaml",
			object: `
metadata: {name: ldap, namespace: supervisor}
spec: {host: "ldap.example.com:636", userSearch: {base: ""}}`,
			wantErr: "spec.userSearch.base: Invalid value: \"\": spec.userSearch.base in body should be at least 1 chars long",
		},
		{
			name: "ActiveDirectoryIdentityProvider valid with only host and bind",
			file: "idp.supervisor.pinniped.dev_activedirectoryidentityproviders.yaml",
			object: `
metadata: {name: ad, namespace: supervisor}
spec: {host: "dc.example.com", bind: {secretName: ad-bind}}`,
		},
		{
			name: "GitHubIdentityProvider defaults",
			file: "idp.supervisor.pinniped.dev_githubidentityproviders.yaml",
			object: `
metadata: {name: github, namespace: supervisor}
spec:
  allowAuthentication: {organizations: {allowed: [my-org]}}
  client: {secretName: github-client}`,
			wantDefaults: map[string]string{
				"spec.githubAPI.host":                           "github.com",
				"spec.claims.username":                          "login:id",
				"spec.claims.groups":                            "slug",
				"spec.allowAuthentication.organizations.policy": "OnlyUsersFromAllowedOrganizations",
				"status.phase":                                  "Pending",
			},
		},
		{
			name: "GitHubIdentityProvider all users",
			file: "idp.supervisor.pinniped.dev_githubidentityproviders.yaml",
			object: `
metadata: {name: github, namespace: supervisor}
spec:
  allowAuthentication: {organizations: {policy: AllGitHubUsers}}
  client: {secretName: github-client}`,
		},
		{
			name: "GitHubIdentityProvider no organizations with the default policy",
			file: "idp.supervisor.pinniped.dev_githubidentityproviders.yaml",
			object: `
metadata: {name: github, namespace: supervisor}
spec:
  allowAuthentication: {organizations: {}}
  client: {secretName: github-client}`,
			wantErr: "spec.allowAuthentication.organizations.policy must be 'AllGitHubUsers' when spec.allowAuthentication.organizations.allowed is empty",
		},
		{
			name: "GitHubIdentityProvider organizations with all users",
			file: "idp.supervisor.pinniped.dev_githubidentityproviders.yaml",
			object: `
metadata: {name: github, namespace: supervisor}
spec:
  allowAuthentication: {organizations: {policy: AllGitHubUsers, allowed: [my-org]}}
  client: {secretName: github-client}`,
			wantErr: "spec.allowAuthentication.organizations.policy must be 'OnlyUsersFromAllowedOrganizations' when spec.allowAuthentication.organizations.allowed has organizations listed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			crd, internal := readCRD(t, filepath.Join(crdDir, tt.file))
			// With a single version, the internal form keeps the schema at the top level.
			if internal.Spec.Validation == nil {
				t.Fatalf("%s has no schema", tt.file)
			}
			schema := internal.Spec.Validation.OpenAPIV3Schema
			structural, err := structuralschema.NewStructural(schema)
			if err != nil {
				t.Fatalf("building the structural schema: %v", err)
			}
			validator, _, err := apiservervalidation.NewSchemaValidator(schema)
			if err != nil {
				t.Fatalf("building the schema validator: %v", err)
			}

			// Decoded as the API server decodes: integers are int64, as CEL's int rules need.
			data, err := yaml.YAMLToJSON([]byte(tt.object))
			if err != nil {
				t.Fatalf("decoding the test object: %v", err)
			}
			object := map[string]interface{}{}
			if err := utiljson.Unmarshal(data, &object); err != nil {
				t.Fatalf("decoding the test object: %v", err)
			}
			object["apiVersion"] = crd.Spec.Group + "/" + crd.Spec.Versions[0].Name
			object["kind"] = crd.Spec.Names.Kind
			// The API server defaults the status too when it is absent from a created object.
			if _, ok := object["status"]; !ok {
				object["status"] = map[string]interface{}{}
			}

			structuraldefaulting.Default(object, structural)
			errs := apiservervalidation.ValidateCustomResource(nil, object, validator)
			errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, structural, object)...)
			celErrs, _ := cel.NewValidator(structural, true, celconfig.PerCallLimit).
				Validate(context.Background(), nil, structural, object, nil, celconfig.RuntimeCELCostBudget)
			errs = append(errs, celErrs...)

			switch {
			case tt.wantErr == "" && len(errs) > 0:
				t.Fatalf("want the object accepted, got: %v", errs.ToAggregate())
			case tt.wantErr != "" && len(errs) == 0:
				t.Fatalf("want an error containing %q, got none", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(errs.ToAggregate().Error(), tt.wantErr):
				t.Fatalf("want an error containing %q, got: %v", tt.wantErr, errs.ToAggregate())
			}
			for path, want := range tt.wantDefaults {
				got, _, err := unstructured.NestedString(object, strings.Split(path, ".")...)
				if err != nil || got != want {
					t.Errorf("%s after defaulting: got %q (err %v), want %q", path, got, err, want)
				}
			}
		})
	}
}

// TestJWTAuthenticatorCELFieldsKept proves the API server keeps every CEL field of a
// JWTAuthenticator written for Pinniped v0.40 and later: a pruned rule would silently let in
// the users it was written to keep out.
func TestJWTAuthenticatorCELFieldsKept(t *testing.T) {
	t.Parallel()
	spec := `
claims:
  username: ""
  usernameExpression: '"oidc:" + claims.sub'
  groupsExpression: claims.roles
  extra: [{key: example.com/tenant, valueExpression: claims.tenant}]
claimValidationRules:
- {claim: hd, requiredValue: example.com}
- {expression: claims.email_verified == true, message: email must be verified}
userValidationRules:
- {expression: '!user.username.startsWith("system:")', message: no system users}`
	want := map[string]interface{}{}
	if err := yaml.Unmarshal([]byte(spec), &want); err != nil {
		t.Fatal(err)
	}
	_, internal := readCRD(t, filepath.Join(crdDir, "authentication.concierge.pinniped.dev_jwtauthenticators.yaml"))
	structural, err := structuralschema.NewStructural(internal.Spec.Validation.OpenAPIV3Schema)
	if err != nil {
		t.Fatalf("building the structural schema: %v", err)
	}
	object := map[string]interface{}{"spec": runtime.DeepCopyJSONValue(want)}
	structuralpruning.Prune(object, structural, true)
	if got := object["spec"]; !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("after pruning, spec = %v; want it unchanged: %v", got, want)
	}
}
